"""Whole charts of one matrix, built on ``instant.heat_layer``: a labelled matrix packed into
one data row (``matrix_chart``: embedding rows, the sine table, γ and β, a picture's patches),
and the length-free map of one row per token of the learner's sentence (``token_rows_chart``).
Pure: arrays and labels in, Vega-Lite dicts out."""
from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import constant, heat_layer, packed, token_axis, unpack
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap


def matrix_rows(values) -> list[dict]:
    """One matrix (rows, cols) as the single packed row ``matrix_layer`` unpacks.

    >>> matrix_rows(np.array([[1.0, 2.0], [3.0, float("-inf")]]))
    [{'v': '1,2,3,'}]
    """
    return [{"v": packed(values)}]


def matrix_bound(values) -> float:
    """The colour range ±bound a diverging map of ``values`` is drawn on: its largest finite
    |value|, 1 for none.

    >>> matrix_bound([[0.5, -2.0], [float("-inf"), 1.0]]), matrix_bound([[0.0]])
    (2.0, 1.0)
    """
    arr = np.asarray(values, dtype=float)
    finite = np.abs(arr[np.isfinite(arr)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def matrix_layer(rows: int, cols: int, *, x_title: str, y_title: str, value_title: str = "value",
                 x_labels: str = "xlabels", y_labels: str = "ylabels", keep: dict | None = None,
                 width: int | None = None, height: int | None = None, **heat) -> dict:
    """``heat_layer`` for a matrix that travels as packed rows (``matrix_rows`` or
    ``stack_rows``; ``keep`` filters the one to draw), its tick labels read from the
    expressions ``x_labels`` and ``y_labels`` (``constant`` parameters holding the names).
    ``width`` and ``height`` stretch the cells to a size of their own (a table of 64 dimensions
    need not be 64 cells wide at the size of a token's), else they are square."""
    view = heat_layer(cols, rows, x_title=x_title, y_title=y_title, value_title=value_title,
                      before=[*([keep] if keep else []), *unpack(cols)],
                      x_labels=x_labels, y_labels=y_labels, **heat)
    if width:
        view["width"] = width
    if height:
        view["height"] = height
    y_axis = view["layer"][0]["encoding"]["y"]["axis"]
    # Rows with room for their labels, also at presenter view's 24 px on rows 1.5 times taller,
    # keep every label: Vega's own overlap check dropped every other token at 22 px a row.
    if rows <= 40 and view["height"] / max(rows, 1) >= 20:
        y_axis["labelOverlap"] = False
    return view


def matrix_chart(values, *, title, description: str, x_title: str, y_title: str,
                 x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None,
                 value_title: str = "value", diverging: bool = False, domain=None,
                 text: bool = False, width: int | None = None, height: int | None = None,
                 extra_layers: Sequence[dict] = ()) -> dict:
    """A whole chart of one labelled matrix, rows top to bottom like a matrix on paper: the
    one heatmap recipe of the static charts (embedding rows, the sine table, γ and β).
    ``diverging`` maps (blue negative, red positive) run from −bound to +bound
    (``matrix_bound``) unless ``domain`` is given; -inf or nan cells are left blank.
    ``extra_layers`` are drawn on top of the cells (a frame, a marker)."""
    arr = np.asarray(values, dtype=float)
    n_rows, n_cols = arr.shape
    x_labels = [str(x) for x in (x_labels if x_labels is not None else range(n_cols))]
    y_labels = [str(y) for y in (y_labels if y_labels is not None else range(n_rows))]
    if domain is None and diverging:
        domain = (-matrix_bound(arr), matrix_bound(arr))
    view = matrix_layer(n_rows, n_cols, x_title=x_title, y_title=y_title, value_title=value_title,
                        diverging=diverging, domain=domain, text=text, width=width, height=height)
    if max(map(len, x_labels), default=0) <= 3:  # numbers: upright, as many as fit side by side
        view["layer"][0]["encoding"]["x"]["axis"]["labelAngle"] = 0
    if extra_layers:
        view["layer"] += list(extra_layers)
    return chart({"data": {"name": "matrix"}, **view},
                 params=[constant("xlabels", x_labels), constant("ylabels", y_labels)],
                 datasets={"matrix": matrix_rows(arr)}, title=title, description=description,
                 marks=arr.size, own_size=True)


def counted_title(text: str) -> str | dict:
    """A length-free chart's title: ``text`` with "{n}" standing for the sentence's number of
    tokens, which the browser fills in from ``ntok``; without "{n}" the text as it is.

    >>> counted_title("Rows of your {n} tokens")
    {'text': {'expr': '"Rows of your " + ntok + " tokens"'}}
    """
    if "{n}" not in text:
        return text
    before, after = text.split("{n}", 1)
    return {"text": {"expr": f"{json.dumps(before)} + ntok + {json.dumps(after)}"}}


def token_rows_chart(values, tokens: Sequence[str], *, title: str, description: str,
                     x_title: str, y_title: str = "token", value_title: str = "value",
                     width: int, row: int = 22, most: int = 1000,
                     bound: float | None = None) -> dict:
    """``matrix_chart`` of one row per token of the sentence (embedding rows, a model's outputs)
    across a fixed number of numbered columns (dimensions), blue negative and red positive.
    Length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap(n)`` rows of ``row``
    px, fewer once the cap's rows would pass ``most`` px; the labels ``tokens``, the title's
    count ("{n}", ``counted_title``) and the colour range ±``bound`` (default
    ``matrix_bound``) ride in the data. So a new sentence whose length keeps the cap swaps
    the data. Its cells carry no ARIA label each: there are hundreds, and their numbers reach
    a screen reader as the table under the chart (``ui.drawing.numbers_expander``)."""
    arr = np.asarray(values, dtype=float)
    n_rows, n_cols = arr.shape
    cap = length_cap(n_rows)
    step = max(2, min(row, most // cap))
    view = matrix_layer(cap, n_cols, x_title=x_title, y_title=y_title, value_title=value_title,
                        y_labels="tokens", diverging=True, domain="[-bound, bound]", text=False,
                        width=width, aria=False)
    rect = view["layer"][0]["encoding"]
    axis = token_axis(y_title, n=cap, free=True)
    if step >= 20:  # every label has room: keep them all (``matrix_layer``)
        axis["labelOverlap"] = False
    rect["y"] = {**rect["y"], "axis": axis, "scale": {"domain": TOKENS_DOMAIN}}
    rect["x"]["axis"]["labelAngle"] = 0  # column numbers: upright, as many as fit
    view["height"] = {"step": step}
    return chart({"data": {"name": "matrix"}, **view},
                 params=[constant("xlabels", [str(c) for c in range(n_cols)])],
                 datasets={"matrix": matrix_rows(arr)}, title=counted_title(title),
                 description=description, marks=n_cols * cap, tokens=tokens, free=True,
                 sentence={"bound": float(bound) if bound is not None else matrix_bound(arr)},
                 own_size=True)
