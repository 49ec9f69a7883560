"""Charts for the attention lessons that are not views of one trace: the coreference heads
(lesson 7) and the no-peeking experiment (lesson 8). Plain Vega-Lite dicts written with
``tfviz.viz.kit.charts``; token labels ("3 cat") are drawn as typed."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, n, o, q, tip, view
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels

MASKED_GREY = "#d9d9d9"  # a masked (−∞) cell, on every page that draws one


def coref_figure(weights: np.ndarray, nouns: Sequence[str], *, best: tuple[int, int],
                 probe: str) -> dict:
    """Grouped bars: for each (layer, head) the probe's weight on each noun; (L, H, 2).
    "biggest gap" marks the head whose weights differ most."""
    weights = np.asarray(weights, dtype=float)
    layers, heads, _ = weights.shape
    nouns = [str(x) for x in nouns]
    heads_shown = [f"L{layer} H{head}" for layer in range(layers) for head in range(heads)]
    rows = [{"head": f"L{layer} H{head}", "noun": noun, "weight": float(weights[layer, head, p])}
            for layer in range(layers) for head in range(heads) for p, noun in enumerate(nouns)]
    top = max(0.05, float(weights.max(initial=0.0)) * 1.3)  # room for the note over the bars
    x = n("head", "layer and head", sort=heads_shown, axis={"labelAngle": 0})
    bars = view("bar", x=x, xOffset=n("noun", sort=nouns),
                y=q("weight", "attention weight", scale={"domain": [0, top], "nice": False}),
                color=colour("noun", nouns, [CATEGORICAL[p % len(CATEGORICAL)] for p in range(len(nouns))],
                             title="attends to", sort=nouns),
                tooltip=tip("head", "noun", "weight:.4f"))
    mark = {"head": f"L{best[0]} H{best[1]}", "weight": float(weights[best].max()), "text": "biggest gap ↓"}
    note = view({"type": "text", "dy": -4, "fontSize": FONT_SIZE - 2, "baseline": "bottom"},
                data="best", x=n("head", sort=heads_shown), y=q("weight"), text=n("text"))
    return chart({"layer": [bars, note]}, title=f"How much {probe} attends to each noun, head by head",
                 rows=rows, datasets={"best": [mark]}, height=340,
                 description=f"For every layer and head, the attention weight {probe} puts on each "
                             f"noun ({', '.join(nouns)}); the head with the biggest gap, "
                             f"{mark['head']}, is marked.")


def logit_change_figure(change: np.ndarray, tokens: Sequence[str], position: int) -> dict:
    """Bars: the largest logit change at each position after replacing the token at ``position``;
    earlier positions are green and labelled with their change (0 when nothing leaked)."""
    change = np.asarray(change, dtype=float)
    labels = token_labels(tokens)
    where = ["earlier", "edited", "later"]
    rows = [{"position": i, "token": labels[i], "change": float(v),
             "where": where[0] if i < position else where[1] if i == position else where[2],
             "label": ("0" if v == 0 else f"{v:.2g}") if i < position else ""}
            for i, v in enumerate(change)]
    upright = len(labels) <= 16  # side by side while they fit, else turned
    x = o("position", "position",
          axis={"labelExpr": "tokens[datum.value]", "labelAngle": 0 if upright else -45},
          scale={"domain": list(range(len(labels)))})
    bars = view("bar", x=x, y=q("change", "largest change of a logit"),
                color=colour("where", where, [CATEGORICAL[2], CATEGORICAL[5], CATEGORICAL[0]],
                             legend=None),
                tooltip=tip("token", {"field": "change", "title": "max |Δ logit|", "format": ".3g"}))
    text = view({"type": "text", "dy": -8, "baseline": "bottom", "fontSize": FONT_SIZE - 2,
                 "color": CATEGORICAL[2]}, x=o("position"), y=q("change"), text=n("label"))
    return chart({"layer": [bars, text]},
                 # two lines: on one, the title runs past a projector's screen in presenter view
                 title=[f"Logit change at every position after editing position {position}",
                        "(green: earlier positions, labelled with their change)"],
                 rows=rows, height=360, params=[{"name": "tokens", "value": labels}],
                 description=f"The largest change of any logit at each of {len(labels)} positions "
                             f"after the token at position {position} was replaced; earlier "
                             "positions are green and labelled with their change.")

