"""Heatmaps for attention maps and matrices, with token labels and exact values on hover."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from tfviz.viz.style import (DIVERGING, PLAIN_TEMPLATE, SEQUENTIAL, fixed_margins, label_margin,
                             layout, token_labels)


def heatmap(values: np.ndarray, *, title: str, x_labels: Sequence[str] | None = None,
            y_labels: Sequence[str] | None = None, x_title: str = "", y_title: str = "",
            diverging: bool = False, zmin: float | None = None, zmax: float | None = None,
            text: bool | None = None, height: int | None = None) -> go.Figure:
    """A labelled heatmap. Rows are drawn top to bottom in order, like a matrix on paper.

    -inf entries (masked attention scores) are shown as blank cells with "masked" on hover.
    Labels must already be safe for plotly's label markup: build them with
    ``token_labels(..., escape=True)`` or ``safe_label`` when they contain text a learner typed.
    """
    values = np.asarray(values, dtype=float)
    n_rows, n_cols = values.shape
    x_labels = list(x_labels) if x_labels is not None else [str(i) for i in range(n_cols)]
    y_labels = list(y_labels) if y_labels is not None else [str(i) for i in range(n_rows)]
    finite = np.where(np.isfinite(values), values, np.nan)
    shown = np.where(np.isneginf(values), "masked (−∞)", np.char.mod("%.4f", np.nan_to_num(values)))
    custom = np.dstack([np.broadcast_to(np.array(y_labels, dtype=object)[:, None], values.shape),
                        np.broadcast_to(np.array(x_labels, dtype=object)[None, :], values.shape),
                        shown])
    if diverging and zmin is None and zmax is None and np.isfinite(finite).any():
        bound = float(np.nanmax(np.abs(finite))) or 1.0
        zmin, zmax = -bound, bound
    if text is None:
        text = n_rows * n_cols <= 144
    fig = go.Figure(go.Heatmap(
        z=finite, x=list(range(n_cols)), y=list(range(n_rows)), customdata=custom,
        colorscale=DIVERGING if diverging else SEQUENTIAL, zmin=zmin, zmax=zmax,
        hovertemplate=(f"{y_title or 'row'}: %{{customdata[0]}}<br>{x_title or 'column'}: "
                       "%{customdata[1]}<br>value: %{customdata[2]}<extra></extra>"),
        texttemplate="%{z:.2f}" if text else None, colorbar={"thickness": 14},
    ))
    layout(fig, title, height or max(260, min(700, 60 + 34 * n_rows)), template=PLAIN_TEMPLATE)
    xs, ys = _ticks(n_cols), _ticks(n_rows)
    fig.update_xaxes(title=x_title, tickvals=xs, ticktext=[x_labels[i] for i in xs], side="bottom")
    fig.update_yaxes(title=y_title, tickvals=ys, ticktext=[y_labels[i] for i in ys],
                     autorange="reversed")
    return fixed_margins(fig, top=50, left=label_margin(y_labels, title=bool(y_title)),
                         bottom=label_margin(x_labels, title=bool(x_title)))


MAX_TICKS = 40  # more labels than this overlap at projector size and cost the browser time


def _ticks(n: int) -> list[int]:
    """Which rows or columns get a tick label: all of them up to MAX_TICKS, else every k-th
    (hovering a cell still names its row and column).

    >>> _ticks(5)
    [0, 1, 2, 3, 4]
    >>> _ticks(64)[:4], len(_ticks(64))
    ([0, 2, 4, 6], 32)
    """
    return list(range(0, n, math.ceil(n / MAX_TICKS) if n > MAX_TICKS else 1))


def attention_heatmap(pattern: np.ndarray, tokens: Sequence[str], *, title: str,
                      key_tokens: Sequence[str] | None = None) -> go.Figure:
    """One head's (query x key) attention weights, rows summing to 1."""
    return heatmap(pattern, title=title, x_labels=token_labels(key_tokens or tokens, escape=True),
                   y_labels=token_labels(tokens, escape=True), x_title="key (attended to)",
                   y_title="query (attending)", zmin=0.0, zmax=1.0)
