"""Tables: ``table`` (a dataframe on the page, an HTML table in presenter view or for a few rows
that follow the learner's sentence) and ``numbers_table``, a chart's matrices one at a time."""
from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from tfviz.ui.pickers import stable_select
from tfviz.ui.present import presenting
from tfviz.viz.kit.chart_numbers import Numbers


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
    it keeps for screen readers noticeably later; an HTML table is there with the run, for
    everyone (``bench/bench_views.py``, a new sentence on lesson 15: bench/history/views.md). ``static=None``: so while the
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


def numbers_table(matrices: Sequence[Numbers], key: str, *, default: int = 0) -> None:
    """The expander "The numbers as a table" holding one of a chart's matrices
    (``tfviz.viz.kit.chart_numbers``) at a time, chosen in a select box. A screen reader reads a
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
