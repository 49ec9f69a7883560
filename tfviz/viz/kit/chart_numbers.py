"""The numbers behind a chart, as tables: each matrix a chart draws, named, with the labels of
its rows and columns. A chart's text alternative is not only its name (``style.described``):
its numbers must be reachable without seeing it (WCAG 2.2 AA, 1.1.1), and a screen reader
reads a table cell by cell. ``tfviz.ui.tables.numbers_table`` draws one of them at a time.

>>> [m.name for m in heads("encoder self-attention", np.zeros((1, 2, 3, 3)), "abc", "abc")]
['encoder self-attention · layer 0, head 0', 'encoder self-attention · layer 0, head 1']
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.viz.kit.instant import spec_tokens
from tfviz.viz.kit.style import token_labels


@dataclass(frozen=True)
class Numbers:
    """One matrix as a table: ``values`` (rows, cols), masked cells as nan."""
    name: str
    values: np.ndarray
    rows: tuple[str, ...]
    cols: tuple[str, ...]


def unique(labels: Sequence[str]) -> tuple[str, ...]:
    """Labels made distinct for a table's header (a repeated token gets " (2)", " (3)"...).

    >>> unique(["a", "b", "a", "a"])
    ('a', 'b', 'a (2)', 'a (3)')
    """
    seen: dict[str, int] = {}
    out = []
    for label in map(str, labels):
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return tuple(out)


def matrix(name: str, values, rows: Sequence[str], cols: Sequence[str]) -> Numbers:
    values = np.asarray(values, dtype=float)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"{name}: {values.shape} values for {len(rows)} × {len(cols)} labels")
    return Numbers(name, values, unique(rows), unique(cols))


def heads(name: str, maps: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> list[Numbers]:
    """Attention maps (layers, heads, rows, cols), one table per layer and head, labelled as
    the charts label tokens ("0 h", "1 e", ...)."""
    maps = np.asarray(maps)
    rows, cols = token_labels(rows), token_labels(cols)
    return [matrix(f"{name} · layer {layer}, head {head}", maps[layer, head], rows, cols)
            for layer in range(maps.shape[0]) for head in range(maps.shape[1])]


def forward_walk(steps_by_head: Sequence[Sequence]) -> list[Numbers]:
    """Every step of the forward walk (``tfviz.analysis.forward.forward_steps`` for each head,
    as lesson 12 draws them): a step that differs by head (its attention) once per head,
    every other step once, numbered as the chart's Step slider counts."""
    first = steps_by_head[0]
    out = []
    for i, step in enumerate(first):
        same = all(np.array_equal(s[i].values, step.values, equal_nan=True) for s in steps_by_head[1:])
        for s in ([step] if same else [steps[i] for steps in steps_by_head]):
            out.append(matrix(f"{i + 1} · {s.title} {s.shape}", s.values, s.rows, s.cols))
    return out


def encoder(patterns: np.ndarray, memory: np.ndarray, tokens: Sequence[str]) -> list[Numbers]:
    """Lesson 13's encoder chart: each layer's and head's self-attention (n × n), then the
    memory (n × d)."""
    labels = token_labels(tokens)
    return [*heads("encoder self-attention", patterns, tokens, tokens),
            matrix(f"memory (n × d = {len(labels)} × {memory.shape[1]})", memory, labels,
                   [f"d{j}" for j in range(memory.shape[1])])]


def decoder(self_maps: np.ndarray, cross_maps: np.ndarray, dec_tokens: Sequence[str],
            src_tokens: Sequence[str]) -> list[Numbers]:
    """Lesson 13's decoder chart: the rows every step added to each head's self-attention
    (t × t, empty above the diagonal) and cross-attention (t × n)."""
    return [*heads("decoder self-attention", self_maps, dec_tokens, dec_tokens),
            *heads("cross-attention", cross_maps, dec_tokens, src_tokens)]


# ----- the numbers of any plain Vega-Lite chart ----------------------------------------------
#: The encoding channels whose fields a table shows, in this order (a tooltip's fields last).
CHANNELS = ("row", "column", "facet", "y", "x", "y2", "x2", "theta", "color", "fill", "stroke",
            "shape", "size", "opacity", "text", "detail", "tooltip")
MAX_TABLE_ROWS = 400  # rows a chart's table shows; a longer one says how many it leaves out


@dataclass(frozen=True)
class ChartTable:
    """One data source of a chart as a table: ``columns`` are the encoded fields' titles,
    ``rows`` at most ``MAX_TABLE_ROWS`` of its rows, ``total`` how many it has."""
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    total: int


def _views(spec: dict, data=None):
    """Every single view of a spec with the data it reads: (view, data), through layers,
    concatenations, facets and repeats; a view without data reads its parent's."""
    data = spec.get("data", data)
    for key in ("layer", "concat", "hconcat", "vconcat"):
        for part in spec.get(key, ()):
            yield from _views(part, data)
    if isinstance(spec.get("spec"), dict):
        yield from _views(spec["spec"], data)
    if "mark" in spec:
        yield spec, data


def _fields(encoding: dict) -> list[tuple[str, str]]:
    """(field, title) of every encoded field: what names a row first (nominal and ordinal
    fields: a token, a part, a position), then the measured numbers, each in ``CHANNELS`` order.
    A field without a title of its own is titled by its name."""
    keys, numbers = [], []
    for channel in CHANNELS:
        defs = encoding.get(channel)
        for d in defs if isinstance(defs, list) else [defs]:
            if isinstance(d, dict) and isinstance(d.get("field"), str) and "aggregate" not in d:
                title = d.get("title")
                pair = (d["field"], title if isinstance(title, str) and title else d["field"])
                (numbers if d.get("type") == "quantitative" else keys).append(pair)
    return keys + numbers


def _source(spec: dict, data) -> tuple[str, list] | None:
    """(key, rows) of the data a view reads, if its rows are here as a list of dicts."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("values"), list):
        key, rows = f"values:{id(data['values'])}", data["values"]
    elif isinstance(data.get("name"), str) and isinstance(spec.get("datasets", {}).get(data["name"]), list):
        key, rows = data["name"], spec["datasets"][data["name"]]
    else:
        return None
    return (key, rows) if rows and all(isinstance(r, dict) for r in rows) else None


def _matrix_table(spec: dict, rows: list[dict]) -> ChartTable | None:
    """A matrix packed into one row (``instant_matrix.matrix_rows``) as a table: one row per matrix
    row, named by the chart's ``ylabels`` (a length-free chart's: its tokens, in its data),
    one column per ``xlabels`` entry."""
    consts = {p["name"]: p["value"] for p in spec.get("params", ())
              if isinstance(p, dict) and "value" in p and "bind" not in p}
    xs, ys = consts.get("xlabels"), consts.get("ylabels") or spec_tokens(spec)
    if len(rows) != 1 or not isinstance(rows[0].get("v"), str) or not xs or not ys:
        return None
    cells = [float(v) if v else None for v in rows[0]["v"].split(",")]
    if len(cells) != len(xs) * len(ys):
        return None
    body = tuple((str(y), *cells[i * len(xs):(i + 1) * len(xs)]) for i, y in enumerate(ys))
    return ChartTable(unique(["", *map(str, xs)]), body[:MAX_TABLE_ROWS], len(body))


def chart_tables(spec: dict) -> list[ChartTable]:
    """The numbers of a plain Vega-Lite chart as tables, with the columns its encodings draw
    (titled as on the chart), or the matrix it draws (``instant_matrix.matrix_chart``).

    Only the chart's own data is tabled: the rows its top level reads (else, for side-by-side
    views with no data of their own at the top, each view's); a layer that brings rows of its
    own draws decoration (a frame, a rule, a label), and so do rows whose views title no field. An instant view (a spec with parameters
    bound to inputs) gives none: what it draws depends on the view chosen in the browser, and
    its rows are packed (``tfviz.viz.kit.instant``); the pages that need its numbers as a table
    build them from the trace (:func:`heads` and the others above).

    >>> spec = {"data": {"name": "rows"}, "datasets": {"rows": [{"t": "a", "p": 0.25, "k": 1}]},
    ...         "mark": "bar", "encoding": {"y": {"field": "t", "title": "token", "type": "nominal"},
    ...                                     "x": {"field": "p", "title": "probability"}}}
    >>> chart_tables(spec)
    [ChartTable(columns=('token', 'probability'), rows=(('a', 0.25),), total=1)]
    """
    if any(isinstance(p, dict) and "bind" in p for p in spec.get("params", ())):
        return []
    top = _source(spec, spec.get("data"))
    sources: dict[str, tuple[list, list[tuple[str, str]]]] = {}
    titled: set[str] = set()  # sources with a field the chart names (not a frame or a rule)
    for view, data in _views(spec):
        found = _source(spec, data)
        if found is None or (top is not None and found[0] != top[0]):
            continue
        key, rows = found
        _, fields = sources.setdefault(key, (rows, []))
        if any(isinstance(d, dict) and d.get("title") for d in view.get("encoding", {}).values()):
            titled.add(key)
        present = set().union(*(r.keys() for r in rows))
        for field, title in _fields(view.get("encoding", {})):
            if field in present and field not in [f for f, _ in fields]:
                fields.append((field, title))
    tables = []
    for key, (rows, fields) in sources.items():
        matrix_table = _matrix_table(spec, rows)
        if matrix_table is not None:
            tables.append(matrix_table)
        elif fields and key in titled and not any(f == "v" and isinstance(rows[0].get("v"), str) for f, _ in fields):
            titles = unique([t for _, t in fields])
            shown = tuple(tuple(r.get(f) for f, _ in fields) for r in rows[:MAX_TABLE_ROWS])
            tables.append(ChartTable(titles, shown, len(rows)))
    return tables


def _shown(v) -> str:
    """A table cell as text: numbers to at most 4 decimals (a small negative one is 0, not -0),
    None as nothing.

    >>> [_shown(v) for v in (0.123456, -0.00004, 2.0, float("nan"), None, "a")]
    ['0.1235', '0', '2', 'nan', '', 'a']
    """
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return str(v)
        return np.format_float_positional(round(float(v), 4) + 0.0, precision=4, trim="-")
    return "" if v is None else str(v)


def html_table(t: ChartTable) -> str:
    """A :class:`ChartTable` as an HTML ``<table>`` (``st.html``), which a screen reader reads
    cell by cell: column headers, each row named by its first cell, numbers to at most 4
    decimals, text escaped. It sits in a box of its own that scrolls sideways when the table
    is wider than the page, with a tab stop and a name so that a keyboard can scroll it.

    The browser builds it from the HTML as it is. The same table written in Markdown was
    parsed and drawn cell by cell by Streamlit's Markdown renderer on every run, closed
    expander or not: on lesson 3 that was a third of a new sentence's wait (BENCHMARKS.md).

    >>> print(html_table(ChartTable(("token", "p"), (("<b>", 0.123456), ("*", 2)), 2)))
    <div class="tfviz-numbers" role="region" tabindex="0" aria-label="The numbers as a table"><table><thead><tr><th scope="col">token</th><th scope="col">p</th></tr></thead><tbody><tr><th scope="row">&lt;b&gt;</th><td>0.1235</td></tr><tr><th scope="row">*</th><td>2</td></tr></tbody></table></div>
    """
    esc = lambda v: html.escape(_shown(v)).replace("\n", " ")  # noqa: E731
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in t.columns)
    body = "".join(f'<tr><th scope="row">{esc(row[0])}</th>'
                   + "".join(f"<td>{esc(v)}</td>" for v in row[1:]) + "</tr>" for row in t.rows)
    return ('<div class="tfviz-numbers" role="region" tabindex="0" aria-label="The numbers as '
            f'a table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
