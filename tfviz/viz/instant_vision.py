"""Instant chart for lesson 19: where the class token looks, drawn on the image.

In the conventions of ``tfviz.viz.kit.instant``: layer and head are view parameters bound to
sliders; every layer's and head's class-token row is sent once, and the browser filters it, so
choosing a layer or head runs nothing on the server.

Left, the image pixel by pixel, with each patch veiled in proportion to how little attention
the class token gives it in the chosen layer and head (the patch it reads most is left clear,
and framed in yellow). Right, the same weights as a P×P-patch grid with their values.
"""
from __future__ import annotations

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import SCHEME, layer_head, rounded
from tfviz.viz.kit.presenter import PICTURE
from tfviz.viz.kit.style import FONT_SIZE, hex_colour

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
