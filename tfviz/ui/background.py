"""Work the server does between a learner's clicks: one background thread, shared by all.

A page can ask (``tfviz.ui.widgets.prefetch``) for what a learner will most likely want next
(the figures of the neighbouring layer, say) to be built while the browser is still drawing
the current answer; the server is idle then. What is built goes into the same shared caches a
page run reads, and Streamlit's cache lets only one thread build a given entry, so a click
that arrives early simply waits for the build already under way instead of doing it twice.

Background work never shows anything to a learner: its errors are logged, not raised (the page
run that needs the same thing will build it and report any error itself).
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("tfviz")

THREAD_PREFIX = "tfviz-"  # the warm-up thread (server.py) and the background worker
MAX_PENDING = 16  # a learner holding an arrow key down must not queue up minutes of work

_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{THREAD_PREFIX}background")
_lock = threading.Lock()
_pending = 0


class _OurThreadsNeedNoContext(logging.Filter):
    """Streamlit warns when a cached function runs outside a page run ("missing
    ScriptRunContext"). In our own background threads that is intended, not a mistake."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not threading.current_thread().name.startswith(THREAD_PREFIX)


def quiet_context_warnings() -> None:
    """Install the filter above once on Streamlit's context logger."""
    logger = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    if not any(isinstance(f, _OurThreadsNeedNoContext) for f in logger.filters):
        logger.addFilter(_OurThreadsNeedNoContext())


def _run(fn, args) -> None:
    global _pending
    try:
        fn(*args)
    except Exception:  # the page run that needs it will build it again and say what went wrong
        log.exception("background work %s failed", getattr(fn, "__qualname__", fn))
    finally:
        with _lock:
            _pending -= 1


def in_background(fn, *args) -> bool:
    """Queue ``fn(*args)`` on the background thread. Returns False if the queue was full and
    the work was dropped (it is only ever a head start)."""
    global _pending
    quiet_context_warnings()
    with _lock:
        if _pending >= MAX_PENDING:
            return False
        _pending += 1
    _worker.submit(_run, fn, args)
    return True


def wait_for_background(timeout: float | None = None) -> None:
    """Block until everything queued so far has run (tests and benchmarks)."""
    _worker.submit(lambda: None).result(timeout=timeout)
