"""The error boundary: a learner never sees a traceback, the server's log always gets one.

``app.py`` wraps each page run in ``report_failure``. A fragment rerun (``st.fragment``) does
not pass through ``app.py`` at all, and in a full run Streamlit's fragment wrapper draws its
own exception element before the frame sees the error. So every lesson fragment is declared
with ``safe_fragment`` instead, which puts the same boundary inside the fragment.
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

    @functools.wraps(func)
    def guarded(*args, **kwargs):
        with report_failure("fragment %r failed", func.__qualname__):
            return func(*args, **kwargs)

    return st.fragment(guarded, **fragment_kwargs)
