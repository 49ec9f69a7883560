"""Do a server's slow first-time work before any learner asks for it.

`server.py` runs :func:`warm_up` in a background thread when the server starts, so the
first learner does not wait for torch to import (about 2.5 s here) or the first models to load.
The order follows what the first page needs: torch and tfviz, the default model and its trace
of the default text, the chart libraries, then the other models. server.py also keeps the
garbage collector off while this runs and freezes what it loaded (see ``server._warm_up``).
"""
from __future__ import annotations

import logging
import time

from tfviz.ui.background import quiet_context_warnings

log = logging.getLogger("tfviz")


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
        from tfviz.ui.cache import get_bundle, get_trace, model_names
        from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

        get_trace(DEFAULT_MODEL, DEFAULT_TEXT)
        import altair  # noqa: F401  (the tour's charts; 0.3-1 s each the first time)
        import pandas  # noqa: F401
        import plotly.graph_objects  # noqa: F401

        for name in model_names():
            get_bundle(name)
    except Exception:  # a failed warm-up only means a slower first page
        log.exception("warm-up failed")
    took = time.perf_counter() - start
    log.info("warm-up done in %.1f s", took)
    return took
