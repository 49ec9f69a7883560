"""The one constructor every chart is built with, and the pieces of an encoding: plain
Vega-Lite dicts, no altair.

A builder returns ``chart(body, title=..., description=..., rows=...)``: ``body`` is one view
(``mark`` and ``encoding``), a ``layer`` or a ``concat``; ``rows`` (a list of flat dicts) travel
as the dataset ``ROWS``, which ``tfviz.ui.drawing.vega`` sends as Arrow bytes and every view
reads with ``data=ROWS`` (the default of ``view``). Other named ``datasets`` hold what a layer
draws besides (a rule at chance); "The numbers as a table" under the chart lists ``ROWS``. The
pieces an encoding is made of are ``q`` / ``n`` / ``o`` (a quantitative, nominal or ordinal
field), ``colour`` (a field's colours from ``tfviz.viz.kit.style``) and ``tip`` (a tooltip).
A chart with view controls (sliders, heatmaps over tokens: ``tfviz.viz.kit.instant``) is built
by the same ``chart``, with its ``params``, ``tokens`` and ``own_size``.

>>> c = chart(view("bar", x=q("p"), y=n("token")), title="Guesses", description="Two bars.",
...           rows=[{"token": "a", "p": 0.6}, {"token": "b", "p": 0.4}])
>>> c["datasets"]["rows"][0], c["data"], c["encoding"]["x"]
({'token': 'a', 'p': 0.6}, {'name': 'rows'}, {'field': 'p', 'type': 'quantitative'})
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.viz.kit.instant import renderer, with_tokens
from tfviz.viz.kit.style import CATEGORICAL, GREY, chart_config

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
ROWS = "rows"  # the dataset a chart's views read unless they name another


UNSET = "unset"  # a field's title when none is given: Vega-Lite then shows the field's name


def _field(name: str, kind: str, title, extra: dict) -> dict:
    out = {"field": name, "type": kind}
    if title != UNSET:
        out["title"] = title  # None: no title at all (a legend the chart's words explain)
    return {**out, **extra}


def q(name: str, title: str | None = UNSET, **extra) -> dict:
    """A quantitative field; ``extra`` adds scale, axis, format... as Vega-Lite spells them.
    ``title`` None draws no title; left out, the field's name is the title."""
    return _field(name, "quantitative", title, extra)


def n(name: str, title: str | None = UNSET, **extra) -> dict:
    """A nominal field (names: a token, a run, a method)."""
    return _field(name, "nominal", title, extra)


def o(name: str, title: str | None = UNSET, **extra) -> dict:
    """An ordinal field (positions, layers: ordered, drawn as bands)."""
    return _field(name, "ordinal", title, extra)


def colour(name: str, domain: Sequence, colours: Sequence[str] | None = None, *,
           title: str | None = UNSET, **extra) -> dict:
    """A nominal colour encoding: ``domain``'s values in ``colours`` (the Okabe-Ito palette,
    ``style.CATEGORICAL``, in order unless given), so a value keeps its colour on every chart.

    >>> colour("run", ["a", "b"])["scale"]
    {'domain': ['a', 'b'], 'range': ['#0072B2', '#E69F00']}
    """
    domain = list(domain)
    colours = list(colours) if colours is not None else CATEGORICAL[:max(1, len(domain))]
    return n(name, title, scale={"domain": domain, "range": colours}, **extra)


def tip(*fields) -> list[dict]:
    """A tooltip: each entry a name ("run"), a name with a d3 format ("loss:.3f"), or a dict.

    >>> tip("run", "loss:.3f")
    [{'field': 'run'}, {'field': 'loss', 'format': '.3f'}]
    """
    out = []
    for f in fields:
        if isinstance(f, dict):
            out.append(f)
            continue
        name, _, fmt = f.partition(":")
        out.append({"field": name, **({"format": fmt} if fmt else {})})
    return out


def view(mark, *, data: str | None = ROWS, transform: Sequence[dict] = (), **encoding) -> dict:
    """One view: ``mark`` (a name or a dict) with its ``encoding`` channels, reading the dataset
    ``data`` (None: the enclosing chart's), after ``transform``. Channel names as in Vega-Lite,
    ``color`` included.

    >>> view("line", x=q("n"), y=q("t"))["mark"]
    {'type': 'line'}
    """
    out = {"mark": mark if isinstance(mark, dict) else {"type": mark},
           "encoding": {k: v for k, v in encoding.items() if v is not None}}
    if data is not None:
        out["data"] = {"name": data}
    if transform:
        out["transform"] = list(transform)
    return out


def dashed_rule(data: str, **encoding) -> dict:
    """A grey dashed line reading the dataset ``data``: a reference the chart's lines are read
    against (chance, the loss before pruning, the trained length).

    >>> dashed_rule("chance", y=q("y"))["mark"]
    {'type': 'rule', 'strokeDash': [4, 4], 'color': '#555555'}
    """
    return view({"type": "rule", "strokeDash": [4, 4], "color": GREY}, data=data, **encoding)


def chart(body: dict, *, description: str, title=None, params: Sequence[dict] = (),
          rows: Sequence[dict] | None = None, datasets: dict[str, list] | None = None,
          tokens: Sequence[str] | None = None, marks: int | None = None, own_size: bool = False,
          config: dict | None = None, free: bool = False, default_query: int | None = None,
          sentence: dict | None = None, defaults: dict[str, int] | None = None, **top) -> dict:
    """A whole chart, the one way every chart of tfviz is built: ``body`` (a view, a ``layer``
    or a ``concat``) with the schema, the one config (``style.chart_config``, plus ``config``
    for this chart's own settings), its ``title`` and ``description``, its view controls
    ``params`` and its rows as named datasets (``rows`` is the dataset ``ROWS``).

    ``description`` says in words what the chart shows: Vega makes it the chart's accessible
    name, what a screen reader says first, so it is required (and, for an instant chart, names
    nothing of the sentence).

    ``marks``, the number of marks drawn (else the rows it carries), picks the renderer
    (``instant.renderer``: SVG with an ARIA label on each mark while few, a canvas beyond).
    ``own_size``: the chart keeps the size its views declare (heatmaps whose cells keep their
    size) rather than the column's width. ``tokens`` (labels such as "3 ␣sat") ride in the
    first row of the first dataset with what else ``free``, ``default_query``, ``sentence``
    and ``defaults`` say of the sentence (``instant.with_tokens``). ``top`` adds other
    top-level settings (width, height, resolve).
    """
    if not description.strip():
        raise ValueError("a chart needs a description: what it shows, in words")
    sets = dict(datasets or {})
    if rows is not None:
        sets[ROWS] = list(rows)
    params = list(params)
    if tokens is not None:
        params, sets = with_tokens(params, sets, tokens, free=free, default_query=default_query,
                                   sentence=sentence, defaults=defaults)
    base = chart_config()
    for key, extra in (config or {}).items():
        base[key] = {**base.get(key, {}), **extra}
    if marks is None:
        marks = sum(len(r) for r in sets.values())
    out = {"$schema": SCHEMA, "description": description, "config": base,
           "usermeta": {"embedOptions": {"renderer": renderer(marks), "actions": False}},
           **({"params": params} if params else {}), **top, **body}
    if own_size:
        out["autosize"] = {"type": "pad"}  # every view keeps its own size (no fit to the page)
    if rows is not None:  # the chart's own rows: views reading other datasets draw decoration
        out.setdefault("data", {"name": ROWS})
    if sets:
        out["datasets"] = sets
    if title not in (None, ""):
        out["title"] = title
    return out
