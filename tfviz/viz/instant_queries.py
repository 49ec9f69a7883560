"""Rows of per-query numbers and the view controls that the attention lessons' instant charts
share (lessons 4 and 5; issue #15).

A dataset row holds one (layer, head, query) and that query's numbers over the keys, packed as
in ``tfviz.viz.instant.packed``; a weight the mask hides is sent empty, so the browser knows
the mask without a separate field. ``split_keys`` turns the chosen row back into one datum per
key in the browser.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.attention import AllQueries
from tfviz.viz.instant import choice, constant, packed, slider
from tfviz.viz.style import CATEGORICAL, token_labels

ROW = "datum.layer == layer && datum.head == head && datum.q == query"
BLUE, VERMILLION, GREY = CATEGORICAL[0], CATEGORICAL[5], "#bdbdbd"  # allowed, query, masked
NAMES = "Layer", "Head", "Query token"


def view_params(shape: tuple[int, int, int], tokens: Sequence[str], layer: int, head: int,
                query: int | None) -> list[dict]:
    """Layer and head sliders, the query token's select box (unless ``query`` is None) and
    the token labels ``tokens`` the expressions read."""
    n_layers, n_heads, n = shape
    labels = token_labels(tokens)
    params = [slider("layer", n_layers - 1, NAMES[0], layer),
              slider("head", n_heads - 1, NAMES[1], head)]
    if query is not None:
        params.append(choice("query", range(n), labels, NAMES[2], query))
    return [*params, constant("tokens", labels)]


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
    per change on the matrices tab)."""
    for layer in view.get("layer", [view]):
        layer["encoding"]["key"] = {"field": field}
    return view


def vector_rows(view: dict, n: int) -> dict:
    """A heatmap of n token vectors (from ``heat_layer``) with rows 20 px high, at most 720 px
    in all; up to 40 rows every token keeps its label (a longer text shows every k-th)."""
    view["height"] = min(20 * n, 720)
    if n <= 40:
        view["layer"][0]["encoding"]["y"]["axis"]["labelOverlap"] = False
    return keyed(view)


def title_expr(text: str) -> dict:
    """A title whose text is a Vega expression (it follows the view parameters)."""
    return {"text": {"expr": text}}


WHERE = "' (layer ' + layer + ', head ' + head + ')'"
