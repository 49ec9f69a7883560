"""Figures for lesson 9: per-token LayerNorm statistics, learned γ and β, residual stream size."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import altair as alt
import numpy as np
import plotly.graph_objects as go

from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import CATEGORICAL, readable, token_labels


def token_stats_chart(tokens: Sequence[str], mean_before: np.ndarray, std_before: np.ndarray,
                      mean_after: np.ndarray, std_after: np.ndarray, *, title: str) -> alt.Chart:
    """Lines of μ and σ per token, before the norm and after normalising (before γ, β)."""
    labels = token_labels(tokens)
    series = {"μ before": mean_before, "σ before": std_before,
              "μ after": mean_after, "σ after": std_after}
    df = pd.DataFrame([{"token": lab, "statistic": name, "value": float(v[i])}
                       for name, v in series.items() for i, lab in enumerate(labels)])
    chart = alt.Chart(df, title=title).mark_line(point=True).encode(
        x=alt.X("token:N", sort=labels, title="token"),
        y=alt.Y("value:Q", title="value"),
        color=alt.Color("statistic:N", sort=list(series),
                        scale=alt.Scale(domain=list(series), range=CATEGORICAL[:4])),
        strokeDash=alt.StrokeDash("statistic:N", sort=list(series)),
        tooltip=["token", "statistic", alt.Tooltip("value:Q", format=".4f")],
    ).properties(height=320)
    return readable(chart)


def gamma_beta_heatmap(params: Mapping[str, tuple[np.ndarray, np.ndarray]], *, which: str) -> go.Figure:
    """Rows = the model's norms ("L0 ln1", ...), columns = dimensions; which is "gamma" or "beta"."""
    index = 0 if which == "gamma" else 1
    names = list(params)
    values = np.stack([params[n][index] for n in names])  # (norms, d)
    symbol = "γ (gain)" if index == 0 else "β (shift)"
    return heatmap(values, title=f"Learned {symbol} of every LayerNorm", y_labels=names,
                   x_labels=[str(i) for i in range(values.shape[1])], x_title="dimension",
                   y_title="norm", diverging=index == 1, text=False)


def residual_norm_chart(series: Mapping[str, Sequence[tuple[str, float]]], *, title: str) -> alt.Chart:
    """Mean L2 norm per token of the residual stream, stage by stage, one line per model."""
    rows = [{"stage": stage, "model": name, "mean L2 norm": value}
            for name, points in series.items() for stage, value in points]
    stages = list(dict.fromkeys(r["stage"] for r in rows))
    names = list(series)
    chart = alt.Chart(pd.DataFrame(rows), title=title).mark_line(point=True).encode(
        x=alt.X("stage:N", sort=stages, title="point in the stack"),
        y=alt.Y("mean L2 norm:Q", title="mean ‖x‖ over tokens"),
        color=alt.Color("model:N", sort=names, legend=alt.Legend(orient="bottom", direction="vertical"),
                        scale=alt.Scale(domain=names, range=CATEGORICAL[:len(names)])),
        tooltip=["model", "stage", alt.Tooltip("mean L2 norm:Q", format=".3f")],
    ).properties(height=320)
    return readable(chart)

