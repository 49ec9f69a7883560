"""Nothing here seeds the random generators for every test: that would hide whether code is
deterministic by itself. Models seed their own weights (``ModelConfig.init_seed``), library
code takes explicit generators, and a test that draws random numbers seeds them itself."""

import pytest
import torch

from tfviz.classroom.live import LiveStore

# One thread per torch op, as the app's server runs them (tfviz.ui.warmup.one_thread_per_op).
# Set before any test, so every number a worker computes comes from the same kernels: the
# first AppTest of a worker would otherwise switch it from two threads to one halfway. The
# suite runs two workers on two cores, so more threads per op would only compete.
torch.set_num_threads(1)


class Clock:
    """A fake clock for code that takes a ``clock`` (a callable returning seconds), such as
    tfviz.classroom.live.LiveStore: time moves only when a test advances it."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float = 0.0, seconds: float = 0.0) -> None:
        self.now += hours * 3600 + seconds


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(clock):
    """The live-class tests' LiveStore, keeping time by ``clock``."""
    return LiveStore(clock=clock)
