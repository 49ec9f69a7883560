"""Plotly figures for lesson 15: masking drawn many times, and what fine-tuning trains.

Both are what-if results (the number of draws, the rank, the prefix length are Streamlit
widgets), drawn through ``tfviz.ui.widgets.chart`` so they carry the PNG camera button.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from tfviz.analysis.pretraining import SHARES
from tfviz.viz.style import CATEGORICAL, fixed_margins, label_margin, layout, safe_label


def masking_shares_figure(shares: np.ndarray, targets: Sequence[float]) -> go.Figure:
    """Lines: each running share of ``tfviz.analysis.pretraining.running_shares`` (draws, 4)
    against the number of draws, with its target as a dotted line of the same colour."""
    draws = np.arange(1, len(shares) + 1)
    fig = go.Figure()
    for j, (name, target) in enumerate(zip(SHARES, targets)):
        colour = CATEGORICAL[j]
        label = "chosen (of all positions)" if j == 0 else f"{name} (of the chosen)"
        fig.add_trace(go.Scatter(x=draws, y=shares[:, j], mode="lines", name=label,
                                 line={"color": colour, "width": 3},
                                 hovertemplate=f"{label}<br>after %{{x}} draws: %{{y:.4f}}<extra></extra>"))
        fig.add_hline(y=target, line={"color": colour, "dash": "dot", "width": 2})
    fig.update_xaxes(title="draws so far", type="log")
    fig.update_yaxes(title="share", range=[0, 1])
    layout(fig, "Shares over many draws (dotted: the target)", 440, plot_bgcolor="white",
           legend={"orientation": "h", "y": -0.25})
    return fixed_margins(fig, bottom=120)


def trainable_figure(names: Sequence[str], counts: Sequence[int], *, title: str) -> go.Figure:
    """Horizontal bars on a log scale: how many numbers each way of fine-tuning trains."""
    labels = [safe_label(n) for n in names]
    fig = go.Figure(go.Bar(y=labels, x=list(counts), orientation="h",
                           marker_color=[CATEGORICAL[j % len(CATEGORICAL)] for j in range(len(labels))],
                           text=[f"{c:,}" for c in counts], textposition="outside", cliponaxis=False,
                           constraintext="none",  # never shrink the numbers to fit (presenter view)
                           hovertemplate="%{y}: %{x:,}<extra></extra>"))
    fig.update_xaxes(title="trained numbers (log scale)", type="log")
    fig.update_yaxes(autorange="reversed")
    layout(fig, title, 90 + 48 * len(labels), plot_bgcolor="white", showlegend=False)
    return fixed_margins(fig, left=label_margin(labels, title=False), right=110)
