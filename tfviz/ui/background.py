"""The server's own threads (the warm-up in server.py) and the one warning they must not log.

Nothing is built ahead for a learner: every layer of a trace travels to the browser with the
first chart (instant views). What lives here is the warm-up thread's name and its log filter.
"""
from __future__ import annotations

import logging
import threading

THREAD_PREFIX = "tfviz-"  # the warm-up thread (server.py)


class _OurThreadsNeedNoContext(logging.Filter):
    """Streamlit warns when a cached function runs outside a page run ("missing
    ScriptRunContext"). In our own threads that is intended, not a mistake."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not threading.current_thread().name.startswith(THREAD_PREFIX)


def quiet_context_warnings() -> None:
    """Install the filter above once on Streamlit's context logger."""
    logger = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    if not any(isinstance(f, _OurThreadsNeedNoContext) for f in logger.filters):
        logger.addFilter(_OurThreadsNeedNoContext())
