"""Do a server's slow first-time work before any learner asks for it, and keep its own threads'
intended "missing ScriptRunContext" warnings out of the log.

`server.py` runs :func:`warm_up` in a background thread when the server starts, so the
first learner does not wait for torch to import (about 2.5 s here) or the first models to load.
server.py also keeps the garbage collector off while this runs and freezes what it loaded (see
``server._warm_up``).

It runs in two parts. First what the first page (the tour) needs: torch and tfviz, the
default model and its trace of the default text. Then it waits
until a page run has ended (``page_ran``, called by the frame; at most ``FIRST_PAGE_WAIT``
seconds) before the rest: pandas (the pages' tables) and pyarrow (the charts' datasets travel
as Arrow bytes, ``tfviz.ui.widgets.arrow_bytes``), and the other models. All of it is Python
work under one GIL, so whatever the warm-up did while the first page ran was added to that
run: pandas and altair alone made it 0.7 s longer, on a start-up target of 3 s (BENCHMARKS.md,
"first lesson"). altair is not imported at all: every chart is a Vega-Lite dict.
"""
from __future__ import annotations

import importlib
import logging
import threading
import time

log = logging.getLogger("tfviz")


# ----- the server's own threads, and the one warning they must not log ---------------------------

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


# ----- the warm-up -------------------------------------------------------------------------------

FIRST_PAGE = threading.Event()  # set once a page run has ended
FIRST_PAGE_WAIT = 20.0  # seconds the second part waits for it at most (nobody may come)
LATER = ("pandas", "pyarrow")  # what the other pages need (module docstring)


def page_ran() -> None:
    """Tell the warm-up that a page run has ended; the frame calls it after every run."""
    FIRST_PAGE.set()


def one_thread_per_op() -> None:
    """Run every torch op of this server on one thread. Torch hands the count to every thread
    started afterwards, and Streamlit starts a thread for each page run; the frame calls this
    on every run, so a run gets one thread even after a lab run trained with more meanwhile.

    Our models are tiny: an op has too little work to share, and torch's default, one thread
    per core, only adds OpenMP threads that spin while they wait for the next op. On our two
    cores that spinning took the core the learner's browser was drawing on: a new sentence on
    self-attention cost the server 185 ms of CPU with two threads and 75-105 ms with one, and
    the p95 until its charts were drawn went from 601 to 482 ms (BENCHMARKS.md, "Instant
    views"). Cheap to call again."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def warm_up() -> float:
    """Import, load and trace what the first page needs. Returns the seconds it took."""
    start = time.perf_counter()
    quiet_context_warnings()  # cached calls outside a page run are intended here
    try:
        one_thread_per_op()
        from tfviz.ui.cache import get_bundle, get_trace, shipped_model_names
        from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

        get_trace(DEFAULT_MODEL, DEFAULT_TEXT)
        FIRST_PAGE.wait(FIRST_PAGE_WAIT)
        for module in LATER:
            importlib.import_module(module)
        for name in shipped_model_names():  # a model folder opens only when a learner picks it
            get_bundle(name)
    except Exception:  # a failed warm-up only means a slower first page
        log.exception("warm-up failed")
    took = time.perf_counter() - start
    log.info("warm-up done in %.1f s", took)
    return took
