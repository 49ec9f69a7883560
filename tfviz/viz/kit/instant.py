"""Instant views: every view of one trace in a single Vega-Lite spec, switched in the browser.

Once a trace exists (model, text, what-ifs), the data behind every view of it is
small: for gpt-tiny, 3 layers x 4 heads x n x n attention weights and a few vectors per token.
So the server sends all of it once, and the view controls (layer, head, query token, step)
are Vega-Lite parameters bound to HTML inputs under the chart. Moving one filters the data in
the browser and repaints: no script rerun, no round trip (BENCHMARKS.md: "Instant views").

The conventions every instant chart shares:

- A view control is a *variable parameter* named after its URL key (``layer``, ``head``,
  ``query``, ...; ``VIEW_KEYS``) and bound to a labelled range slider or select box. The page's
  small script (``tfviz.ui.views``) keeps the URL in step with these inputs and moves every
  input of the same name together, so a shared link opens the same view.
- Matrices travel compactly: one row per (layer, head) holding the n x n values as a flat
  list, rounded to ``DIGITS`` decimals (``stack_rows``). A chart filters the rows it needs,
  then ``unpack`` flattens them and numbers the cells back into (row, col).
- Charts with up to SVG_MARKS marks draw as SVG (``usermeta.embedOptions.renderer``), so every
  mark carries an ARIA label with its values: screen readers and the browser tests read the
  numbers drawn. Bigger ones (long texts) draw on a canvas, which redraws much faster; the
  maps of a long text travel as pictures (``tfviz.viz.kit.instant_pictures``).
- Token labels ("3 ␣sat") are read by position from the expression ``tokens`` (a repeated word
  stays two columns). They travel with the data, not in the spec (``chart(..., tokens=...)``):
  Streamlit redraws a chart from scratch when its spec changes but only swaps the data when it
  does not, so a new sentence of the same length costs a data swap, not a new chart
  (BENCHMARKS.md, "Instant views"). For the same reason a token is chosen with a slider, and
  the chart's title names it: a select box would carry the words in its options.
- Lesson 5's charts go further and hold nothing of the sentence's length either
  (``tfviz.viz.kit.instant_length``), so a sentence of another length swaps data too.

Everything here returns plain dicts (JSON); ``tests/unit/viz/test_instant.py`` validates them
against altair's Vega-Lite schema and checks the values against the trace.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.instant_length import (POSITIONS, SENTENCE_PREFIX, TOKENS_DOMAIN, length_params,
                                     sentence_params, shown_names)
from tfviz.viz.kit.conventions import cell_size, range_bind
from tfviz.viz.kit.style import FONT_SIZE

#: URL keys that instant charts own (the browser writes them, the server only reads them once).
VIEW_KEYS = ("layer", "head", "query", "step", "expert", "pos", "norm", "neurons")
DIGITS = 4  # decimals sent to the browser: the pages print 3-4, and hover shows 4
SCHEME = "cividis"  # perceptually uniform and colour-blind safe
DIVERGING_SCHEME = "redblue"  # reversed below so that blue is negative, red positive


def slider(name: str, upper: int, label: str, value: int = 0, *, lower: int = 0) -> dict:
    """A whole-number parameter lower..upper bound to a labelled range slider (arrow keys move
    it), opening on ``value`` kept in range."""
    return {"name": name, "value": int(min(max(value, lower), upper)),
            "bind": range_bind(label, upper, lower)}


def layer_head(n_layers: int, n_heads: int, layer: int = 0, head: int = 0) -> list[dict]:
    """The layer and head sliders of a chart that shows one head at a time.

    >>> [p["bind"]["name"] for p in layer_head(3, 4, head=9)], layer_head(3, 4, head=9)[1]["value"]
    (['Layer ', 'Head '], 3)
    """
    return [slider("layer", n_layers - 1, "Layer", layer), slider("head", n_heads - 1, "Head", head)]


def choice(name: str, options: Sequence[int], labels: Sequence[str], label: str,
           value: int | None = None) -> dict:
    """A parameter chosen from ``options`` in a labelled select box showing ``labels``."""
    options = [int(o) for o in options]
    value = options[0] if value is None or int(value) not in options else int(value)
    return {"name": name, "value": value,
            "bind": {"input": "select", "options": options, "labels": [str(x) for x in labels],
                     "name": f"{label} "}}


def constant(name: str, value) -> dict:
    """A parameter the expressions read (token labels, head names); never shown as an input."""
    return {"name": name, "value": value}


SEPARATOR = "\x1f"  # between the token labels packed into one string (unit separator)


def tokens_param(dataset: str) -> dict:
    """The expression ``tokens``: the token labels that ``chart(..., tokens=...)`` packed into
    the first row of ``dataset``. Empty while the chart waits for its data."""
    rows = f"data('{dataset}')"
    return {"name": "tokens",
            "expr": f"length({rows}) ? split({rows}[0].tokens, '\\u001f') : []"}


def spec_tokens(chart: dict) -> list[str]:
    """The token labels a chart from ``chart(..., tokens=...)`` carries (what its expression
    ``tokens`` reads in the browser), or those of a ``constant`` named ``tokens``; [] for a
    chart without them."""
    param = next((p for p in chart.get("params", []) if p["name"] == "tokens"), None)
    if param is None:
        return []
    if "expr" not in param:  # a chart whose spec holds its labels (``constant``)
        return list(param["value"])
    dataset = param["expr"].split("data('", 1)[1].split("'", 1)[0]
    return chart["datasets"][dataset][0]["tokens"].split(SEPARATOR)


def rounded(values):
    """Plain floats (or one float) rounded to DIGITS decimals; -inf or nan (a masked score)
    becomes None.

    >>> rounded([0.123456, float("-inf")]), rounded(np.float32(2.5))
    ([0.1235, None], 2.5)
    """
    arr = np.asarray(values, dtype=float)
    out = np.where(np.isfinite(arr), np.round(arr, DIGITS), np.nan).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def packed(values) -> str:
    """Numbers as one comma-separated string, rounded to DIGITS decimals; a masked (-inf or nan)
    entry is left empty. Streamlit sends a chart's datasets as Arrow tables, which carry a
    string column as it is, while a list column arrives in the browser as an Arrow vector
    that Vega cannot flatten; ``unpack`` splits the string again.

    >>> packed([0.5, 1 / 3, float("-inf"), -2.0])
    '0.5,0.3333,,-2'
    """
    arr = np.round(np.ravel(np.asarray(values, dtype=float)), DIGITS)
    arr[~np.isfinite(arr)] = np.nan  # formatted "nan", then emptied: far faster than a test per value
    return ",".join(map("{:g}".format, arr.tolist())).replace("nan", "")


def stack_rows(matrices: np.ndarray, *names: str) -> list[dict]:
    """One row per leading index of ``matrices`` (shape (*lead, rows, cols)) with its matrix,
    row after row, packed into the string ``v``: ``stack_rows(patterns, "layer", "head")``
    for (layers, heads, n, n).

    >>> stack_rows(np.arange(8.0).reshape(2, 2, 2), "head")
    [{'head': 0, 'v': '0,1,2,3'}, {'head': 1, 'v': '4,5,6,7'}]
    """
    arr = np.asarray(matrices, dtype=float)
    rows = []
    for index in np.ndindex(*arr.shape[:len(names)]):
        row = dict(zip(names, (int(i) for i in index)))
        row["v"] = packed(arr[index])
        rows.append(row)
    return rows


def unpack(cols: int | str, *, group: Sequence[str] = ()) -> list[dict]:
    """Transforms that turn the rows of ``stack_rows`` back into one datum per cell, with
    ``row``, ``col`` and the number ``v`` (None where masked), after a filter has kept the
    rows of the view. ``cols`` may be an expression ("ntok")."""
    return [{"calculate": "split(datum.v, ',')", "as": "v"},
            {"flatten": ["v"]},
            {"window": [{"op": "row_number", "as": "cell"}], "groupby": list(group)},
            {"calculate": "datum.v === '' ? null : toNumber(datum.v)", "as": "v"},
            {"calculate": f"floor((datum.cell - 1) / {cols})", "as": "row"},
            {"calculate": f"(datum.cell - 1) % {cols}", "as": "col"}]


def token_axis(title: str, *, labels: str = "tokens", n: int | None = None,
               free: bool = False) -> dict:
    """An axis whose ticks are positions and whose labels are ``labels[position]``. Past 40
    positions only every k-th is labelled (more overlap at projector size); ``free`` (a
    length-free chart, ``n`` its ``length_cap``) works k out from ``ntok`` in the browser."""
    axis = {"title": title, "labelExpr": f"{labels}[datum.value]", "labelLimit": 160,
            "labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE}
    if n is not None and n > 40 and free:
        axis["labelExpr"] = f"datum.value % ceil(ntok / 40) ? '' : {labels}[datum.value]"
        axis["ticks"] = False
    elif n is not None and n > 40:
        step = -(-n // 40)
        axis["values"] = list(range(0, n, step))
    return axis


def heat_layer(cols: int, rows: int, *, x_title: str, y_title: str, value_title: str,
               before: Sequence[dict] = (),
               x_labels: str = "tokens", y_labels: str = "tokens", domain=(0.0, 1.0),
               diverging: bool = False, text: bool | None = None, cell: int | None = None,
               legend: bool = True, x_axis: bool = True, y_axis: bool = True,
               aria: bool = True, masked: bool = True, free: bool = False) -> dict:
    """A heatmap of the cells that the transforms ``before`` produce (fields row, col, v).
    Rows are drawn top to bottom, like a matrix on paper; with ``masked``, empty (None) cells
    (a masked score) are left blank. ``free``: a token × token map of a length-free chart,
    ``cols`` and ``rows`` being its ``length_cap``: the cells keep their size, the map has
    ``ntok`` of them a side, and numbers are written in them up to 12 tokens. ``domain``, the
    colour range, may be an expression instead ("[-bound, bound]"): a range that follows the
    sentence and rides in the data (``instant_length.sentence_params``).

    Every cell costs the browser a few interpreted expressions per redraw (Streamlit runs Vega
    with its CSP-safe expression interpreter), so long texts get plainer cells: no token names
    on hover past 1,024 cells."""
    cell = cell or cell_size(cols, rows)
    scale = ({"domain": {"expr": domain} if isinstance(domain, str) else list(domain)}
             if domain is not None else {})
    if diverging:
        scale.update(scheme=DIVERGING_SCHEME, reverse=True, domainMid=0)
    else:
        scale.update(scheme=SCHEME)
    colour = {"field": "v", "type": "quantitative", "title": value_title, "scale": scale}
    if not legend:
        colour["legend"] = None
    rect = {
        "mark": {"type": "rect", "aria": aria},  # aria: each cell's values as an ARIA label
        "encoding": {
            "x": {"field": "col", "type": "ordinal",
                  "axis": token_axis(x_title, labels=x_labels, n=cols, free=free) if x_axis
                  else {"title": x_title or None, "labels": False, "ticks": False},
                  "scale": {"domain": TOKENS_DOMAIN if free else list(range(cols))}},
            "y": {"field": "row", "type": "ordinal",
                  "axis": token_axis(y_title, labels=y_labels, n=rows, free=free) if y_axis
                  else {"title": y_title or None, "labels": False, "ticks": False},
                  "scale": {"domain": TOKENS_DOMAIN if free else list(range(rows))}},
            "color": colour,
            "tooltip": [{"field": "rowlabel", "title": y_title},
                        {"field": "collabel", "title": x_title},
                        {"field": "v", "title": value_title, "format": ".4f"}],
        },
    }
    labelled = cols * rows <= 1024  # token names on hover; skipped for long texts (a cost per cell)
    if not labelled:
        rect["encoding"]["tooltip"] = [{"field": "row", "title": y_title}, {"field": "col", "title": x_title},
                                       {"field": "v", "title": value_title, "format": ".4f"}]
    layers = [{"transform": [{"filter": "isValid(datum.v)"}], **rect} if masked else rect]
    if text is None:
        text = cols * rows <= (256 if free else 144)
    if text:
        middle = "0.5" if not diverging else "0"
        shown = [*(["isValid(datum.v)"] if masked else []), *(["ntok <= 12"] if free else [])]
        layers.append({
            **({"transform": [{"filter": " && ".join(shown)}]} if shown else {}),
            "mark": {"type": "text", "fontSize": FONT_SIZE - 4},
            "encoding": {
                "x": {"field": "col", "type": "ordinal"}, "y": {"field": "row", "type": "ordinal"},
                "text": {"field": "v", "type": "quantitative", "format": ".2f"},
                "color": {"condition": {"test": f"abs(datum.v) > {middle} || datum.v > {middle}",
                                        "value": "black"}, "value": "white"} if not diverging else
                {"value": "black"},
            }})
    size = ({"width": {"step": cell}, "height": {"step": cell}} if free else
            {"width": cell * cols, "height": cell * rows})
    return {**size,
            "transform": [*before, *([{"calculate": f"{y_labels}[datum.row]", "as": "rowlabel"},
                                      {"calculate": f"{x_labels}[datum.col]", "as": "collabel"}]
                                     if labelled else [])],
            "layer": layers}


SVG_MARKS = 1500  # more marks than this draw on a canvas (bench/bench_views.py, BENCHMARKS.md)


def renderer(marks: int) -> str:
    """SVG while a chart has few marks: each mark is an element with an ARIA label (screen
    readers and the browser tests read the values drawn). Redrawing thousands of SVG
    elements is slow, a canvas is not (bench/bench_views.py).

    >>> renderer(13 * 13 * 5), renderer(64 * 64 * 5)
    ('svg', 'canvas')
    """
    return "svg" if marks <= SVG_MARKS else "canvas"


def with_tokens(params: Sequence[dict], datasets: dict[str, list], tokens: Sequence[str], *,
                free: bool = False, default_query: int | None = None, sentence: dict | None = None,
                defaults: dict[str, int] | None = None) -> tuple[list[dict], dict[str, list]]:
    """``params`` and ``datasets`` with the token labels (and what else of the sentence the
    expressions read) riding in the first row of the first dataset, as ``charts.chart(...,
    tokens=...)`` builds them: the spec then holds nothing of the sentence but its length, and
    a new sentence only swaps the data (module docstring).

    ``free`` (a length-free chart, laid out for ``length_cap``) adds the expression ``ntok``;
    with a query slider among ``params``, the sentence's ``default_query`` (else its last
    token) rides in the first row too, for the expressions ``dq`` and ``qi``
    (``length_params``): the spec then holds nothing of the sentence at all. Another token
    slider (``instant_length.POSITIONS``: ``pos``) opens where ``defaults`` says, else on the
    last token, read the same way (``dpos``, ``posi``). ``sentence``: numbers or strings of
    the whole sentence that the expressions read by name (``instant_length.sentence_params``),
    riding in that first row too."""
    first = next(iter(datasets))
    rows = list(datasets[first])
    rows[0] = {**rows[0], "tokens": SEPARATOR.join(str(t).replace(SEPARATOR, " ") for t in tokens)}
    positions = [p["name"] for p in params if free and p["name"] in POSITIONS]
    opens = {"query": default_query, **(defaults or {})}
    for slider in positions:
        at = opens.get(slider)
        rows[0][shown_names(slider)[0]] = int(len(tokens) - 1 if at is None else at)
    rows[0].update({f"{SENTENCE_PREFIX}{k}": v for k, v in (sentence or {}).items()})
    params = [*params, tokens_param(first), *sentence_params(first, sentence or {})]
    if free:
        params += length_params(first, positions)
    return params, {**datasets, first: rows}
