"""Figures for the embeddings-and-positions lesson (pure: arrays and token strings in)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import (CATEGORICAL, DIVERGING, SMALL_LEGEND, fixed_margins, layout, readable,
                             safe_label, token_labels)


def vectors_heatmap(vectors: np.ndarray, tokens: Sequence[str], *, title: str) -> go.Figure:
    """One row per token, one column per dimension (blue negative, red positive)."""
    vectors = np.asarray(vectors)
    return heatmap(vectors, title=title, y_labels=token_labels(tokens, escape=True),
                   x_labels=[str(j) for j in range(vectors.shape[1])],
                   x_title="dimension", y_title="token", diverging=True, text=False,
                   height=max(300, min(1100, 90 + 16 * vectors.shape[0])))


def pe_heatmap(table: np.ndarray, *, title: str) -> go.Figure:
    """The sine table: positions k down, dimensions j across, values between -1 and 1."""
    table = np.asarray(table)
    n, d = table.shape
    return heatmap(table, title=title, x_labels=[str(j) for j in range(d)],
                   y_labels=[str(k) for k in range(n)], x_title="dimension j",
                   y_title="position k", diverging=True, zmin=-1.0, zmax=1.0, text=False,
                   height=max(300, min(600, 60 + 12 * n)))


def similarity_chart(curves: Mapping[str, np.ndarray], *,
                     title: str = "How alike are two position vectors, by distance?") -> alt.Chart:
    """Cosine similarity against distance, one line per table ({name: values by distance})."""
    df = pd.concat([pd.DataFrame({"distance": np.arange(len(v)), "cosine similarity": v,
                                  "table": name}) for name, v in curves.items()])
    chart = alt.Chart(df).mark_line(point=True, strokeWidth=3).encode(
        x=alt.X("distance:Q", title="distance between positions |k₁ − k₂|"),
        y=alt.Y("cosine similarity:Q", title="cosine similarity"),
        color=alt.Color("table:N", title="positions",
                        scale=alt.Scale(range=CATEGORICAL[: max(len(curves), 1)])),
        strokeDash=alt.StrokeDash("table:N", title="positions"),  # overlapping lines stay visible
        tooltip=["table", "distance", alt.Tooltip("cosine similarity:Q", format=".4f")],
    )
    return readable(chart.properties(title=title, height=320), **SMALL_LEGEND)


def rope_chart(rows, *, title: str = "RoPE: q·k depends only on the distance") -> alt.Chart:
    """Score against the query's position, one line per distance (flat lines = the point)."""
    df = pd.DataFrame(rows)
    chart = alt.Chart(df).mark_line(point=True, strokeWidth=3).encode(
        x=alt.X("query position:Q", title="position of the query token m"),
        y=alt.Y("q·k after rotation:Q", title="q·k after rotation"),
        color=alt.Color("distance:N", title="distance m − n",
                        scale=alt.Scale(range=CATEGORICAL)),
        tooltip=["query position", "key position", "distance",
                 alt.Tooltip("q·k after rotation:Q", format=".4f")],
    )
    return readable(chart.properties(title=title, height=300), **SMALL_LEGEND)


def alibi_figure(bias: np.ndarray, slopes: np.ndarray, tokens: Sequence[str] | None = None, *,
                 title: str = "ALiBi: the penalty −m·|i − j| added to each head's scores"
                 ) -> go.Figure:
    """One (query x key) heatmap of the bias per head, side by side."""
    bias = np.asarray(bias)
    H, n, _ = bias.shape
    labels = token_labels(tokens, escape=True) if tokens is not None else [str(i) for i in range(n)]
    fig = make_subplots(rows=1, cols=H, horizontal_spacing=0.04,
                        subplot_titles=[f"head {h}: m = {slopes[h]:.4g}" for h in range(H)])
    low = float(bias.min()) if bias.size else -1.0
    for h in range(H):
        fig.add_trace(go.Heatmap(
            z=bias[h], x=labels, y=labels, colorscale=DIVERGING, zmin=low, zmax=-low,
            showscale=h == H - 1, colorbar={"thickness": 14},
            hovertemplate="query %{y}<br>key %{x}<br>bias %{z:.4f}<extra></extra>"), 1, h + 1)
        fig.update_yaxes(autorange="reversed", showticklabels=h == 0, row=1, col=h + 1)
        fig.update_xaxes(title_text="key", showticklabels=False, row=1, col=h + 1)
    fig.update_yaxes(title_text="query", row=1, col=1)
    layout(fig, title, 380)
    return fixed_margins(fig, top=80)


def permutation_figures(original: np.ndarray, permuted: np.ndarray, order: np.ndarray,
                        tokens: Sequence[str], *, dims: int = 12
                        ) -> tuple[go.Figure, go.Figure]:
    """Left: the outputs of the sentence as typed, rows put in the new order.
    Right: the outputs of the reordered sentence. Equal pictures = order-blind.

    Row r is labelled with its token and where that token stood originally: "cat (was 1)".
    """
    order = np.asarray(order)
    rows = [f"{safe_label(tokens[i])} (was {i})" for i in order]
    a = np.asarray(original)[order][:, :dims]  # (T, dims) rows in the new order
    b = np.asarray(permuted)[:, :dims]  # (T, dims)
    bound = float(max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0))) or 1.0
    common = dict(x_labels=[str(j) for j in range(a.shape[1])], y_labels=rows,
                  x_title="output dimension", y_title="token", diverging=True,
                  zmin=-bound, zmax=bound, text=False)
    left = heatmap(a, title="run, then reorder", **common)
    right = heatmap(b, title="reorder, then run", **common)
    return left, right
