"""Figures for "attention as soft lookup": the key plane, hard vs soft weights, the τ sweep."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import altair as alt
import numpy as np
import plotly.graph_objects as go

from tfviz.viz.style import CATEGORICAL, SMALL_LEGEND, fixed_margins, layout, readable, safe_label

HARD = "hard lookup (best key only)"
SOFT = "attention (softmax blend)"


def key_plane(names: Sequence[str], keys: np.ndarray, query: np.ndarray, weights: np.ndarray, *,
              title: str = "Keys and your query") -> go.Figure:
    """Keys as dots (bigger = more attention weight), the query as an arrow from the origin."""
    keys = np.asarray(keys, dtype=float)
    weights = np.asarray(weights, dtype=float)
    fig = go.Figure(go.Scatter(
        x=keys[:, 0], y=keys[:, 1], mode="markers+text", text=[safe_label(n) for n in names],
        textposition="top center", name="keys",
        marker={"size": 12 + 40 * weights, "color": CATEGORICAL[0], "line": {"width": 1}},
        customdata=weights, hovertemplate="%{text}: key (%{x:.2f}, %{y:.2f})<br>"
                                          "weight %{customdata:.3f}<extra></extra>"))
    fig.add_annotation(x=float(query[0]), y=float(query[1]), ax=0, ay=0, xref="x", yref="y",
                       axref="x", ayref="y", showarrow=True, arrowhead=3, arrowwidth=3,
                       arrowcolor=CATEGORICAL[5], text="")
    fig.add_trace(go.Scatter(
        x=[float(query[0])], y=[float(query[1])], mode="markers+text", text=["query q"],
        textposition="bottom center", textfont={"color": CATEGORICAL[5]}, name="query",
        marker={"size": 10, "color": CATEGORICAL[5], "symbol": "diamond"},
        hovertemplate="query (%{x:.2f}, %{y:.2f})<extra></extra>"))
    reach = float(max(np.abs(keys).max(), np.abs(query).max(), 1.0)) * 1.3
    fig.update_xaxes(range=[-reach, reach], title="key dimension 1", zeroline=True)
    fig.update_yaxes(range=[-reach, reach], title="key dimension 2", zeroline=True,
                     scaleanchor="x", scaleratio=1)
    layout(fig, title, 420, showlegend=False)
    return fixed_margins(fig, top=50)


def weights_chart(names: Sequence[str], soft: np.ndarray, hard: np.ndarray, *,
                  title: str = "Weight on each value") -> alt.Chart:
    """Grouped bars: the hashtable's one-hot weights beside attention's softmax weights."""
    df = pd.DataFrame({
        "entry": list(names) * 2,
        "lookup": [HARD] * len(names) + [SOFT] * len(names),
        "weight": np.concatenate([np.asarray(hard, float), np.asarray(soft, float)]),
    })
    chart = alt.Chart(df).mark_bar().encode(
        x=alt.X("entry:N", title="entry (key → value)", sort=list(names)),
        xOffset=alt.XOffset("lookup:N"),
        y=alt.Y("weight:Q", title="weight", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("lookup:N", title="", scale=alt.Scale(range=[CATEGORICAL[0],
                                                                      CATEGORICAL[1]])),
        tooltip=["entry", "lookup", alt.Tooltip("weight:Q", format=".4f")],
    )
    return readable(chart.properties(title=title, height=300), **SMALL_LEGEND)


def sweep_chart(rows, current: float | None = None, *,
                title: str = "Sharper softmax → closer to the hashtable") -> go.Figure:
    """Weight on the best key against temperature τ (log scale); a dashed line marks the
    current τ. rows from :func:`tfviz.analysis.lookup.temperature_sweep`."""
    t = [r["temperature"] for r in rows]
    w = [r["weight on best key"] for r in rows]
    gap = [r["distance from hard answer"] for r in rows]
    fig = go.Figure(go.Scatter(
        x=t, y=w, mode="lines+markers", line={"width": 3, "color": CATEGORICAL[0]},
        customdata=gap, name="weight on best key",
        hovertemplate="τ = %{x:.3g}<br>weight on best key %{y:.4f}<br>"
                      "distance from hard answer %{customdata:.4f}<extra></extra>"))
    if current is not None:
        fig.add_vline(x=current, line={"color": CATEGORICAL[5], "dash": "dash", "width": 2},
                      annotation_text=f"your τ = {current:g}")
    fig.update_xaxes(type="log", title="temperature τ (log scale)")
    fig.update_yaxes(range=[0, 1.05], title="weight on the best-matching key")
    layout(fig, title, 360, showlegend=False)
    return fixed_margins(fig, top=50)
