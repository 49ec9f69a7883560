"""Do a server's slow first-time work before any learner asks for it.

`server.py` runs :func:`warm_up` in a background thread when the server starts, so the
first learner does not wait for torch to import or the first models to load.
server.py also keeps the garbage collector off while this runs and freezes what it loaded (see
``server._warm_up``).

It waits until a first page run has ended (``page_ran``, called by the frame; at most
``FIRST_PAGE_WAIT`` seconds), then imports torch, loads the default model and traces the default
text (what every other page and the tour's next sentence need), then pandas (the pages' tables)
and pyarrow (the charts' datasets travel as Arrow bytes, ``tfviz.ui.drawing.arrow_bytes``), and
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
import threading
import time

from tfviz.ui.server_threads import one_thread_per_op, quiet_context_warnings

log = logging.getLogger("tfviz")


FIRST_PAGE = threading.Event()  # set once a page run has ended
FIRST_PAGE_WAIT = 20.0  # seconds the second part waits for it at most (nobody may come)
LATER = ("pandas", "pyarrow")  # what the other pages need (module docstring)


def page_ran() -> None:
    """Tell the warm-up that a page run has ended; the frame calls it after every run."""
    FIRST_PAGE.set()


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
