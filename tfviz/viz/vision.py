"""Charts of lesson 19 as Vega-Lite dicts: the image with its patch grid, the flattened
patches, the learned matrices (E, E_pos, the class token, x₀), how alike the position vectors
are on the patch grid, and the class probabilities.

The image is one rect per pixel (``instant_vision.pixel_layer``, as lesson 19's instant chart
draws it); the matrices are ``instant_matrix.matrix_chart``'s heatmaps; the bars are written with
``tfviz.viz.kit.charts``. Pure functions of numpy arrays.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.instant_matrix import matrix_bound, matrix_chart
from tfviz.viz.instant_vision import FRAME, pixel_axes, pixel_layer, pixel_rows
from tfviz.viz.kit.presenter import PICTURE, SCALE
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE

LABEL_GAP = 30  # px between two row labels in presenter view (24 px text, rows 1.5x taller)


def image_grid_figure(image: np.ndarray, patch: int, *, title: str, size: int = 320,
                      numbers: bool = True) -> dict:
    """The (H, W, 3) image, pixel by pixel, with the P×P patch grid drawn over it in yellow and,
    with ``numbers`` (and at most 64 patches), each patch named in the order the sequence takes
    them, row by row: p0, p1, ... At most ``size`` px a side: with its axes it fits half of the
    820 px a page has beside the sidebar at 1280 × 800."""
    H, W, _ = np.shape(image)
    if H % patch or W % patch:
        raise ValueError(f"a {H}×{W} image does not cut into {patch}×{patch} patches")
    rows, cols = H // patch, W // patch
    cell = max(2, size // max(H, W))
    x, y = pixel_axes(W, H, axes=True)  # every layer names the same axes
    lines = ([{"x": c * patch, "y": 0, "x2": c * patch, "y2": H} for c in range(1, cols)] +
             [{"x": 0, "y": r * patch, "x2": W, "y2": r * patch} for r in range(1, rows)])
    layers = [pixel_layer(W, H, data=None, axes=True)]  # the chart's rows; lines and names decorate
    if lines:
        layers.append({"data": {"name": "grid"},
                       "mark": {"type": "rule", "color": FRAME, "strokeWidth": 2, "aria": False},
                       "encoding": {"x": {"field": "x", **x}, "x2": {"field": "x2"},
                                    "y": {"field": "y", **y}, "y2": {"field": "y2"}}})
    named = numbers and rows * cols <= 64
    labels = [{"patch": k, "label": f"p{k}", "x": (k % cols + 0.15) * patch, "y": (k // cols + 0.15) * patch}
              for k in range(rows * cols)] if named else []
    if named:
        # 14 px (24 px in presenter view) while a patch is wide enough for "p15" at that size
        font = FONT_SIZE - 2 if cell * patch >= 70 else FONT_SIZE - 6
        layers.append({"data": {"name": "patches"},
                       "mark": {"type": "text", "align": "left", "baseline": "top", "color": FRAME,
                                "fontSize": font, "aria": False},
                       "encoding": {"x": {"field": "x", **x}, "y": {"field": "y", **y},
                                    "text": {"field": "label"}}})
    description = (f"The {H}×{W} image, pixel by pixel, cut by yellow lines into {rows * cols} "
                   f"patches of {patch}×{patch} pixels"
                   + (f", named p0 to p{rows * cols - 1} row by row." if named else ".")
                   if lines else f"The {H}×{W} image, pixel by pixel: one patch of {patch}×{patch} pixels.")
    body = {"data": {"name": "pixels"}, "width": cell * W, "height": cell * H, "layer": layers,
            "name": PICTURE}  # presenter view keeps its pixels square
    datasets = {"pixels": pixel_rows(image), **({"grid": lines} if lines else {}),
                **({"patches": labels} if labels else {})}
    return chart(body, datasets=datasets, title=title, description=description,
                 marks=H * W + len(lines) + len(labels), own_size=True)


def _thin_ticks(chart_spec: dict, rows: int, cols: int, row_px: float, *, x_every: int = 1) -> dict:
    """Name every ``x_every``-th column and enough rows that, ``row_px`` apart, their labels
    stay ``LABEL_GAP`` px apart in presenter view (hovering a cell still names it)."""
    y_every = max(1, math.ceil(LABEL_GAP / (row_px * SCALE)))
    cells = chart_spec["layer"][0]["encoding"]
    cells["x"]["axis"] = {**cells["x"]["axis"], "values": list(range(0, cols, x_every)), "labelAngle": 0}
    cells["y"]["axis"] = {**cells["y"]["axis"], "values": list(range(0, rows, y_every))}
    return chart_spec


def patches_figure(patches: np.ndarray, patch: int, channels: int = 3) -> dict:
    """The (N, P²·C) matrix of flattened patches: one row per patch, its numbers in patchify's
    order (pixel row, pixel column, channel; the channel fastest), dark 0 to bright 1."""
    count, dim = np.shape(patches)
    names = "RGB" if channels == 3 else [str(c) for c in range(channels)]
    cols = [f"({i // (patch * channels)},{(i // channels) % patch}){names[i % channels]}"
            for i in range(dim)]
    row_px = max(8, min(24, 400 // max(count, 1)))
    out = matrix_chart(patches, title=f"{count} patches flattened: a ({count} × {dim}) matrix",
                       description=(f"The image's {count} patches as the rows of a {count} × {dim} "
                                    f"matrix: each row holds one patch's {dim} numbers, pixel by "
                                    "pixel, row after row, each pixel's channels in turn, from 0 "
                                    "(dark) to 1 (bright)."),
                       x_title="number in the patch: (pixel row, pixel column) channel",
                       y_title="patch", x_labels=cols, y_labels=[f"p{i}" for i in range(count)],
                       value_title="value", domain=(0.0, 1.0),
                       width=min(720, 14 * dim), height=row_px * count)
    cells = out["layer"][0]["encoding"]
    # names of 6 characters: every 3rd column, written downwards
    cells["x"]["axis"] = {**cells["x"]["axis"], "values": list(range(0, dim, 3)), "labelAngle": -90}
    cells["y"]["axis"] = {**cells["y"]["axis"],
                          "values": list(range(0, count, max(1, math.ceil(LABEL_GAP / (row_px * SCALE)))))}
    return out


def matrix_figure(values: np.ndarray, *, title: str, y_labels: Sequence[str], y_title: str,
                  x_title: str = "dimension of D", width: int = 240) -> dict:
    """A learned matrix (E, E_pos, the class token) or a step's output as a diverging heatmap,
    blue negative and red positive, symmetric about 0; rows named by ``y_labels``. ``width``
    suits a half-width column, with the labels and colour bar within half of the 820 px a page
    has beside the sidebar at 1280 × 800; the rows are 8-20 px each (one row alone, 40)."""
    arr = np.asarray(values, dtype=float)
    rows, cols = arr.shape
    row_px = 40 if rows == 1 else max(8, min(20, 400 // rows))  # one row: a strip, not a line
    bound = matrix_bound(arr)
    out = matrix_chart(arr, title=title, x_title=x_title, y_title=y_title,
                       x_labels=[str(i) for i in range(cols)], y_labels=list(y_labels), diverging=True,
                       description=(f"{title}: {rows} row{'s' if rows > 1 else ''} of {cols} numbers, "
                                    f"one cell each, blue negative and red positive, on a scale from "
                                    f"−{bound:.2f} to {bound:.2f}."),
                       width=width, height=row_px * rows)
    return _thin_ticks(out, rows, cols, row_px, x_every=4 if cols > 16 else 1)


def similarity_figure(similarity: np.ndarray, patch: int, *, cell: int = 90) -> dict:
    """The cosine similarity of one patch's position vector with every patch's, on the patch
    grid (rows × columns of patches), each cell with its number."""
    rows, cols = np.shape(similarity)
    out = matrix_chart(similarity, title=f"Cosine similarity of p{patch}'s position vector with each patch's",
                       description=(f"Cosine similarity, from −1 to 1, of patch p{patch}'s learned "
                                    f"position vector with each patch's, laid out as the {rows} × "
                                    f"{cols} grid of patches; p{patch} with itself is 1."),
                       x_title="patch column", y_title="patch row", value_title="cosine",
                       diverging=True, domain=(-1.0, 1.0), text=True,
                       width=cell * cols, height=cell * rows)
    numbers = out["layer"][1]
    # 14 px numbers, so presenter view draws them at 24 px (its smallest cell text is hidden),
    # white on the darkest reds and blues
    numbers["mark"] = {**numbers["mark"], "fontSize": FONT_SIZE - 2}
    numbers["encoding"]["color"] = {"condition": {"test": "abs(datum.v) > 0.6", "value": "white"},
                                    "value": "black"}
    for channel in ("x", "y"):
        out["layer"][0]["encoding"][channel]["axis"]["labelAngle"] = 0
    return out


def probabilities_figure(classes: Sequence[str], probs: np.ndarray, truth: str | None) -> dict:
    """The model's probability for each class, its number beside the bar; the shape actually
    drawn (``truth``) in green, the others in blue."""
    rows = [{"class": c, "p": round(float(p), 4), "drawn": "yes" if c == truth else "no"}
            for c, p in zip(classes, probs)]
    y = n("class", None, sort=list(classes), axis={"title": None, "labelAngle": 0})
    bars = view("bar", x=q("p", "probability", scale={"domain": [0, 1.15], "nice": False},
                           axis={"values": [0, 0.2, 0.4, 0.6, 0.8, 1.0]}),
                y=y, color=colour("drawn", ["yes", "no"], [CATEGORICAL[2], CATEGORICAL[0]],
                                  title="the shape drawn?", legend=None),
                tooltip=tip("class", {"field": "p", "title": "probability", "format": ".4f"}))
    numbers = view({"type": "text", "align": "left", "dx": 6, "fontSize": FONT_SIZE - 2},
                   x=q("p", "probability"), y=y, text=q("p", "probability", format=".3f"))
    told = "; ".join(f"{c} {float(p):.3f}" for c, p in zip(classes, probs))
    return chart({"layer": [bars, numbers]}, title="Class probabilities (green: the shape drawn)",
                 description=(f"vit-tiny's probability for each class: {told}"
                              + (f". The shape drawn is {truth}." if truth else ".")),
                 rows=rows, height={"step": 44},
                 usermeta={"embedOptions": {"renderer": "svg", "actions": False}})
