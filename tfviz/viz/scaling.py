"""Charts for lesson 6 (why ÷√d_k): variance growth, softmax saturation, one example row."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.scaling import SaturationRow, VarianceRow
from tfviz.viz.kit.charts import chart, colour, q, n, tip, view
from tfviz.viz.kit.style import CATEGORICAL

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
