"""Charts for lesson 6 (why ÷√d_k): variance growth, softmax saturation, entropy per row."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import altair as alt
import numpy as np

from tfviz.analysis.scaling import SaturationRow, VarianceRow
from tfviz.viz.style import CATEGORICAL, readable, token_labels

WITHOUT, WITH = "without ÷√d_k", "with ÷√d_k"
_COLOURS = alt.Scale(domain=[WITHOUT, WITH], range=[CATEGORICAL[5], CATEGORICAL[0]])


def variance_frame(rows: Sequence[VarianceRow]) -> pd.DataFrame:
    """Long table: d_k, which (with / without), measured variance, theory."""
    data = [{"d_k": r.d_k, "scores": WITHOUT, "variance": r.var_raw, "theory": r.theory_raw}
            for r in rows]
    data += [{"d_k": r.d_k, "scores": WITH, "variance": r.var_scaled, "theory": r.theory_scaled}
             for r in rows]
    return pd.DataFrame(data)


def variance_chart(rows: Sequence[VarianceRow]) -> alt.Chart:
    """Measured Var(q·k) against d_k (points) and the theory d_k or 1 (dashed), log–log."""
    df = variance_frame(rows)
    base = alt.Chart(df).encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (size of q and k)"),
        color=alt.Color("scores:N", scale=_COLOURS, title="scores"),
        tooltip=["d_k", "scores", alt.Tooltip("variance:Q", format=".3f"), "theory"],
    )
    points = base.mark_point(size=90, filled=True).encode(
        y=alt.Y("variance:Q", scale=alt.Scale(type="log"), title="variance of the score"))
    theory = base.mark_line(strokeDash=[6, 4]).encode(y="theory:Q")
    chart = (theory + points).properties(
        title="Variance of q·k grows like d_k; ÷√d_k keeps it at 1", height=340)
    return readable(chart)


def saturation_frame(rows: Sequence[SaturationRow]) -> pd.DataFrame:
    return pd.DataFrame([{"d_k": r.d_k, "scores": WITH if r.scaled else WITHOUT,
                          "largest weight": r.max_weight, "entropy (bits)": r.entropy,
                          "largest gradient": r.max_grad} for r in rows])


def saturation_chart(rows: Sequence[SaturationRow]) -> alt.Chart:
    """Three panels against d_k: largest softmax weight, entropy, largest Jacobian entry."""
    df = saturation_frame(rows)
    panels = []
    for measure in ("largest weight", "entropy (bits)", "largest gradient"):
        panels.append(alt.Chart(df).mark_line(point=True).encode(
            x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k"),
            y=alt.Y(f"{measure}:Q", title=measure),
            color=alt.Color("scores:N", scale=_COLOURS, title="scores"),
            tooltip=["d_k", "scores", alt.Tooltip(f"{measure}:Q", format=".4f")],
        ).properties(width=220, height=240, title=measure))
    chart = alt.hconcat(*panels).properties(
        title="Without the scale, softmax turns one-hot and its gradient vanishes")
    return readable(chart)


def example_row_chart(raw: np.ndarray, p_without: np.ndarray, p_with: np.ndarray, d_k: int) -> alt.Chart:
    """One query's softmax weights over its keys, without and with the scale."""
    keys = [f"key {j}" for j in range(len(raw))]
    df = pd.DataFrame({"key": keys * 2, "weight": np.concatenate([p_without, p_with]),
                       "raw score": np.concatenate([raw, raw]),
                       "scores": [WITHOUT] * len(raw) + [WITH] * len(raw)})
    chart = alt.Chart(df).mark_bar().encode(
        x=alt.X("key:N", sort=keys, title="key"), xOffset="scores:N",
        y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="softmax weight"),
        color=alt.Color("scores:N", scale=_COLOURS, title="scores"),
        tooltip=["key", "scores", alt.Tooltip("weight:Q", format=".4f"),
                 alt.Tooltip("raw score:Q", format=".3f")],
    ).properties(title=f"One query, {len(raw)} random keys, d_k = {d_k}", height=300)
    return readable(chart)


def entropy_chart(entropy_with: np.ndarray, entropy_without: np.ndarray,
                  tokens: Sequence[str]) -> alt.Chart:
    """Entropy of each query row of the live model's map, scale on vs off."""
    labels = token_labels(tokens)  # altair shows text as typed: no escaping
    df = pd.DataFrame({"query": labels * 2, "position": list(range(len(labels))) * 2,
                       "entropy (bits)": np.concatenate([entropy_with, entropy_without]),
                       "scores": [WITH] * len(labels) + [WITHOUT] * len(labels)})
    chart = alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("query:N", sort=labels, title="query token"),
        y=alt.Y("entropy (bits):Q", title="entropy of the row (bits)"),
        color=alt.Color("scores:N", scale=_COLOURS, title="scores"),
        tooltip=["query", "scores", alt.Tooltip("entropy (bits):Q", format=".3f")],
    ).properties(title="How spread out each row is: high = looks broadly, 0 = one key", height=320)
    return readable(chart)

