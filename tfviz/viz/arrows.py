"""The "flying arrows" picture: lines from one query token to every key, thick where it looks.

Tokens stand in two columns, queries on the left and keys on the right. From the chosen query
a line runs to each key; its width is proportional to the attention weight (a weight of 1
would be MAX_WIDTH pixels), it is darker for the keys this query prefers, and the weight is
written beside the key (and shown exactly on hover). Keys the mask hides get no line.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from tfviz.viz.style import CATEGORICAL, fixed_margins, layout, token_labels

QUERY_COLOUR = CATEGORICAL[5]  # vermillion
LINE_COLOUR = CATEGORICAL[0]  # blue
MAX_WIDTH = 14.0


def arrows_figure(weights: np.ndarray, tokens: Sequence[str], query_pos: int, *, title: str,
                  allowed: np.ndarray | None = None) -> go.Figure:
    """weights: (n,) one query row of an attention map; tokens: the n raw token strings.

    ``title`` must already be safe for plotly's label markup (build it from ``token_labels(..., escape=True)``).

    >>> fig = arrows_figure(np.array([0.88, 0.12]), ["Thinking", "Machines"], 0, title="t")
    >>> [round(float(t.line.width), 2) for t in fig.data if t.mode == "lines"]
    [12.38, 2.12]
    """
    w = np.asarray(weights, dtype=float)
    n = len(w)
    allowed = np.ones(n, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    top = float(w.max()) if n and w.max() > 0 else 1.0
    fig = go.Figure()
    for j in range(n):
        if not allowed[j]:
            continue
        fig.add_trace(go.Scatter(
            x=[0, 1], y=[query_pos, j], mode="lines", hoverinfo="skip", showlegend=False,
            line={"width": 0.5 + (MAX_WIDTH - 0.5) * float(w[j]), "color": LINE_COLOUR},
            opacity=0.25 + 0.75 * float(w[j]) / top,  # darkest for the key it likes most
        ))
    names = token_labels(tokens, escape=True)  # "3 cat", escaped for plotly's label markup
    key_text = [f"{names[j]}  {w[j]:.2f}" if allowed[j] else f"{names[j]}  (masked)"
                for j in range(n)]
    fig.add_trace(go.Scatter(
        x=[1] * n, y=list(range(n)), mode="markers+text", text=key_text, textposition="middle right",
        marker={"size": 10, "color": [LINE_COLOUR if ok else "#999999" for ok in allowed]},
        name="keys", showlegend=False,
        customdata=np.array([[names[j], f"{w[j]:.4f}" if allowed[j] else "masked (−∞)"]
                             for j in range(n)], dtype=object).reshape(n, 2),
        hovertemplate="key %{customdata[0]}<br>weight: %{customdata[1]}<extra></extra>",
    ))
    colours = [QUERY_COLOUR if i == query_pos else "#999999" for i in range(n)]
    fig.add_trace(go.Scatter(
        x=[0] * n, y=list(range(n)), mode="markers+text", text=names,
        textposition="middle left", marker={"size": 10, "color": colours}, showlegend=False,
        name="queries", hovertemplate="query %{text}<extra></extra>",
    ))
    layout(fig, title, max(300, min(1400, 80 + 26 * n)), plot_bgcolor="white")
    fig.update_xaxes(range=[-0.6, 1.7], showticklabels=False, showgrid=False, zeroline=False,
                     tickvals=[0, 1], title="query (left) → keys (right)")
    fig.update_yaxes(range=[n - 0.5, -0.5], showticklabels=False, showgrid=False, zeroline=False)
    return fixed_margins(fig, top=50)
