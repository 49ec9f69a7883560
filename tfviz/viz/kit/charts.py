"""The small toolkit every 2-D chart is written with: plain Vega-Lite dicts, no altair.

A builder returns ``chart(body, title=..., description=..., rows=...)``: ``body`` is one view
(``mark`` and ``encoding``), a ``layer`` or a ``concat``; ``rows`` (a list of flat dicts) travel
as the dataset ``ROWS``, which ``tfviz.ui.widgets.vega`` sends as Arrow bytes and every view
reads with ``data=ROWS`` (the default of ``view``). Other named ``datasets`` hold what a layer
draws besides (a rule at chance); "The numbers as a table" under the chart lists ``ROWS``. The
pieces an encoding is made of are ``q`` / ``n`` / ``o`` (a quantitative, nominal or ordinal
field), ``colour`` (a field's colours from ``tfviz.viz.kit.style``) and ``tip`` (a tooltip). Heatmaps over tokens, sliders and the other
view controls are the instant views' (``tfviz.viz.kit.instant``): a chart with view controls is
``instant.spec``, laid out the same way.

>>> c = chart(view("bar", x=q("p"), y=n("token")), title="Guesses", description="Two bars.",
...           rows=[{"token": "a", "p": 0.6}, {"token": "b", "p": 0.4}])
>>> c["datasets"]["rows"][0], c["data"], c["encoding"]["x"]
({'token': 'a', 'p': 0.6}, {'name': 'rows'}, {'field': 'p', 'type': 'quantitative'})
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.viz.kit.style import CATEGORICAL, readable_config

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


def chart(body: dict, *, title=None, description: str, rows: Sequence[dict] | None = None,
          datasets: dict[str, list] | None = None, config: dict | None = None, **top) -> dict:
    """A whole chart: ``body`` with the schema, projector-sized text (``style.readable_config``,
    plus ``config``), its ``title`` and ``description``, and its rows as named datasets
    (``rows`` is the dataset ``ROWS``).

    ``description`` says in words what the chart shows: Vega makes it the chart's accessible
    name, what a screen reader says first, so it is required. ``top`` adds top-level settings
    (width, height, params, resolve).
    """
    if not description.strip():
        raise ValueError("a chart needs a description: what it shows, in words")
    sets = dict(datasets or {})
    if rows is not None:
        sets[ROWS] = list(rows)
    base = readable_config()
    for key, extra in (config or {}).items():
        base[key] = {**base.get(key, {}), **extra}
    out = {"$schema": SCHEMA, "description": description, "config": base, **top, **body}
    if rows is not None:  # the chart's own rows: views reading other datasets draw decoration
        out.setdefault("data", {"name": ROWS})
    if sets:
        out["datasets"] = sets
    if title is not None:
        out["title"] = title
    return out


def rows_of(spec: dict, name: str = ROWS) -> list[dict]:
    """The rows a chart built here carries in its dataset ``name`` (what its views draw)."""
    return list(spec["datasets"][name])
