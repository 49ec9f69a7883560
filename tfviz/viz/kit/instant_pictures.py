"""Instant views of long texts: maps sent as PNG pictures instead of one mark per cell.

A heatmap drawn as Vega-Lite marks costs the browser a few interpreted expressions per cell on
every redraw, so a map with more than ``PICTURE_CELLS`` cells (a 25-token text) travels as a
picture, one pixel per cell, coloured like the cells' scale, and the browser switches between
pictures at once (BENCHMARKS.md). ``picture_rows`` is ``stack_rows`` for pictures and
``picture_layer`` draws one with token axes and a legend, as ``heat_layer`` draws cells
(:mod:`tfviz.viz.kit.instant`, whose conventions these follow).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.conventions import cell_size
from tfviz.viz.kit.instant import SCHEME, token_axis
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN
from tfviz.viz.kit.style import rgb

# Cividis at ten stops (plotly's copy of it), for maps sent as pictures.
CIVIDIS = ["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74",
           "#c3b369", "#e1cc55", "#fee838"]
# Red-blue at eleven stops, negative (blue) to positive (red), as the cells' reversed "redblue"
# scheme draws it: the colours of a diverging map sent as a picture.
RED_BLUE = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7",
            "#f4a582", "#d6604d", "#b2182b", "#67001f"]
LEVELS = 255  # steps of the colour scale a picture tells apart (one palette index is for masked)
PICTURE_CELLS = 576  # a map with more cells than this (a 25-token text) is sent as a picture


def picture(matrix: np.ndarray, *, low: float = 0.0, high: float = 1.0,
            colours: Sequence[str] = CIVIDIS, masked: str | None = None) -> str:
    """A matrix as a PNG data URL, one pixel per cell, coloured like the cividis scale (or the
    stops ``colours``) from ``low`` to ``high``; a masked (non-finite) cell takes the colour
    ``masked``. The browser switches between pictures of a
    long text's maps at once, where thousands of cells as separate marks are slow to redraw
    (bench/bench_views.py, BENCHMARKS.md)."""
    import base64
    import io

    from PIL import Image

    stops = np.array([rgb(c) for c in colours], dtype=float)
    values = np.asarray(matrix, dtype=float)
    hidden = ~np.isfinite(values)
    t = np.clip((np.where(hidden, low, values) - low) / (high - low), 0.0, 1.0)
    # A palette picture: each cell is one of LEVELS steps of the scale (1/254 of it apart,
    # finer than the eye tells), one byte a pixel instead of three; a 64 x 768 map of a real
    # model's stream comes out about 2.5 times smaller than as RGB. The last index is ``masked``.
    ramp = np.linspace(0.0, 1.0, LEVELS) * (len(stops) - 1)  # (LEVELS,) positions on the stops
    i = np.minimum(ramp.astype(int), len(stops) - 2)
    frac = (ramp - i)[:, None]
    palette = (stops[i] * (1 - frac) + stops[i + 1] * frac).round().astype(np.uint8)  # (LEVELS, 3)
    masked_rgb = np.array(rgb(masked) if masked is not None else (0, 0, 0), dtype=np.uint8)
    index = np.rint(t * (LEVELS - 1)).astype(np.uint8)
    index[hidden & (masked is not None)] = LEVELS
    image = Image.fromarray(index, mode="P")
    image.putpalette(np.vstack([palette, masked_rgb]).ravel().tolist())
    buffer = io.BytesIO()
    # compress_level 1: a map's few hundred pixels come out as small as with optimize=True,
    # in about half the time (lesson 5 encodes some 70 pictures per sentence).
    image.save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def picture_rows(matrices: np.ndarray, *names: str) -> list[dict]:
    """``stack_rows`` for pictures: one row per leading index with its map as ``img``."""
    arr = np.asarray(matrices, dtype=float)
    return [{**dict(zip(names, (int(i) for i in index))), "img": picture(arr[index])}
            for index in np.ndindex(*arr.shape[:len(names)])]


def image_layer(width, height, transform: Sequence[dict] = ()) -> dict:
    """A layer drawing each row's picture (its ``img`` data URL) from the top left corner,
    ``width`` × ``height`` pixels (numbers or ``{"expr": ...}``), for the rows ``transform``
    keeps; out of the accessibility tree (the chart's description and tables name it)."""
    return {"transform": list(transform),
            "mark": {"type": "image", "smooth": False, "aspect": False, "align": "left",
                     "baseline": "top", "aria": False, "width": width, "height": height},
            "encoding": {"url": {"field": "img", "type": "nominal"}, "x": {"value": 0},
                         "y": {"value": 0}}}


def index_layer(channel: str, size: int, *, title: str, labels: str = "tokens",
                free: bool = False, axis: bool = True, overlap: bool | None = None) -> dict:
    """An invisible layer that gives a picture its ordinal ``channel`` ("x" or "y") scale over
    positions 0..size-1 and an axis labelled by ``labels``; ``free``: over the sentence's
    positions 0..ntok-1, ``size`` being its ``length_cap`` (``tfviz.viz.kit.instant_length``)."""
    shown = (token_axis(title, labels=labels, n=size, free=free) if axis else
             {"title": title or None, "labels": False, "ticks": False})
    if overlap is not None and axis:
        shown["labelOverlap"] = overlap
    return {"data": {"sequence": {"start": 0, "stop": size, "as": "i"}},
            **({"transform": [{"filter": "datum.i < ntok"}]} if free else {}),
            "mark": {"type": "point", "opacity": 0, "aria": False},
            "encoding": {channel: {"field": "i", "type": "ordinal", "axis": shown,
                                   "scale": {"domain": TOKENS_DOMAIN if free else
                                             list(range(size))}}}}


def picture_layer(cols: int, rows: int, *, x_title: str, y_title: str, value_title: str,
                  before: Sequence[dict] = (), cell: int | None = None, x_labels: str = "tokens",
                  y_labels: str = "tokens", axes: bool = True, legend: bool = True,
                  free: bool = False) -> dict:
    """A heatmap drawn from a picture (``picture_rows``; the rows kept by ``before``), with
    token axes and a cividis legend for 0..1, as ``heat_layer`` draws it for short texts.
    Cells have no hover values: there are too many to point at. ``free``: a token × token
    map of a length-free chart (``cols`` and ``rows`` its ``length_cap``): the picture fills
    the same square whatever the sentence's length, and the axes name its ``ntok`` tokens."""
    cell = cell or cell_size(cols, rows, smallest=3)
    width, height = cell * cols, cell * rows
    image = image_layer(width, height, before)
    x = index_layer("x", cols, title=x_title, labels=x_labels, free=free, axis=axes)
    y = index_layer("y", rows, title=y_title, labels=y_labels, free=free, axis=axes)
    x["encoding"]["color"] = {"field": "i", "type": "quantitative", "title": value_title,
                              "scale": {"domain": [0, 1], "scheme": SCHEME},
                              **({} if legend else {"legend": None})}
    return {"width": width, "height": height, "layer": [image, x, y]}
