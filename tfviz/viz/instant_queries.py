"""What the attention lessons' instant charts share (lessons 4 and 5): rows of
per-query numbers, the view controls, and signed matrices sent as pictures.

A dataset row holds one (layer, head, query) and that query's numbers over the keys, packed as
in ``tfviz.viz.instant.packed``; a weight the mask hides is sent empty, so the browser knows
the mask without a separate field. ``split_keys`` turns the chosen row back into one datum per
key in the browser.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.attention import AllQueries
from tfviz.viz.instant import packed, slider
from tfviz.viz.instant_length import token_slider
from tfviz.viz.instant_pictures import index_layer, picture
from tfviz.viz.style import CATEGORICAL

ROW = "datum.layer == layer && datum.head == head && datum.q == query"
FREE_ROW = "datum.layer == layer && datum.head == head && datum.q == qi"  # length-free charts
BLUE, VERMILLION, GREY = CATEGORICAL[0], CATEGORICAL[5], "#bdbdbd"  # allowed, query, masked
NAMES = "Layer", "Head", "Query token"


def view_params(shape: tuple[int, int, int], layer: int, head: int,
                query: int | None, *, free: bool = False) -> list[dict]:
    """Layer, head and query-token sliders (no query slider when ``query`` is None). The
    token labels the expressions read travel with the data: pass ``tokens=token_labels(...)``
    to ``spec`` (``tfviz.viz.instant``'s docstring says why). ``free``: ``shape``'s length
    is the layout's ``length_cap`` and the query slider a ``token_slider`` (-1: the
    sentence's default query)."""
    n_layers, n_heads, n = shape
    params = [slider("layer", n_layers - 1, NAMES[0], layer),
              slider("head", n_heads - 1, NAMES[1], head)]
    if free:
        params.append(token_slider(n - 1, NAMES[2], query))
    elif query is not None:
        params.append(slider("query", n - 1, NAMES[2], query))
    return params


def query_rows(**fields: np.ndarray) -> list[dict]:
    """One row per (layer, head, query) of (L, H, n, m) arrays, each field packed over m.

    >>> query_rows(w=np.arange(8.0).reshape(1, 1, 2, 4))[1]
    {'layer': 0, 'head': 0, 'q': 1, 'w': '4,5,6,7'}
    """
    first = next(iter(fields.values()))
    return [{"layer": int(lyr), "head": int(h), "q": int(i),
             **{name: packed(a[lyr, h, i]) for name, a in fields.items()}}
            for lyr, h, i in np.ndindex(*first.shape[:3])]


def shown_weights(aq: AllQueries) -> np.ndarray:
    """The weights with NaN where the mask hides a key: ``packed`` sends those empty."""
    return np.where(aq.allowed, aq.weights, np.nan)


def split_keys(*fields: str, key: str = "key") -> list[dict]:
    """Transforms: split the packed ``fields`` of the chosen row, one datum per key (``key``
    numbered from 0)."""
    return [*({"calculate": f"split(datum.{f}, ',')", "as": f} for f in fields),
            {"flatten": list(fields)}, {"window": [{"op": "row_number", "as": key}]},
            {"calculate": f"datum.{key} - 1", "as": key}]


def keyed(view: dict, field: str = "cell") -> dict:
    """``view``'s marks matched to their data by ``field`` when the view changes: the browser
    then updates the SVG elements it has instead of replacing every one (a third less work
    per change on a heatmap)."""
    for layer in view.get("layer", [view]):
        layer["encoding"]["key"] = {"field": field}
    return view


def title_expr(text: str) -> dict:
    """A title whose text is a Vega expression (it follows the view parameters)."""
    return {"text": {"expr": text}}


WHERE = "' (layer ' + layer + ', head ' + head + ')'"


# --- signed matrices (q, k, v, z) as pictures ---------------------------------------------

# Vega's "redblue" reversed, at eleven stops (d3's RdBu): blue negative, white 0, red positive.
BLUE_RED = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7",
            "#f4a582", "#d6604d", "#b2182b", "#67001f"]


def signed_pictures(matrices: np.ndarray, *names: str) -> list[dict]:
    """``picture_rows`` for signed matrices: each (L, H, ...) matrix a picture coloured from
    −m (blue) to +m (red), m its largest |value|, sent as ``m`` for the legend.

    >>> row = signed_pictures(np.array([[[1.0, -2.0]]]), "layer")[0]
    >>> row["layer"], row["m"], row["img"][:22]
    (0, 2.0, 'data:image/png;base64,')
    """
    arr = np.asarray(matrices, dtype=float)
    rows = []
    for index in np.ndindex(*arr.shape[:len(names)]):
        m = float(np.abs(arr[index]).max()) or 1.0  # an all-zero matrix stays white
        rows.append({**dict(zip(names, (int(i) for i in index))), "m": round(m, 4),
                     "img": picture(arr[index], low=-m, high=m, colours=BLUE_RED)})
    return rows


def signed_picture_layer(cols: int, rows: int, *, x_title: str, y_title: str, value_title: str,
                         before: Sequence[dict], cell: int = 14, x_labels: str = "dims",
                         free: bool = False) -> dict:
    """A heatmap of token vectors (rows) drawn from a ``signed_pictures`` row that ``before``
    keeps: one image instead of rows × cols marks, so a view change swaps one picture (the
    matrices tab changed in ~70 ms as 1,000 cells). The axes name the tokens and dimensions;
    the legend runs from −m to +m of the picture shown. No hover values: step 2's table and
    the q row carry the numbers a learner checks. ``free``: ``rows`` is the layout's
    ``length_cap`` and the picture's ``ntok`` rows fill its height."""
    height = min(20 * rows, 720)
    image = {"transform": list(before),
             "mark": {"type": "image", "smooth": False, "aspect": False, "align": "left",
                      "baseline": "top", "aria": False, "width": cell * cols, "height": height},
             "encoding": {"url": {"field": "img", "type": "nominal"}, "x": {"value": 0},
                          "y": {"value": 0}}}
    x = index_layer("x", cols, title=x_title, labels=x_labels)
    y = index_layer("y", rows, title=y_title, free=free, overlap=False if rows <= 40 else None)
    legend = {"transform": [*before, {"calculate": "-datum.m", "as": "low"},
                            {"fold": ["low", "m"], "as": ["end", "v"]}],
              "mark": {"type": "point", "opacity": 0, "aria": False},
              "encoding": {"color": {"field": "v", "type": "quantitative", "title": value_title,
                                     "scale": {"scheme": "redblue", "reverse": True,
                                               "domainMid": 0}}}}
    return {"width": cell * cols, "height": height, "layer": [image, x, y, legend]}
