"""Drawing a chart: ``vega`` builds a Vega-Lite dict once per input and draws it with the numbers
under it as a table; ``vega_lite`` is the one place a spec reaches the page (presenter view
draws its own copy). Every 2-D chart of the app goes through here."""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from tfviz.ui.large_models import LARGE_MODEL_CHARTS, is_large
from tfviz.ui.present import presenting
from tfviz.viz.kit import presenter
from tfviz.viz.kit.chart_numbers import chart_tables, html_table
from tfviz.viz.kit.style import described


def _builder_name(builder) -> str:
    """The cache key part naming a chart builder (its arguments are hashed by Streamlit)."""
    return f"{builder.__module__}.{builder.__qualname__}"


def arrow_bytes(rows: list[dict]) -> bytes:
    """A dataset (a list of flat dicts) as the Arrow IPC bytes Streamlit sends to the browser,
    built with pyarrow directly: through pandas, as Streamlit would, it was a large share of
    the server's work for a new sentence (``bench/bench_views.py``; bench/history/views.md). Every key of any row is a column; a row without it
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
    on every rerun was a visible share of a class's server time: ``bench/bench_class.py``), and its numbers as
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


@st.cache_data(max_entries=LARGE_MODEL_CHARTS, show_spinner=False)
def _vega_drawn_for_large(name: str, args: tuple, kwargs: dict, _builder=None):
    """:func:`_draw` for a large model's pages (``tfviz.ui.large_models``), in a cache of its
    own that keeps ``LARGE_MODEL_CHARTS``."""
    return _draw(name, args, kwargs, _builder=_builder)


def drawn(name: str, args: tuple, kwargs: dict, _builder=None) -> tuple[dict, list[tuple[str, str]]]:
    """The chart ``_builder(*args, **kwargs)`` as ``vega`` draws it, from the cache its size
    calls for: the charts of a page whose sidebar model is large (``tfviz.ui.large_models``) are
    kept apart and fewer."""
    cached = _vega_drawn_for_large if is_large(st.session_state.get("model")) else _vega_drawn
    return cached(name, args, kwargs, _builder=_builder)


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
    own copy (``st.cache_data``). Builders make their dicts with the kit's one constructor,
    ``tfviz.viz.kit.charts.chart``; tests validate them against the Vega-Lite schema, so
    nothing is validated here at run time.
    """
    spec, tables = drawn(_builder_name(builder), args, kwargs, _builder=builder)
    vega_lite(spec)
    numbers_expander(tables)


def vega_lite(spec: dict, **kwargs) -> None:
    """The one place a Vega-Lite spec is drawn (``vega`` draws cached ones; a live chart that
    changes every second comes here directly). Presenter view draws a copy with its large
    type and thick lines (``tfviz.viz.kit.presenter``); ``spec`` itself is never changed.

    A chart laid out at its own size (``autosize`` "pad": the instant views, whose cells keep
    their size) is drawn at that size; any other takes Streamlit's default (the column's width,
    except side-by-side and faceted charts, which keep their own)."""
    if (spec.get("autosize") or {}).get("type") == "pad":
        kwargs.setdefault("width", "content")
    spec = described(spec)
    st.vega_lite_chart(presenter.vega_spec(spec) if presenting() else spec, **kwargs)
