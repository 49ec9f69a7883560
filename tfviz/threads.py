"""Our own threads: the one name prefix they share, and torch's thread count for a while.

Every thread tfviz starts is named ``THREAD_PREFIX`` + what it does (``tfviz-warm-up``,
``tfviz-lab-3``, ``tfviz-finetune-1``), so the server can tell its own threads from Streamlit's
(``tfviz.ui.server_threads`` keeps their intended context warnings out of the log).

:func:`torch_threads` lends torch a thread count for a block and gives the old one back, even
when the block raises: a training or a timing picks its own count, and the server's one thread
per op (``tfviz.ui.server_threads.one_thread_per_op``) holds again afterwards.

This module imports no other part of tfviz, and torch only when a count is set: the server's
first page names its threads without loading torch.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

THREAD_PREFIX = "tfviz-"


def thread_name(what: str) -> str:
    """The name of one of our threads.

    >>> thread_name("lab-3")
    'tfviz-lab-3'
    """
    return f"{THREAD_PREFIX}{what}"


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op thread count at ``count`` (None or 0: leave it as it
    is), then put the count it had back."""
    if not count:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(old)
