"""Shared widgets of the lesson pages: pickers that survive changing labels (token positions),
charts and tables (each with its presenter view copy), the source code, a page's prompt box.
The sidebar's model and text are in ``tfviz.ui.sidebar``."""
from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Sequence

import streamlit as st

from tfviz.textinput import MAX_TYPED_CHARS, clean_text
from tfviz.ui.present import presenting
from tfviz.viz import presenter
from tfviz.viz.chart_numbers import Numbers, chart_tables, html_table
from tfviz.viz.code_html import python_html
from tfviz.viz.style import described, token_labels


def leading_number(label) -> int | None:
    """The whole number a stale label starts with, else None: pickers put the option's
    number first, so an old label still names the option the learner chose.

    >>> [leading_number(v) for v in ("3 ␣sat", "12. Logits", "4 x y", "sat", "", None, 7, True)]
    [3, 12, 4, None, None, None, None, None]
    """
    found = re.match(r"(\d{1,6})(?!\d)", label) if isinstance(label, str) else None
    return int(found.group(1)) if found else None


def _is_option(value, options) -> bool:
    """``value in options`` without True == 1 or 2.0 == 2 passing for an option."""
    return any(type(value) is type(o) and value == o for o in options)


def stable_select(label: str, options, key: str, *, format_func=str, default=None, recover=None,
                  slider: bool = False, where=None, **kwargs):
    """A select box (or, with ``slider``, a select slider) whose stored value is always one of
    ``options``; returns the chosen option.

    Every picker whose labels can change between runs (a token of the learner's text, a ✓ on
    a solved exercise) goes through here, because such a widget keeps bad state whenever
    its labels change. Streamlit (1.67) stores a select box's value in the browser as its
    *label* (``SelectboxSerde.serialize`` is ``format_func``), and it pushes a new label to
    the browser only when the value itself changes (``set_value``). So when the learner
    types a new sentence and the chosen option still exists, the value (3) is unchanged,
    the browser keeps the old label ("3 ␣sat"), and on the *next* rerun it sends that
    label back. It is deserialised against the options drawn for the previous run, matches
    none, and ``SelectboxSerde.deserialize`` returns the raw string: ``session_state[key]``
    is then "3 ␣sat", and ``session_state[key] >= n`` would raise TypeError. A rerun
    interrupted by fast typing can leave the same mismatch.

    So the state is made valid by construction before the widget is drawn: one of
    ``options`` (a stale label goes through ``recover``, which may name the option it
    meant; anything else unusable becomes ``default``, or the first option), and it is
    always written back to ``session_state``. Writing it counts as a change of value, so
    Streamlit sends the label for *this* run to the browser every time and the browser
    never holds a label from an older one.
    """
    options = list(options)
    value = st.session_state.get(key)
    if not _is_option(value, options):
        value = recover(value) if recover is not None else None
        if not _is_option(value, options):
            value = default if _is_option(default, options) else options[0]
    st.session_state[key] = value
    where = where or st
    widget = where.select_slider if slider else where.selectbox
    return widget(label, options, key=key, format_func=format_func, **kwargs)


def token_select(label: str, tokens, key: str, *, default: int | None = None, first: int = 0,
                 where=None, help: str | None = None) -> int | None:
    """A select box of token positions ``first..len(tokens)-1``, shown as "3 ␣sat"; returns
    the chosen position as an int (None only when there is no position to choose). A stale
    label is read back by its leading number; see ``stable_select`` for why that happens."""
    n = len(tokens)
    if n <= first:
        return None
    fallback = min(max(first if default is None else int(default), first), n - 1)
    labels = token_labels(tokens)  # widgets show text as typed
    return int(stable_select(label, range(first, n), key, default=fallback, where=where, help=help,
                             recover=leading_number, format_func=labels.__getitem__))


def _builder_name(builder) -> str:
    """The cache key part naming a chart builder (its arguments are hashed by Streamlit)."""
    return f"{builder.__module__}.{builder.__qualname__}"


def arrow_bytes(rows: list[dict]) -> bytes:
    """A dataset (a list of flat dicts) as the Arrow IPC bytes Streamlit sends to the browser,
    built with pyarrow directly: through pandas, as Streamlit would, it took a third of lesson
    5's server time per new sentence. Every key of any row is a column; a row without it
    holds null there (the token labels ride in the first row only). A column pyarrow cannot
    type on its own (numbers mixed with text) goes Streamlit's own way instead."""
    import pyarrow as pa
    from streamlit.dataframe_util import (convert_anything_to_arrow_bytes,
                                          convert_arrow_table_to_arrow_bytes)

    names = list(dict.fromkeys(key for row in rows for key in row))
    try:
        table = pa.table({key: [row.get(key) for row in rows] for key in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return convert_anything_to_arrow_bytes(rows)
    return convert_arrow_table_to_arrow_bytes(table)


def _draw(name: str, args: tuple, kwargs: dict, _builder=None) -> tuple[dict, list[tuple[str, str]]]:
    """What ``vega`` draws: the builder's dict with a description (``style.described``) and its
    named datasets already as Arrow bytes, which Streamlit sends as they are (converting them
    on every rerun was a tenth of a class's server time, bench_class), and its numbers as
    HTML tables (``viz.chart_numbers.chart_tables`` read from the rows before they are bytes,
    then ``html_table``). A chart whose rows sit inside its views (``data.values``, the
    tour's) needs no pyarrow."""
    spec = _builder(*args, **kwargs)
    tables = [(html_table(t), f"The first {len(t.rows):,} of {t.total:,} rows."
               if t.total > len(t.rows) else "") for t in chart_tables(spec)]
    if spec.get("datasets"):
        spec = {**spec, "datasets": {key: rows if isinstance(rows, bytes) else arrow_bytes(rows)
                                     for key, rows in spec["datasets"].items()}}
    return described(spec), tables


@st.cache_data(max_entries=256, show_spinner=False)
def _vega_drawn(name: str, args: tuple, kwargs: dict, _builder=None) -> tuple[dict, list[tuple[str, str]]]:
    """:func:`_draw`, kept for every learner: the bundled models' charts (and a lab run's)."""
    return _draw(name, args, kwargs, _builder=_builder)


#: Drawn charts kept for pages whose sidebar model is a Hugging Face folder, apart from the
#: bundled models' 256: one layer of a GPT-2 small chart is up to a few MB (BENCHMARKS.md), so
#: 256 of them would hold the better part of a GB; 32 keep a few pages' charts at a few layers.
FOLDER_CHARTS = 32


@st.cache_data(max_entries=FOLDER_CHARTS, show_spinner=False)
def _vega_drawn_for_folder(name: str, args: tuple, kwargs: dict, _builder=None):
    """:func:`_draw` for a model folder's pages, in a cache of its own (``FOLDER_CHARTS``)."""
    return _draw(name, args, kwargs, _builder=_builder)


def _on_a_folder() -> bool:
    """Whether this run's sidebar model is a Hugging Face folder (``tfviz.ui.checkpoints``)."""
    from tfviz.ui import checkpoints  # here: the tour's first view imports no more than it needs

    return checkpoints.found(st.session_state.get("model")) is not None


def drawn(name: str, args: tuple, kwargs: dict, _builder=None) -> tuple[dict, list[tuple[str, str]]]:
    """The chart ``_builder(*args, **kwargs)`` as ``vega`` draws it, from the cache its size
    calls for: a model folder's page's charts (:func:`_on_a_folder`) are kept apart and fewer."""
    cached = _vega_drawn_for_folder if _on_a_folder() else _vega_drawn
    return cached(name, args, kwargs, _builder=_builder)


def _vega_spec(name: str, args: tuple, kwargs: dict, _builder=None) -> dict:
    """The spec ``vega`` draws (built once per input by :func:`drawn`; a copy each call)."""
    return drawn(name, args, kwargs, _builder=_builder)[0]


def numbers_table(matrices: Sequence[Numbers], key: str, *, default: int = 0) -> None:
    """The expander "The numbers as a table" holding one of a chart's matrices
    (``tfviz.viz.chart_numbers``) at a time, chosen in a select box. A screen reader reads a
    table cell by cell; a canvas, a picture or a hover label it cannot (WCAG 2.2 AA, 1.1.1)."""
    if not matrices:
        return
    import pandas  # only here, once a page asks for it (tfviz.viz.pipeline: the first page)

    with st.expander("The numbers as a table"):
        i = stable_select("Which numbers", range(len(matrices)), key,
                          format_func=lambda j: matrices[j].name, default=default)
        shown = matrices[i]
        table(pandas.DataFrame(shown.values, index=list(shown.rows), columns=list(shown.cols)),
              hide_index=False)


def numbers_expander(tables: Sequence[tuple[str, str]]) -> None:
    """"The numbers as a table" under a chart: its numbers where a screen reader reads them cell
    by cell (WCAG 2.2 AA, 1.1.1), collapsed; ``tables`` are (HTML table, a note on rows left
    out or "") as :func:`_draw` made them. Not in presenter view: the projector shows the
    chart, and each student's own page has the table."""
    if not tables or presenting():
        return
    with st.expander("The numbers as a table"):
        for table_html, note in tables:
            st.html(table_html)
            if note:
                st.caption(note)


def vega(builder, *args, **kwargs) -> None:
    """Draw the chart ``builder(*args, **kwargs)``, a Vega-Lite dict, built once per distinct
    input: the one cached way every 2-D chart is drawn (instant views included).

    Building a chart's rows and their Arrow bytes is most of a rerun's work, so it happens
    once per input and a class looking at the same sentence shares it; each caller gets its
    own copy (``st.cache_data``). Builders write their dicts with ``tfviz.viz.charts`` (plain
    charts) or ``tfviz.viz.instant`` (charts with view controls); tests validate them against
    the Vega-Lite schema, so nothing is validated here at run time.
    """
    spec, tables = drawn(_builder_name(builder), args, kwargs, _builder=builder)
    vega_lite(spec)
    numbers_expander(tables)


def vega_lite(spec: dict, **kwargs) -> None:
    """The one place a Vega-Lite spec is drawn (``vega`` draws cached ones; a live chart that
    changes every second comes here directly). Presenter view draws a copy with its large
    type and thick lines (``tfviz.viz.presenter``); ``spec`` itself is never changed.

    A chart laid out at its own size (``autosize`` "pad": the instant views, whose cells keep
    their size) is drawn at that size; any other takes Streamlit's default (the column's width,
    except side-by-side and faceted charts, which keep their own)."""
    if (spec.get("autosize") or {}).get("type") == "pad":
        kwargs.setdefault("width", "content")
    spec = described(spec)
    st.vega_lite_chart(presenter.vega_spec(spec) if presenting() else spec, **kwargs)


TABLE_ROWS_SHOWN = 12  # presenter view: rows of a table on one screen
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def _cell(value, fmt: str | None) -> str:
    """A table cell as presenter view prints it: numbers by ``fmt`` ("%.3f") or to at most 4
    decimals; text escaped so that st.table's Markdown shows it as it is (a token "**")."""
    import numpy as np

    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        if fmt and fmt.startswith("%"):
            try:
                return fmt % value
            except (TypeError, ValueError):
                pass
        if isinstance(value, (float, np.floating)):
            small = value != 0 and abs(value) < 5e-5  # would print as 0
            return f"{value:.2e}" if small else np.format_float_positional(float(value), precision=4, trim="-")
    return _MARKDOWN.sub(r"\\\1", str(value))


STATIC_ROWS = 24  # table(static=None): an HTML table up to this many rows, a dataframe beyond


def table(data, *, column_config: dict | None = None, hide_index: bool | None = True,
          static: bool | None = False, **kwargs) -> None:
    """A table: ``st.dataframe`` on the normal page; in presenter view an HTML table
    (``st.table``), whose text the presenter CSS enlarges like any other text. A dataframe
    paints its cells on a canvas at 14 px, which CSS cannot reach (nor a test measure).

    ``static``: an HTML table on the normal page too, for a few rows that follow the learner's
    sentence. A dataframe repaints its canvas with the run, but rewrites the copy of its cells
    it keeps for screen readers 0.1-0.5 s later; an HTML table is there with the run, for
    everyone (BENCHMARKS.md, a new sentence on lesson 15). ``static=None``: so while the
    table has at most ``STATIC_ROWS`` rows; a longer one keeps the dataframe's scrolling box.
    An HTML table wider than the page scrolls sideways in its own box, which the view script
    gives a tab stop (``reachable`` in ``assets/view_sync.js``).

    Presenter view shows the first ``TABLE_ROWS_SHOWN`` rows, each number formatted by its
    column's ``NumberColumn(format="%.3f")`` where there is one, else to at most 4 decimals,
    and columns renamed by ``column_config``'s labels; a static table on the normal page shows
    every row, formatted the same way. ``kwargs`` (width, height...) are the dataframe's."""
    if static is None:
        static = len(data) <= STATIC_ROWS
    if not presenting() and not static:
        st.dataframe(data, column_config=column_config, hide_index=hide_index, **kwargs)
        return
    import pandas  # only here: the first page (the tour) needs no pandas (tfviz.viz.pipeline)

    frame = data if isinstance(data, pandas.DataFrame) else pandas.DataFrame(data)
    config = {k: ({"label": v} if isinstance(v, str) else v)
              for k, v in (column_config or {}).items()}
    shown = {}
    for col in frame.columns:
        if col in config and config[col] is None:  # column_config={"x": None} hides x
            continue
        conf = config.get(col) or {}
        fmt = (conf.get("type_config") or {}).get("format")
        rows = frame[col].head(TABLE_ROWS_SHOWN) if presenting() else frame[col]
        shown[conf.get("label") or str(col)] = [_cell(v, fmt) for v in rows]
    st.table(pandas.DataFrame(shown), hide_index=bool(hide_index))
    if presenting() and len(frame) > TABLE_ROWS_SHOWN:
        st.caption(f"The first {TABLE_ROWS_SHOWN} of {len(frame)} rows (the normal page shows "
                   "them all).")


@functools.lru_cache(maxsize=512)
def _code(fn) -> str:
    """``fn``'s source as highlighted HTML (``tfviz.viz.code_html``), read and coloured once:
    from disk each time it was 3% of a class's server time."""
    return python_html(inspect.getsource(fn), label=f"The code of {fn.__name__}")


def show_code(*functions) -> None:
    """An expander holding the source of the tfviz functions that computed what is shown,
    highlighted on the server: Streamlit's code element highlights in the browser on every
    page load, open box or closed (``tfviz.viz.code_html``). One HTML element holds them all:
    each element is work for the browser on every page load."""
    with st.expander("Show the code"):
        st.html("".join(_code(fn) for fn in functions))


def prompt_box(prefix: str, text: str) -> tuple[str, str | None]:
    """A page's own prompt box (key ``{prefix}_prompt``), cleaned like the sidebar's text.

    It starts as the sidebar's ``text`` and follows it when the sidebar's text changes, unless
    the learner has typed a prompt of their own; coming back from another page, it holds the
    box's last text. Returns the cleaned prompt and the cleaning's note (None when untouched).
    """
    key, keep, came_from = f"{prefix}_prompt", f"_{prefix}_prompt_keep", f"_{prefix}_prompt_from"
    state = st.session_state
    if state.get(came_from) != text:  # a new sidebar text: offer it, unless
        if state.get(keep) in (None, state.get(came_from)):  # not when the learner typed
            state[keep] = text  # a prompt of their own
            if key in state:  # the box on the screen follows too, not only its next visit
                state[key] = text
        state[came_from] = text
    if key not in state:  # back from another page: the box's last text
        state[key] = state.get(keep, text)

    def remember() -> None:
        st.session_state[keep] = st.session_state.get(key, "")

    raw = st.text_area("Prompt", key=key, max_chars=MAX_TYPED_CHARS, height=80, on_change=remember,
                       help="It starts as the sidebar's text; type anything. Press Ctrl+Enter to run.")
    return clean_text(raw)


def prompt_ids(bundle, prompt: str, prompt_note: str | None, new_tokens: int,
               waiting: str) -> tuple[int, ...] | None:
    """The ids of a page's prompt (``prompt_box``'s text and note) with room for
    ``new_tokens`` more, or None: ``waiting`` says what waits for an empty prompt, and a prompt
    the model cannot read gets a warning. Notes about cleaning or cutting it go under the box."""
    from tfviz.decoding import prompt_with_room

    if not prompt:
        st.info(f"Type a prompt above for the model to continue (any text at all). {waiting}")
        return None
    if prompt_note:
        st.caption(prompt_note)
    try:
        ids, room_note = prompt_with_room(bundle, prompt, new_tokens)
    except ValueError as err:
        st.warning(f"The model cannot read this prompt: {err}.")
        return None
    if room_note:
        st.caption(room_note)
    return ids
