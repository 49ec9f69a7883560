"""Figures for the embeddings-and-positions lesson (pure: arrays and token strings in)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import altair as alt
import numpy as np
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


def rope_chart(rows, *, title: str = "RoPE: q·k depends only on the distance",
               model_point: Mapping | None = None) -> alt.Chart:
    """Score against the query's position, one line per distance (flat lines = the point).

    ``model_point`` ({"query position", "distance", "q·k after rotation"}): the score the model
    itself computed for the pair, drawn as a black diamond that should sit on its line.
    """
    df = pd.DataFrame(rows)
    chart = alt.Chart(df).mark_line(point=True, strokeWidth=3).encode(
        x=alt.X("query position:Q", title="position of the query token m"),
        y=alt.Y("q·k after rotation:Q", title="q·k after rotation"),
        color=alt.Color("distance:N", title="distance m − n",
                        scale=alt.Scale(range=CATEGORICAL)),
        tooltip=["query position", "key position", "distance",
                 alt.Tooltip("q·k after rotation:Q", format=".4f")],
    )
    if model_point is not None:
        point = alt.Chart(pd.DataFrame([{**model_point, "what": "the model's own score"}])).mark_point(
            shape="diamond", size=260, filled=True, color="black").encode(
            x="query position:Q", y="q·k after rotation:Q",
            tooltip=["what", "query position", "distance", alt.Tooltip("q·k after rotation:Q", format=".4f")])
        chart = chart + point
    return readable(chart.properties(title=title, height=300), **SMALL_LEGEND)


def position_cosine_heatmap(cosine: np.ndarray, trained: int, *, title: str) -> go.Figure:
    """Cosine of every pair of learned position rows; a frame marks the rows training reached."""
    cosine = np.asarray(cosine)
    n = cosine.shape[0]
    labels = [str(k) for k in range(n)]
    fig = heatmap(cosine, title=title, x_labels=labels, y_labels=labels, x_title="position",
                  y_title="position", diverging=True, zmin=-1.0, zmax=1.0, text=False,
                  height=max(320, min(560, 80 + 11 * n)))
    edge = min(trained, n) - 0.5
    fig.add_shape(type="rect", x0=-0.5, y0=-0.5, x1=edge, y1=edge,
                  line={"color": "black", "width": 2})
    return fig


def rope_turn_figure(q: np.ndarray, q_turned: np.ndarray, k: np.ndarray, k_turned: np.ndarray,
                     query_pos: int, key_pos: int, *, pairs: Sequence[int] = (0, 1, 2, 3),
                     title: str = "Each pair of q and k, before (dotted) and after (solid) the turn"
                     ) -> go.Figure:
    """One small plane per pair of dimensions (x[2i], x[2i+1]): q and k as arrows from the
    origin, before and after RoPE turned them by position · θ_i."""
    fig = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.05,
                        subplot_titles=[f"pair {i}" for i in pairs])
    colours = {"q": CATEGORICAL[0], "k": CATEGORICAL[1]}
    vectors = {"q": (np.asarray(q), np.asarray(q_turned), query_pos),
               "k": (np.asarray(k), np.asarray(k_turned), key_pos)}
    for c, i in enumerate(pairs, start=1):
        bound = max(float(np.hypot(v[2 * i], v[2 * i + 1])) for pair in vectors.values()
                    for v in pair[:2]) * 1.15 or 1.0
        for name, (before, after, pos) in vectors.items():
            for vec, dash, when in ((before, "dot", "before"), (after, "solid", f"turned at position {pos}")):
                x, y = float(vec[2 * i]), float(vec[2 * i + 1])
                fig.add_trace(go.Scatter(
                    x=[0, x], y=[0, y], mode="lines+markers", showlegend=c == 1,
                    name=f"{name} {when.split(' at')[0]}", legendgroup=f"{name}{dash}",
                    line={"color": colours[name], "dash": dash, "width": 3},
                    marker={"size": [0, 9]},
                    hovertemplate=f"{name}, {when}<br>({x:.3f}, {y:.3f})<extra></extra>"), 1, c)
        fig.update_xaxes(range=[-bound, bound], zeroline=True, showticklabels=False, row=1, col=c)
        fig.update_yaxes(range=[-bound, bound], zeroline=True, showticklabels=False,
                         scaleanchor=f"x{'' if c == 1 else c}", row=1, col=c)
    layout(fig, title, 330)
    return fixed_margins(fig, top=80)


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
