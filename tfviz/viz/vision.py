"""The charts of lesson 19 (a vision transformer): the image with its patch grid, the flattened
patches, the learned matrices (E, E_pos, the class token, x₀), how alike the position vectors
are on the patch grid, the class probabilities, and where the class token looks.

The image is one rect per pixel (``pixel_layer``); the matrices are
``instant_matrix.matrix_chart``'s heatmaps; the bars are written with ``tfviz.viz.kit.charts``.

Where the class token looks is an instant chart (``tfviz.viz.kit.instant``): layer and head are
view parameters bound to sliders; every layer's and head's class-token row is sent once, and
the browser filters it, so choosing a layer or head runs nothing on the server. Left, the image
pixel by pixel, with each patch veiled in proportion to how little attention the class token
gives it in the chosen layer and head (the patch it reads most is left clear, and framed in
yellow). Right, the same weights as a P×P-patch grid with their values.
"""

from __future__ import annotations

import math
import numpy as np
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.instant import SCHEME, layer_head, rounded
from tfviz.viz.kit.instant_matrix import matrix_bound, matrix_chart
from tfviz.viz.kit.presenter import PICTURE, SCALE
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, hex_colour


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


FRAME = "#F0E442"  # yellow reads on black and on every shape colour


def pixel_rows(image: np.ndarray) -> list[dict]:
    """One row per pixel of an (H, W, 3) image in [0, 1], row after row: its column ``x``, row
    ``y``, colour ``rgb`` ("#rrggbb", what is drawn) and the same in 0-255 as ``RGB`` (what the
    tooltip says).

    >>> pixel_rows(np.array([[[1.0, 0.5, 0.0]]]))
    [{'x': 0, 'y': 0, 'rgb': '#ff8000', 'RGB': '255, 128, 0'}]
    """
    H, W, _ = np.shape(image)
    unit = np.clip(np.asarray(image, dtype=float), 0.0, 1.0).tolist()
    rows = []
    for i in range(H):
        for j in range(W):
            colour = hex_colour(unit[i][j])
            rows.append({"x": j, "y": i, "rgb": colour,
                         "RGB": ", ".join(str(int(colour[k:k + 2], 16)) for k in (1, 3, 5))})
    return rows


def pixel_axes(width: int, height: int, *, axes: bool = False, tick: int = 4) -> tuple[dict, dict]:
    """The x and y channels (without a field) of a picture ``width`` × ``height`` pixels: pixel
    (row i, column j) covers [j, j + 1] × [i, i + 1], row 0 at the top. With ``axes``, every
    ``tick``-th column and row is named at its pixel's centre."""
    def channel(size: int, title: str, reverse: bool) -> dict:
        scale = {"domain": [0, size], "nice": False, "zero": False, **({"reverse": True} if reverse else {})}
        axis = ({"title": title, "values": [k + 0.5 for k in range(0, size, tick)],
                 "labelExpr": "floor(datum.value)", "grid": False, "labelAngle": 0}
                if axes else None)
        return {"type": "quantitative", "scale": scale, "axis": axis}

    return channel(width, "column", False), channel(height, "row", True)


def pixel_layer(width: int, height: int, *, data: str | None = "pixels", axes: bool = False) -> dict:
    """The picture ``pixel_rows`` sends (the dataset ``data``; None: the chart's own rows), one
    rect per pixel in its own colour (a 16×16 image is 256 marks). The pixels stay out of the
    accessibility tree: the chart's description says what the picture is, and 256 colour names
    would bury it."""
    x, y = pixel_axes(width, height, axes=axes)
    return {**({"data": {"name": data}} if data else {}),
            "transform": [{"calculate": "datum.x + 1", "as": "x1"}, {"calculate": "datum.y + 1", "as": "y1"}],
            "mark": {"type": "rect", "aria": False},
            "encoding": {"x": {"field": "x", **x}, "x2": {"field": "x1"},
                         "y": {"field": "y", **y}, "y2": {"field": "y1"},
                         "color": {"field": "rgb", "type": "nominal", "scale": None, "title": "colour"},
                         "tooltip": [{"field": "y", "title": "row"}, {"field": "x", "title": "column"},
                                     {"field": "RGB", "title": "R, G, B (0-255)"}]}}


def cls_attention_chart(image: np.ndarray, weights: np.ndarray, kept: np.ndarray, patch: int, *,
                        layer: int = 0, head: int = 0, cell: int = 20) -> dict:
    """``image`` (H, W, 3) in [0, 1]; ``weights`` (layers, heads, N): the class token's
    attention to each patch; ``kept`` (layers, heads): what it gives itself (said under the
    image; every row ``cls`` carries it as ``own``)."""
    H, W, _ = image.shape
    n_layers, n_heads, n = np.shape(weights)
    rows, cols = H // patch, W // patch
    if rows * cols != n or np.shape(kept) != (n_layers, n_heads):
        raise ValueError("one weight per patch, and one kept weight per layer and head")
    values = rounded(weights)
    own = rounded(kept)
    cls = [{"layer": lyr, "head": h, "patch": p, "r": p // cols, "c": p % cols, "v": values[lyr][h][p],
            "own": own[lyr][h]}
           for lyr in range(n_layers) for h in range(n_heads) for p in range(n)]
    keep = [{"filter": "datum.layer == layer && datum.head == head"},
            {"joinaggregate": [{"op": "max", "field": "v", "as": "top"}]},
            {"calculate": f"datum.c * {patch}", "as": "x0"}, {"calculate": f"(datum.c + 1) * {patch}", "as": "x1"},
            {"calculate": f"datum.r * {patch}", "as": "y0"}, {"calculate": f"(datum.r + 1) * {patch}", "as": "y1"}]
    x, y = pixel_axes(W, H)
    picture = {
        "name": PICTURE, "width": cell * W, "height": cell * H,  # presenter view keeps it square
        "layer": [
            pixel_layer(W, H),
            {"data": {"name": "cls"}, "transform": keep,
             "mark": {"type": "rect", "color": "black"},
             "encoding": {"x": {"field": "x0", **x}, "x2": {"field": "x1"},
                          "y": {"field": "y0", **y}, "y2": {"field": "y1"},
                          "opacity": {"field": "veil", "type": "quantitative", "scale": None},
                          "tooltip": [{"field": "patch", "title": "patch"},
                                      {"field": "v", "title": "weight from the class token", "format": ".4f"}]}},
            {"data": {"name": "cls"}, "transform": [*keep, {"filter": "datum.v == datum.top"}],
             "mark": {"type": "rect", "filled": False, "stroke": FRAME, "strokeWidth": 3, "aria": False},
             "encoding": {"x": {"field": "x0", **x}, "x2": {"field": "x1"},
                          "y": {"field": "y0", **y}, "y2": {"field": "y1"}}},
            {"data": {"name": "cls"}, "transform": [*keep, {"filter": "datum.patch == 0"}],
             "mark": {"type": "text", "align": "left", "baseline": "top", "fontSize": FONT_SIZE - 2,
                      "x": 0, "y": cell * H + 10},
             "encoding": {"text": {"field": "kept"}}},
        ],
        "title": {"text": "On the image (darker: less attention)", "fontSize": FONT_SIZE},
    }
    picture["layer"][3]["transform"].append(
        {"calculate": "'The class token keeps ' + format(datum.own, '.2f') + ' for itself.'", "as": "kept"})
    picture["layer"][1]["transform"] = [*keep, {"calculate": "0.85 * (1 - datum.v / max(datum.top, 1e-9))",
                                                "as": "veil"}]
    size = max(44, cell * W // cols)
    grid = {
        "data": {"name": "cls"}, "transform": keep, "width": size * cols, "height": size * rows,
        "encoding": {"x": {"field": "c", "type": "ordinal", "scale": {"domain": list(range(cols))},
                           "axis": {"title": "patch column", "labelAngle": 0}},
                     "y": {"field": "r", "type": "ordinal", "scale": {"domain": list(range(rows))},
                           "axis": {"title": "patch row"}}},
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "v", "type": "quantitative", "title": "weight",
                                    "scale": {"scheme": SCHEME, "domainMin": 0}},
                          "tooltip": [{"field": "patch", "title": "patch"},
                                      {"field": "v", "title": "weight", "format": ".4f"}]}},
            # the patch over its weight, two short lines: at presenter view's 24 px, "p12: 0.03"
            # on one line is wider than a cell
            {"mark": {"type": "text", "fontSize": FONT_SIZE - 3, "lineBreak": "\n", "aria": False},
             "encoding": {"text": {"field": "label"},
                          "color": {"condition": {"test": "datum.v > 0.6 * datum.top", "value": "black"},
                                    "value": "white"}}},
        ],
        "title": {"text": "The same weights, patch by patch", "fontSize": FONT_SIZE},
    }
    grid["transform"] = [*keep, {"calculate": "'p' + datum.patch + '\\n' + format(datum.v, '.2f')",
                                 "as": "label"}]
    title = {"text": {"expr": "'Class token → patches: layer ' + layer + ', head ' + head"}}
    body = {"hconcat": [picture, grid], "spacing": 40, "title": title,
            "resolve": {"scale": {"color": "independent", "opacity": "independent"}}}
    params = layer_head(n_layers, n_heads, layer, head)
    return chart(body, params=params, datasets={"cls": cls, "pixels": pixel_rows(image)},
                 marks=H * W + 4 * n + 1,
                 description="The class token's attention over the image patches, for the chosen layer and head.",
                 own_size=True)
