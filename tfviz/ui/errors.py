"""The error boundary: a learner never sees a traceback, the server's log always gets one.

``app.py`` wraps each page run in ``report_failure``. A fragment rerun (``st.fragment``) does
not pass through ``app.py`` at all, and in a full run Streamlit's fragment wrapper draws its
own exception element before the frame sees the error. So every lesson fragment is declared
with ``safe_fragment`` instead, which puts the same boundary inside the fragment. A timed
fragment (``run_every``) also goes back to the page the browser shows when a late request runs
it as another page's (``back_to_shown_page``).
"""
from __future__ import annotations

import functools
import logging
import os
from contextlib import contextmanager

import streamlit as st

log = logging.getLogger("tfviz")

FRIENDLY_ERROR = ("Sorry, something went wrong while drawing this page. Try another sentence or "
                  "setting; the other pages keep working. (The details went to the server's log.)")


@contextmanager
def report_failure(what: str, *args):
    """Log an exception raised inside (with ``what % args`` as the message) and show the
    friendly error in its place. Streamlit's rerun and stop signals are BaseExceptions, not
    Exceptions, so they pass through. With TFVIZ_RAISE set (AppTest) the error is re-raised."""
    try:
        yield
    except Exception:
        if os.environ.get("TFVIZ_RAISE"):
            raise
        log.exception(what, *args)
        st.error(FRIENDLY_ERROR)


def safe_fragment(func=None, **fragment_kwargs):
    """``st.fragment`` with the frame's error boundary inside it; use it for every fragment.

    Use as ``@safe_fragment`` or ``@safe_fragment(run_every=...)``. An exception in the
    fragment is logged as ``fragment 'name' failed`` and the learner sees the friendly error
    where the fragment would have been; the rest of the page still draws.
    """
    if func is None:
        return lambda f: safe_fragment(f, **fragment_kwargs)

    timed = fragment_kwargs.get("run_every") is not None

    @functools.wraps(func)
    def guarded(*args, **kwargs):
        if timed:
            back_to_shown_page()
        with report_failure("fragment %r failed", func.__qualname__):
            return func(*args, **kwargs)

    return st.fragment(guarded, **fragment_kwargs)


SHOWN = "_page_shown"  # (page_script_hash, page file, query params) of the last full run


def remember_page(page_file: str) -> None:
    """The frame's call on every full run: which page this browser shows (see below)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None and not ctx.fragment_ids_this_run:
        st.session_state[SHOWN] = (ctx.page_script_hash, page_file, st.query_params.to_dict())


def back_to_shown_page() -> None:
    """In a timed fragment's run, go back to the page this browser shows, if the run is for
    another one.

    A browser asks for a timed fragment's run every second or two, naming the page it shows.
    When the server switches the page (a student following the teacher), the browser goes on
    naming the old page until it hears of the switch; such a request arrives after the new
    page's run, and Streamlit runs it as the old page's: the browser takes that run's page as
    the one shown and empties the lesson, which no fragment run redraws. Seen in the
    live-class browser test under load: a student switched to /self-attention, then a poll for
    the home page, then a blank lesson for good. (A learner's own click is safe: the browser
    asks for the new page first.) ``st.switch_page`` back to the page of the last full run
    redraws it at once."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    shown = st.session_state.get(SHOWN)
    if ctx is None or not ctx.fragment_ids_this_run or not shown or shown[0] == ctx.page_script_hash:
        return
    st.switch_page(shown[1], query_params=shown[2])
