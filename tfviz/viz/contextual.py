"""Charts for lesson 5's contextual vectors and attention without projections
(``tfviz.analysis.contextual``).

``cosine_by_stage``: the cosine of one word's two vectors at each stage of the residual stream,
a line from the token embedding (always 1: one row of the table) to the last block.
``plain_against_heads``: the map of attention with no projections beside one head of the
model's first layer, the head chosen under the chart in the browser (``tfviz.viz.kit.instant``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.contextual import SameWord
from tfviz.viz.kit.charts import chart, dashed_rule, o, q, tip, view
from tfviz.viz.kit.instant import slider
from tfviz.viz.kit.maps import cells, map_pair, map_rows
from tfviz.viz.kit.style import CATEGORICAL, token_labels

NO_PROJECTIONS = "no projections: xᵢ·xⱼ"


def cosine_by_stage(same: SameWord, text_a: str = "text 1", text_b: str = "text 2") -> dict:
    """One point per stage: cos of the word's vector in ``text_a`` and in ``text_b``."""
    stages = [s.name for s in same.stages]
    rows = [{"stage": s.name, "cos": round(s.cos, 4), "same": "equal to the bit" if s.same else "differ",
             "near 1": ", ".join(t for t, _ in s.neighbours_a[:1]),
             "near 2": ", ".join(t for t, _ in s.neighbours_b[:1])} for s in same.stages]
    low = min(0.0, min(s.cos for s in same.stages))
    line = view({"type": "line", "point": {"size": 80}, "color": CATEGORICAL[0]},
                x=o("stage", "stage of the residual stream", sort=stages,
                       axis={"labelAngle": 0, "labelLimit": 140}),
                y=q("cos", f"cosine of the two '{same.word}' vectors", scale={"domain": [low, 1.0]}),
                tooltip=tip("stage", "cos:.4f", "same",
                            {"field": "near 1", "title": f"nearest in {text_a}"},
                            {"field": "near 2", "title": f"nearest in {text_b}"}))
    one = dashed_rule("one", y=q("y"))
    return chart({"layer": [line, one]}, title=f"'{same.word}' in {text_a} and in {text_b}, stage by stage",
                 description=f"The cosine between the two vectors of the token '{same.word}', at each "
                             "stage of the residual stream; 1 means the same direction.",
                 rows=rows, datasets={"one": [{"y": 1.0}]},
                 height=340)  # the whole chart, title and axes included (Streamlit fits its width)


def plain_against_heads(plain: np.ndarray, patterns: np.ndarray, tokens: Sequence[str], *,
                        head: int = 0) -> dict:
    """``plain`` (n, n): attention with no projections; ``patterns`` (heads, n, n): the model's
    first layer. Side by side (or stacked for a long text), the head picked by a slider."""
    n_heads, n, _ = patterns.shape
    if plain.shape != (n, n):
        raise ValueError("the plain map and the heads must cover the same tokens")
    maps = map_pair(("plain", "model"), (NO_PROJECTIONS, "layer 0, with W^Q, W^K, W^V"), n,
                    fields=("head",),
                    title={"text": {"expr": "'Without projections, and head ' + head + ' of layer 0'"}})
    copies = np.broadcast_to(plain, (n_heads, n, n))  # one per head: the slider filters both maps
    return chart(maps, params=[slider("head", n_heads - 1, "Head", head)], tokens=token_labels(tokens),
                 datasets={"plain": map_rows(copies, "head"), "model": map_rows(patterns, "head")},
                 marks=cells(n, 2),
                 description="Two attention maps of the same tokens: scores made from the vectors "
                            "themselves, and one head of the model's first layer.", own_size=True)
