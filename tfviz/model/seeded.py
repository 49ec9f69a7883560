"""Seeded draws from torch's one global random generator, one thread at a time.

Building a model draws its first weights from torch's global generator (the modules' own
initialisers use it), so a seed makes the weights the same on every run. That generator is one
per process: a server that builds two models at once (a learner's training-lab run while the
warm-up loads the models, two learners' runs, lesson 9's twins) would interleave their draws,
and a seeded run would no longer be the same run. :func:`seeded` reseeds the generator for the
block, holds a process-wide lock while it runs, and gives the generator back as it was.
Everything in tfviz that draws from the global generator does so inside it; other draws use a
``torch.Generator`` of their own.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_DRAWING = threading.RLock()  # reentrant: a seeded build may build a seeded part


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global generator seeded with ``seed``, no other seeded
    block of this process running at the same time, and the generator's state restored after."""
    with _DRAWING, torch.random.fork_rng():
        torch.manual_seed(seed)
        yield
