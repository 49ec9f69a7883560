"""One query's numbers over the keys, a dataset row each: the rows and view controls that the
charts of attention's steps share (lessons 4 and 5).

A row holds one (layer, head, query) and that query's numbers over the keys, packed as in
``tfviz.viz.kit.instant.packed``; a weight the mask hides is sent empty, so the browser knows
the mask without a separate field, and ``split_keys`` turns the chosen row back into one datum
per key in the browser. The layer, head and query are view parameters (``view_params``):
``query`` is the slider's start (-1 or None: the sentence's ``default_query``, else its last
token), and a length-free chart's expressions read the query shown as ``qi``.
"""

from __future__ import annotations

import numpy as np

from tfviz.analysis.attention import AllQueries
from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import layer_head, packed, slider
from tfviz.viz.kit.instant_length import length_cap, token_slider
from tfviz.viz.kit.style import token_labels


ROW = "datum.layer == layer && datum.head == head && datum.q == query"
FREE_ROW = "datum.layer == layer && datum.head == head && datum.q == qi"  # length-free charts
NAMES = "Layer", "Head", "Query token"


def view_params(shape: tuple[int, int, int], layer: int, head: int,
                query: int | None, *, free: bool = False) -> list[dict]:
    """Layer, head and query-token sliders (no query slider when ``query`` is None). The
    token labels the expressions read travel with the data: pass ``tokens=token_labels(...)``
    to ``chart`` (``tfviz.viz.kit.instant``'s docstring says why). ``free``: ``shape``'s length
    is the layout's ``length_cap`` and the query slider a ``token_slider`` (-1: the
    sentence's default query)."""
    n_layers, n_heads, n = shape
    params = layer_head(n_layers, n_heads, layer, head)
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
