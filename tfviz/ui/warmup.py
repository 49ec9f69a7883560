"""Do a server's slow first-time work before any learner asks for it, and keep its own threads'
intended "missing ScriptRunContext" warnings out of the log.

`server.py` runs :func:`warm_up` in a background thread when the server starts, so the
first learner does not wait for torch to import (about 2.5 s here) or the first models to load.
server.py also keeps the garbage collector off while this runs and freezes what it loaded (see
``server._warm_up``).

It waits until a first page run has ended (``page_ran``, called by the frame; at most
``FIRST_PAGE_WAIT`` seconds), then imports torch, loads the default model and traces the default
text (what every other page and the tour's next sentence need), then pandas (the pages' tables)
and pyarrow (the charts' datasets travel as Arrow bytes, ``tfviz.ui.widgets.arrow_bytes``), and
the other models. The first page, the tour on its default sentence, needs none of it: its
numbers are stored with the model (``tfviz.analysis.tour_numbers``), and the frame imports
no torch. The wait is the point: the warm-up is Python work under the server's one GIL, and
torch's import is also CPU that the learner's browser, loading Streamlit's frontend on the same
two cores, is waiting for; whatever the warm-up did while the first page loaded and ran was
added to it (BENCHMARKS.md, "Browser: what a learner waits for"). A first page that needs a
model (a link straight to a lesson) loads it in its own run, as a cold start does.
altair is not imported at all: every chart is a Vega-Lite dict.
"""
from __future__ import annotations

import importlib
import logging
import sys
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
    on every run, so a run gets one thread even after a lab run trained with more meanwhile;
    until torch is imported there is nothing to set (the loader of a model calls it too).

    Our models are tiny: an op has too little work to share, and torch's default, one thread
    per core, only adds OpenMP threads that spin while they wait for the next op. On our two
    cores that spinning took the core the learner's browser was drawing on: a new sentence on
    self-attention cost the server 185 ms of CPU with two threads and 75-105 ms with one, and
    the p95 until its charts were drawn went from 601 to 482 ms (BENCHMARKS.md, "Instant
    views"). Cheap to call again."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "get_num_threads"):  # not (fully) imported yet
        return
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def warm_up() -> float:
    """Once a first page has run: import torch, load and trace what the other pages need
    first, then the rest (module docstring). Returns the seconds it took."""
    start = time.perf_counter()
    quiet_context_warnings()  # cached calls outside a page run are intended here
    try:
        FIRST_PAGE.wait(FIRST_PAGE_WAIT)
        import torch  # noqa: F401  (on a server whose first page was the tour, the first import)

        one_thread_per_op()
        from tfviz.ui.cache import get_bundle, get_trace, shipped_model_names
        from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

        get_trace(DEFAULT_MODEL, DEFAULT_TEXT)
        for module in LATER:
            importlib.import_module(module)
        for name in shipped_model_names():  # a model folder opens only when a learner picks it
            get_bundle(name)
    except Exception:  # a failed warm-up only means a slower first page
        log.exception("warm-up failed")
    took = time.perf_counter() - start
    log.info("warm-up done in %.1f s", took)
    return took
