"""Figures for lesson 10: neuron activations, active share per token, attention as averaging."""
from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import CATEGORICAL, readable, token_labels


def neuron_heatmap(acts: np.ndarray, tokens: Sequence[str], neurons: Sequence[int], *,
                   title: str) -> go.Figure:
    """Tokens (rows) × chosen neurons (columns) of the hidden activations ``acts`` (T, d_ff)."""
    cols = np.asarray(acts)[:, list(neurons)]  # (T, n)
    return heatmap(cols, title=title, x_labels=[f"n{j}" for j in neurons],
                   y_labels=token_labels(tokens, escape=True), x_title="neuron", y_title="token",
                   diverging=bool(cols.min(initial=0.0) < 0))


def active_chart(tokens: Sequence[str], fraction: np.ndarray, *, title: str) -> alt.Chart:
    """Bars: share of neurons above zero, per token."""
    labels = token_labels(tokens)
    df = pd.DataFrame({"token": labels, "share active": np.asarray(fraction, dtype=float)})
    chart = alt.Chart(df, title=title).mark_bar(color=CATEGORICAL[0]).encode(
        x=alt.X("token:N", sort=labels, title="token"),
        y=alt.Y("share active:Q", title="share of neurons > 0", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        tooltip=["token", alt.Tooltip("share active:Q", format=".1%")],
    ).properties(height=280)
    return readable(chart)


def mixing_chart(values: np.ndarray, weights: np.ndarray, z: np.ndarray, tokens: Sequence[str],
                 *, title: str) -> alt.Chart:
    """Per coordinate: every value vector as a tick (darker = more weight) and the mix z as a dot.

    The dot always sits between the outermost ticks that carry weight: a weighted average
    cannot leave that range.
    """
    labels = token_labels(tokens)
    rows = [{"coordinate": c, "value": float(values[j, c]), "key": labels[j],
             "weight": float(weights[j])}
            for j in range(values.shape[0]) if weights[j] > 0 for c in range(values.shape[1])]
    ticks = alt.Chart(pd.DataFrame(rows)).mark_tick(thickness=2, size=18).encode(
        x=alt.X("coordinate:O", title="coordinate of the head's vector"),
        y=alt.Y("value:Q", title="value"),
        color=alt.Color("weight:Q", title="weight",
                        scale=alt.Scale(scheme="greys", domain=[0, float(np.max(weights)) or 1.0])),
        tooltip=["key", "coordinate", alt.Tooltip("value:Q", format=".4f"),
                 alt.Tooltip("weight:Q", format=".4f")],
    )
    mix = pd.DataFrame({"coordinate": np.arange(len(z)), "value": np.asarray(z, dtype=float),
                        "key": "z (the mix)"})
    dots = alt.Chart(mix).mark_point(filled=True, size=120, color=CATEGORICAL[5]).encode(
        x="coordinate:O", y="value:Q",
        tooltip=["key", "coordinate", alt.Tooltip("value:Q", format=".4f")],
    )
    return readable((ticks + dots).properties(title=title, height=320))
