"""The server's threads: torch's one thread per op for every page run, and quiet logs for the
threads we start ourselves (named with ``tfviz.threads.THREAD_PREFIX``).

It imports neither torch nor another module of ``tfviz.ui``: the frame calls
:func:`one_thread_per_op` on every run, and the cached loaders (``tfviz.ui.cache``) once they
have loaded a model; the warm-up (``tfviz.ui.warmup``) uses both.
"""
from __future__ import annotations

import logging
import sys
import threading

from tfviz.threads import THREAD_PREFIX


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


def one_thread_per_op() -> None:
    """Run every torch op of this server on one thread. Torch hands the count to every thread
    started afterwards, and Streamlit starts a thread for each page run; the frame calls this
    on every run, so a run gets one thread even after a lab run trained with more meanwhile;
    until torch is imported there is nothing to set (the loader of a model calls it too).

    Our models are tiny: an op has too little work to share, and torch's default, one thread
    per core, only adds OpenMP threads that spin while they wait for the next op. On a 2-core
    machine that spinning takes the core the learner's browser is drawing on: with one thread
    a new sentence costs the server less CPU and its charts are drawn sooner (BENCHMARKS.md,
    "Instant views", has the measurements). Cheap to call again."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "get_num_threads"):  # not (fully) imported yet
        return
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
