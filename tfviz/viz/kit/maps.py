"""Attention maps as instant charts: one map, or two side by side on one 0..1 scale, of the rows
the view controls choose, packed for a short text and pictured for a long one. Lessons 5, 6, 8
and 17 draw their maps with these.

A masked score (−∞) travels as an empty entry of the packed row (``instant.packed``) and is
drawn as a grey cell that reads "−∞", with "masked (−∞)" as its value in the tooltip and the
mark's ARIA label (``masked_heat``).

A long text's maps (more than ``instant_pictures.PICTURE_CELLS`` cells) travel as pictures:
thousands of cells as separate marks took the browser up to a second and a half per view
change (bench/bench_views.py). Weights use cividis pictures; scores get ``score_picture``'s
red-blue, with masked cells grey, on one colour range for every layer and head.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.conventions import cell_size
from tfviz.viz.kit.instant import DIVERGING_SCHEME, heat_layer, stack_rows, unpack
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.instant_pictures import (PICTURE_CELLS, RED_BLUE, picture, picture_layer,
                                            picture_rows)
from tfviz.viz.kit.style import FONT_SIZE, MASKED_GREY


MASKED = "masked (−∞)"
SIDE_BY_SIDE = 20  # up to this many tokens two maps sit next to each other; more are stacked
WIDTH = 640  # pixels of cells across a chart: with labels and legend it stays under ~900 px


def fit_cell(n: int, across: int = 1) -> int:
    """Pixels per cell so that ``across`` maps of ``n`` columns fill about WIDTH pixels.

    >>> fit_cell(13), fit_cell(13, across=2), fit_cell(64), fit_cell(128)
    (44, 24, 10, 6)
    """
    return cell_size(across * n, smallest=6, width=WIDTH)


def pictured(n: int) -> bool:
    """Whether maps of ``n`` tokens travel as pictures (see the module docstring)."""
    return n * n > PICTURE_CELLS


def abs_bound(scores: np.ndarray) -> float:
    """The colour range ±bound of every view of ``scores``: the largest finite |score|.

    >>> abs_bound(np.array([[1.0, -np.inf], [-3.0, 2.0]]))
    3.0
    """
    finite = np.abs(scores[np.isfinite(scores)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def score_picture(matrix: np.ndarray, bound: float) -> str:
    """Scores as a PNG data URL, one pixel per cell: red-blue from −bound to +bound, masked
    (−∞) cells grey."""
    return picture(matrix, low=-bound, high=bound, colours=RED_BLUE, masked=MASKED_GREY)


def map_rows(maps: np.ndarray, *names: str, scores: bool = False, bound: float = 1.0) -> list[dict]:
    """The rows a chart of these maps needs: packed cells (``stack_rows``, field ``v``) for a
    short text, pictures (field ``img``) for a long one."""
    n = maps.shape[-1]
    if not pictured(n):
        return stack_rows(maps, *names)
    if not scores:
        return picture_rows(maps, *names)
    return [{**dict(zip(names, (int(i) for i in index))), "img": score_picture(maps[index], bound)}
            for index in np.ndindex(*maps.shape[:len(names)])]


def cells(n: int, panels: int = 1) -> int:
    """Marks that ``panels`` maps of ``n`` tokens draw (none when they are pictures): the
    renderer's choice (``charts.chart``)."""
    return 0 if pictured(n) else panels * n * n


def view_filter(*fields: str) -> dict:
    """Keep the rows of the chosen view: ``view_filter("layer", "head")`` keeps
    ``datum.layer == layer && datum.head == head``."""
    return {"filter": " && ".join(f"datum.{f} == {f}" for f in fields)}


def masked_heat(n: int, m: int, *, keep: dict, x_labels: str = "tokens",
                y_labels: str = "tokens", cell: int | None = None, value_title: str = "score",
                x_title: str = "key", y_title: str = "query", bound: float | str = 1.0,
                free: bool = False) -> dict:
    """``heat_layer`` of scores from −bound to +bound (reversed red-blue), with every masked
    cell grey and reading "−∞"; its value in the tooltip and ARIA label is "masked (−∞)".
    ``keep`` is the filter that keeps the view's row. One range for every layer and head keeps
    the legend still when the view changes (relaying it out cost a third of a view change).
    A long text's scores are a picture (``map_rows(..., scores=True, bound=bound)``).
    ``free``: a length-free map (``n`` and ``m`` its ``length_cap``) of ``ntok`` cells a side;
    ``bound`` may then name an expression (``charts.chart(sentence=...)``), so that the
    range rides in the data rather than in the spec."""
    cell = cell or fit_cell(max(n, m))
    domain = {"expr": f"[-{bound}, {bound}]"} if isinstance(bound, str) else [-bound, bound]
    if pictured(max(n, m)):
        view = picture_layer(m, n, x_title=x_title, y_title=y_title, value_title=value_title,
                             before=[keep], cell=cell, free=free,
                             x_labels=x_labels, y_labels=y_labels)
        view["layer"][1]["encoding"]["color"]["scale"] = {
            "domain": domain, "scheme": DIVERGING_SCHEME, "reverse": True}
        return view
    view = heat_layer(m, n, x_title=x_title, y_title=y_title, value_title=value_title,
                      before=[keep, *unpack("ntok" if free else m)], x_labels=x_labels,
                      y_labels=y_labels, domain=None, diverging=True, cell=cell, free=free)
    view["layer"][0]["encoding"]["color"]["scale"]["domain"] = domain
    where = {"x": {"field": "col", "type": "ordinal"}, "y": {"field": "row", "type": "ordinal"}}
    grey = {"transform": [{"filter": "!isValid(datum.v)"},
                          {"calculate": f"'{MASKED}'", "as": "masked"}],
            "mark": {"type": "rect", "color": MASKED_GREY},
            "encoding": {**where, "tooltip": [{"field": "rowlabel", "title": y_title},
                                              {"field": "collabel", "title": x_title},
                                              {"field": "masked", "title": value_title}]}}
    view["layer"].append(grey)
    if cell >= 20:  # room for the sign itself
        view["layer"].append({"transform": [{"filter": "!isValid(datum.v)"}],
                              "mark": {"type": "text", "fontSize": FONT_SIZE - 4, "color": "#444"},
                              "encoding": {**where, "text": {"value": "−∞"}}})
    return view


def map_pair(sources: Sequence[str], titles: Sequence[str], n: int, *, fields=("layer", "head"),
             labels: Sequence[str] = ("tokens", "tokens"), title: dict | None = None,
             free: bool = False) -> dict:
    """Two attention maps of ``n`` tokens on one 0..1 colour scale (so one legend): the rows of
    datasets ``sources`` (made by ``map_rows``) that ``fields`` select. Side by side up to
    SIDE_BY_SIDE tokens, else one above the other; the second map repeats its token labels
    only when they differ or sit below. ``free``: length-free maps, ``n`` being the
    sentence's ``length_cap`` (``masked_heat``)."""
    across = 2 if n <= SIDE_BY_SIDE else 1
    cell = fit_cell(n, across)
    views = []
    for i, (source, name, lab) in enumerate(zip(sources, titles, labels)):
        first = i == 0
        y_title = "query" if first or across == 1 else ""
        if pictured(n):  # a long text: a picture per map (rows from map_rows)
            view = picture_layer(n, n, x_title="key", y_title=y_title, value_title="weight",
                                 before=[view_filter(*fields)], cell=cell, x_labels=lab,
                                 y_labels=lab, free=free)
        else:
            view = heat_layer(n, n, x_title="key", y_title=y_title, value_title="weight",
                              x_labels=lab, y_labels=lab, cell=cell, masked=False,
                              y_axis=first or across == 1 or lab != labels[0], free=free,
                              before=[view_filter(*fields), *unpack("ntok" if free else n)])
        views.append({"data": {"name": source}, **view, "title": {"text": name, "fontSize": FONT_SIZE}})
    body = {"hconcat" if across == 2 else "vconcat": views, "spacing": 16 if across == 2 else 24}
    if title:
        body["title"] = title
    return body


def map_shape(arr: np.ndarray) -> tuple[int, int, int]:
    """(layers, heads, n) of maps shaped (layers, heads, n, n); a ValueError when not square."""
    n_layers, n_heads, n, m = arr.shape
    if n != m:
        raise ValueError(f"expected square maps (layers, heads, n, n), got {arr.shape}")
    return n_layers, n_heads, n
