"""A chart's numbers as a table, under it: an expander holding one of the chart's matrices
(``tfviz.viz.chart_numbers``) at a time, chosen in a select box. A screen reader reads a table cell
by cell; a canvas, a picture or a hover label it cannot (WCAG 2.2 AA, 1.1.1)."""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from tfviz.ui.widgets import stable_select, table
from tfviz.viz.chart_numbers import Numbers


def numbers_table(matrices: Sequence[Numbers], key: str, *, default: int = 0) -> None:
    """The expander "The numbers as a table" with the chosen matrix of ``matrices``."""
    if not matrices:
        return
    import pandas  # only here, once a page asks for it (tfviz.viz.pipeline: the first page)

    with st.expander("The numbers as a table"):
        i = stable_select("Which numbers", range(len(matrices)), key,
                          format_func=lambda j: matrices[j].name, default=default)
        shown = matrices[i]
        table(pandas.DataFrame(shown.values, index=list(shown.rows), columns=list(shown.cols)),
              hide_index=False)
