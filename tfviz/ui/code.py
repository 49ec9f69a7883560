"""The source code behind what a page shows, highlighted on the server."""
from __future__ import annotations

import functools
import inspect

import streamlit as st

from tfviz.viz.code_html import python_html


@functools.lru_cache(maxsize=512)
def _code(fn) -> str:
    """``fn``'s source as highlighted HTML (``tfviz.viz.code_html``), read and coloured once:
    read from disk on every run, it showed in a class's server time (``bench/bench_class.py``)."""
    return python_html(inspect.getsource(fn), label=f"The code of {fn.__name__}")


def show_code(*functions) -> None:
    """An expander holding the source of the tfviz functions that computed what is shown,
    highlighted on the server: Streamlit's code element highlights in the browser on every
    page load, open box or closed (``tfviz.viz.code_html``). One HTML element holds them all:
    each element is work for the browser on every page load."""
    with st.expander("Show the code"):
        st.html("".join(_code(fn) for fn in functions))
