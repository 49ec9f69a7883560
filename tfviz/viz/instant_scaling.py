"""Instant chart for lesson 6, section 3: every layer's and head's maps with the scale on and
off, and the entropy of each row, switched in the browser (``tfviz.viz.kit.instant``).

Turning the scale off is a what-if (the page runs the model twice); choosing the layer and
head only selects what to look at, so both runs' maps for every layer and head travel once
and the sliders under the chart pick one. A long text's maps travel as pictures
(``instant_masking.map_rows``). Length-free (``tfviz.viz.kit.instant_length``): a new sentence of
another length within the layout's ``length_cap`` swaps the chart's data.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import packed, rounded
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap
from tfviz.viz.instant_masking import cells, map_pair, map_rows, view_filter, view_params
from tfviz.viz.kit.style import CATEGORICAL, token_labels




def mean_text(n_heads: int) -> str:
    """The title's second line: the chosen head's mean row entropy with and without the scale,
    read from ``means`` (the packed means of every layer and head, two each, in the data)."""
    on, off = (f"toNumber(split(means, ',')[2 * (layer * {n_heads} + head) + {k}])" for k in (0, 1))
    return (f"'Mean entropy over the rows: ' + format({on}, '.3f') + ' bits with the scale, ' + "
            f"format({off}, '.3f') + ' bits without (' + format({off} - {on}, '+.3f') + ')'")


def scale_on_off(on: np.ndarray, off: np.ndarray, entropy_on: np.ndarray,
                 entropy_off: np.ndarray, tokens: Sequence[str], *, layer: int = 0,
                 head: int = 0, scale: str = "÷√d_k") -> dict:
    """The chosen layer and head's map with and without ÷√d_k, then each query row's entropy.

    ``on`` and ``off`` are the patterns (layers, heads, n, n) of the two runs; ``entropy_on``
    and ``entropy_off`` their rows' entropies in bits (layers, heads, n). The title
    gives both mean entropies of the chosen head on its second line. ``scale`` names the
    model's scale in the legends: a Granite multiplies its scores by its attention_multiplier
    ("× 0.125") instead of dividing them by √d_k.
    """
    off_name, on_name = f"without {scale}", f"with {scale}"
    n_layers, n_heads, n, _ = on.shape
    if off.shape != on.shape or entropy_on.shape != on.shape[:3] or entropy_off.shape != on.shape[:3]:
        raise ValueError("the two runs and their entropies must cover the same layers, heads, tokens")
    cap = length_cap(n)
    maps = map_pair(("on", "off"), (on_name, off_name), cap, free=True,
                    title={"text": {"expr": "'Layer ' + layer + ', head ' + head + "
                                            "': the same text, scale on and off'"}})
    rows = [{"layer": lyr, "head": h, "q": q, "scores": name, "v": value}
            for name, ent in ((on_name, entropy_on), (off_name, entropy_off))
            for lyr, h in np.ndindex(*ent.shape[:2])
            for q, value in enumerate(rounded(ent[lyr, h]))]
    lines = {
        "data": {"name": "entropy"},
        "transform": [view_filter("layer", "head"), {"calculate": "tokens[datum.q]", "as": "query"}],
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "q", "type": "ordinal", "title": "query token",
                  "axis": {"labelExpr": "tokens[datum.value]", "labelLimit": 160},
                  "scale": {"domain": TOKENS_DOMAIN}},
            # up to log2(n) bits, the entropy of a row that spreads evenly over n keys
            "y": {"field": "v", "type": "quantitative", "title": "entropy of the row (bits)",
                  "scale": {"domain": {"expr": "[0, max(log(max(ntok, 2)) / LN2, 1)]"}}},
            "color": {"field": "scores", "type": "nominal", "title": "scores",
                      "scale": {"domain": [off_name, on_name], "range": [CATEGORICAL[5], CATEGORICAL[0]]},
                      "legend": {"orient": "top"}},
            "tooltip": [{"field": "query", "title": "query"}, {"field": "scores"},
                        {"field": "v", "title": "entropy (bits)", "format": ".3f"}],
        },
        "width": max(320, min(640, 40 * cap)), "height": 300,
        "title": {"text": {"expr": "['How spread out each row is: high = looks broadly, "
                                   f"0 = one key', {mean_text(n_heads)}]"}},  # two lines
    }
    means = [[float(entropy_on[lyr, h].mean()), float(entropy_off[lyr, h].mean())]
             for lyr in range(n_layers) for h in range(n_heads)]
    body = {"vconcat": [maps, lines], "spacing": 30, "resolve": {"scale": {"color": "independent"}}}
    params = view_params(n_layers, n_heads, layer, head)
    return chart(body, params=params, tokens=token_labels(tokens), free=True,
                 datasets={"on": map_rows(on, "layer", "head"), "off": map_rows(off, "layer", "head"),
                          "entropy": rows},
                 sentence={"means": packed(means)}, marks=cells(cap, 2) + 4 * cap,
                 description="Attention of one head with and without the scale, and each row's entropy.",
                 own_size=True)
