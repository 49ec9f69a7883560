"""The charts of lesson 6 (why ÷√d_k): variance growth, softmax saturation, one example row,
and every layer's and head's maps with the scale on and off, with the entropy of each row.

The last is an instant chart (``tfviz.viz.kit.instant``): turning the scale off is a what-if
(the page runs the model twice); choosing the layer and head only selects what to look at, so
both runs' maps for every layer and head travel once and the sliders under the chart pick one.
A long text's maps travel as pictures (``kit.maps.map_rows``). Length-free
(``tfviz.viz.kit.instant_length``): a new sentence of another length within the layout's
``length_cap`` swaps the chart's data.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.analysis.scaling import SaturationRow, VarianceRow
from tfviz.viz.kit.maps import cells, map_pair, map_rows, view_filter
from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.instant import layer_head, packed, rounded
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap
from tfviz.viz.kit.style import CATEGORICAL, token_labels


WITHOUT, WITH = "without ÷√d_k", "with ÷√d_k"
SCORES = colour("scores", [WITHOUT, WITH], [CATEGORICAL[5], CATEGORICAL[0]], title="scores")
LOG2 = {"type": "log", "base": 2}


def variance_rows(rows: Sequence[VarianceRow]) -> list[dict]:
    """One row per (d_k, with / without): measured variance of the score and the theory."""
    return ([{"d_k": r.d_k, "scores": WITHOUT, "variance": r.var_raw, "theory": r.theory_raw}
             for r in rows] +
            [{"d_k": r.d_k, "scores": WITH, "variance": r.var_scaled, "theory": r.theory_scaled}
             for r in rows])


def variance_chart(rows: Sequence[VarianceRow]) -> dict:
    """Measured Var(q·k) against d_k (points) and the theory d_k or 1 (dashed), log–log."""
    x = q("d_k", "d_k (size of q and k)", scale=LOG2)
    hover = tip("d_k", "scores", "variance:.3f", "theory")
    y_scale = {"type": "log"}
    theory = view({"type": "line", "strokeDash": [6, 4]}, x=x, color=SCORES, tooltip=hover,
                  y=q("theory", "variance of the score", scale=y_scale))
    points = view({"type": "point", "size": 90, "filled": True}, x=x, color=SCORES, tooltip=hover,
                  y=q("variance", "variance of the score", scale=y_scale))
    title = "Variance of q·k grows like d_k; ÷√d_k keeps it at 1"
    return chart({"layer": [theory, points]}, title=title, height=340, rows=variance_rows(rows),
                 description=f"{title}: measured variance (points) and theory (dashed) at d_k = "
                             + ", ".join(str(r.d_k) for r in rows) + ".")


MEASURES = ("largest weight", "entropy (bits)", "largest gradient")


def saturation_chart(rows: Sequence[SaturationRow]) -> dict:
    """Three panels against d_k: largest softmax weight, entropy, largest Jacobian entry."""
    data = [{"d_k": r.d_k, "scores": WITH if r.scaled else WITHOUT, "largest weight": r.max_weight,
             "entropy (bits)": r.entropy, "largest gradient": r.max_grad} for r in rows]
    panels = [{**view({"type": "line", "point": True}, x=q("d_k", "d_k", scale=LOG2),
                      y=q(measure, measure), color=SCORES,
                      tooltip=tip("d_k", "scores", f"{measure}:.4f")),
               "width": 180, "height": 240, "title": measure} for measure in MEASURES]
    title = "Without the scale, softmax turns one-hot and its gradient vanishes"
    # Three panels and their legend fit the 820 px a page has beside the sidebar at 1280 × 800:
    # the legend sits above them, where at their right it ran past the screen's edge
    return chart({"hconcat": panels}, title=title, rows=data, config={"legend": {"orient": "top"}},
                 description=f"{title}: the largest softmax weight, the entropy and the largest "
                             "gradient entry against d_k, with and without the scale.")


def example_row_chart(raw: np.ndarray, p_without: np.ndarray, p_with: np.ndarray, d_k: int) -> dict:
    """One query's softmax weights over its keys, without and with the scale."""
    keys = [f"key {j}" for j in range(len(raw))]
    data = [{"key": k, "scores": name, "weight": float(p), "raw score": float(s)}
            for name, ps in ((WITHOUT, p_without), (WITH, p_with))
            for k, p, s in zip(keys, ps, raw)]
    title = f"One query, {len(raw)} random keys, d_k = {d_k}"
    return chart(view("bar", x=n("key", "key", sort=keys), xOffset=n("scores"),
                      y=q("weight", "softmax weight", scale={"domain": [0, 1]}), color=SCORES,
                      tooltip=tip("key", "scores", "weight:.4f", "raw score:.3f")),
                 title=title, height=300, rows=data,
                 description=f"{title}: each key's softmax weight without and with ÷√d_k.")


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
    params = layer_head(n_layers, n_heads, layer, head)
    return chart(body, params=params, tokens=token_labels(tokens), free=True,
                 datasets={"on": map_rows(on, "layer", "head"), "off": map_rows(off, "layer", "head"),
                          "entropy": rows},
                 sentence={"means": packed(means)}, marks=cells(cap, 2) + 4 * cap,
                 description="Attention of one head with and without the scale, and each row's entropy.",
                 own_size=True)
