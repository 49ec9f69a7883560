"""Optional timing of every page run, read by the load benchmark (set TFVIZ_LOG_RUNS=1).

Each full run of a lesson writes one line ``tfviz-run <page> <milliseconds>`` to the server's
standard error. That is the server's own share of a learner's wait, apart from the time the
browser spends drawing. Fragment reruns do not pass through the frame and are not timed.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager

PREFIX = "tfviz-run"
ENABLED = bool(os.environ.get("TFVIZ_LOG_RUNS"))
log = logging.getLogger("tfviz.runs")
if ENABLED and not log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False


@contextmanager
def timed_run(page: str):
    start = time.perf_counter()
    yield
    if ENABLED:
        log.info("%s %s %.1f", PREFIX, page, (time.perf_counter() - start) * 1e3)


def parse(lines) -> list[tuple[str, float]]:
    """(page, milliseconds) for every timing line among ``lines``.

    >>> parse(["noise", "tfviz-run masking 12.5"])
    [('masking', 12.5)]
    """
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == PREFIX:
            out.append((parts[1], float(parts[2])))
    return out
