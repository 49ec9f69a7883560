"""Figures of lesson 19: the image with its patch grid, the flattened patches, and the class
probabilities. Pure functions of numpy arrays (the heatmaps of E and E_pos use
``tfviz.viz.heatmap.heatmap``)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import CATEGORICAL, FONT_SIZE, fixed_margins, layout

GRID_COLOUR = "#F0E442"  # yellow lines read on black and on every shape colour


def image_grid_figure(image: np.ndarray, patch: int, *, title: str, size: int = 360,
                      numbers: bool = True) -> go.Figure:
    """The (H, W, 3) image, pixel by pixel, with the P×P patch grid drawn over it and each
    patch numbered in the order the sequence takes them (row by row)."""
    H, W, _ = image.shape
    rgb = np.clip(np.asarray(image, dtype=float), 0.0, 1.0) * 255  # (H, W, 3)
    fig = go.Figure(go.Image(z=rgb.round().astype(np.uint8), x0=0, y0=0, dx=1, dy=1,
                             hovertemplate="row %{y}, column %{x}<br>RGB %{z}<extra></extra>"))
    rows, cols = H // patch, W // patch
    for r in range(1, rows):
        fig.add_shape(type="line", x0=-0.5, x1=W - 0.5, y0=r * patch - 0.5, y1=r * patch - 0.5,
                      line={"color": GRID_COLOUR, "width": 2})
    for c in range(1, cols):
        fig.add_shape(type="line", y0=-0.5, y1=H - 0.5, x0=c * patch - 0.5, x1=c * patch - 0.5,
                      line={"color": GRID_COLOUR, "width": 2})
    if numbers and rows * cols <= 64:
        for n in range(rows * cols):
            r, c = divmod(n, cols)
            fig.add_annotation(x=c * patch - 0.5 + 0.15 * patch, y=r * patch - 0.5 + 0.15 * patch,
                               text=f"p{n}", showarrow=False, xanchor="left", yanchor="top",
                               font={"color": GRID_COLOUR, "size": FONT_SIZE - 4 if rows <= 4 else FONT_SIZE - 7})
    layout(fig, title, size + 60)
    fig.update_xaxes(showgrid=False, zeroline=False, title="column", range=[-0.5, W - 0.5])
    fig.update_yaxes(showgrid=False, zeroline=False, title="row", range=[H - 0.5, -0.5],
                     scaleanchor="x")
    fig.update_layout(width=size + 80)
    return fixed_margins(fig, top=50, left=60, bottom=50)


def patches_figure(patches: np.ndarray, patch: int, channels: int = 3) -> go.Figure:
    """The (N, P²·C) matrix of flattened patches: one row per patch, its numbers in patchify's
    order (pixel row, pixel column, channel; the channel fastest)."""
    n, dim = patches.shape
    names = "RGB" if channels == 3 else [str(c) for c in range(channels)]
    cols = [f"({i // (patch * channels)},{(i // channels) % patch}){names[i % channels]}"
            for i in range(dim)]
    return heatmap(patches, title=f"{n} patches flattened: a ({n} × {dim}) matrix",
                   x_labels=cols, y_labels=[f"p{i}" for i in range(n)],
                   x_title="number in the patch: (pixel row, pixel column) channel", y_title="patch",
                   zmin=0.0, zmax=1.0, text=False, height=max(320, min(640, 60 + 24 * n)))


def probabilities_figure(classes: Sequence[str], probs: np.ndarray, truth: str | None) -> go.Figure:
    """The model's probability for each class; the shape actually drawn in another colour."""
    colours = [CATEGORICAL[2] if c == truth else CATEGORICAL[0] for c in classes]
    fig = go.Figure(go.Bar(x=[float(p) for p in probs], y=list(classes), orientation="h",
                           marker_color=colours, text=[f"{float(p):.3f}" for p in probs],
                           textposition="outside", cliponaxis=False,
                           constraintext="none",  # never shrink the numbers to fit (presenter view)
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    layout(fig, "Class probabilities (green: the shape drawn)", 80 + 44 * len(classes))
    fig.update_xaxes(range=[0, 1.15], title="probability")
    fig.update_yaxes(autorange="reversed")
    return fixed_margins(fig, top=50, left=90, bottom=50)


def matrix_figure(values: np.ndarray, *, title: str, y_labels: Sequence[str], y_title: str,
                  x_title: str = "dimension of D") -> go.Figure:
    """A weight matrix (E, E_pos) as a diverging heatmap, rows labelled."""
    rows, cols = np.shape(values)
    height = max(300, min(720, 70 + 18 * rows))
    fig = heatmap(values, title=title, y_labels=list(y_labels), y_title=y_title,
                  x_labels=[str(i) for i in range(cols)], x_title=x_title, diverging=True,
                  text=False, height=height)
    # Labels far enough apart for presenter view's 24 px text (hovering a cell still names it):
    # every 4th of many columns (these matrices sit in half-width columns), and rows at least
    # 30 px apart (about 120 px of the height are title and axes).
    x_step = 4 if cols > 16 else 1
    y_step = max(1, math.ceil(30 * rows / max(height - 120, 1)))
    xs, ys = list(range(0, cols, x_step)), list(range(0, rows, y_step))
    fig.update_xaxes(tickvals=xs, ticktext=[str(i) for i in xs])
    fig.update_yaxes(tickvals=ys, ticktext=[list(y_labels)[i] for i in ys])
    return fig


def similarity_figure(similarity: np.ndarray, patch: int) -> go.Figure:
    """The cosine similarity of one patch's position vector with every patch's, on the grid."""
    rows, cols = similarity.shape
    fig = heatmap(similarity, title=f"Cosine similarity of p{patch}'s position vector with each patch's",
                  x_labels=[str(c) for c in range(cols)], y_labels=[str(r) for r in range(rows)],
                  x_title="patch column", y_title="patch row", diverging=True, zmin=-1.0, zmax=1.0,
                  text=True, height=340)
    fig.update_layout(width=480)
    return fig
