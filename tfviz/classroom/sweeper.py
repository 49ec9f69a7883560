"""Clean-up on a timer, in every server process: classes idle too long are closed, and a closed
class's record and answers are forgotten at the end of their day, whether or not anyone starts
a class (``LiveStore.start`` sweeps too, but a store nobody starts a class on would keep them).

One daemon thread per process (named ``tfviz-sweep``), started with the server
(``tfviz.classroom.store.check_at_start``). Every replica sweeps: a sweep is idempotent and
atomic in the backend, so two at once do the work once; jitter keeps replicas started together
from sweeping in step. A store that is down is tried again at the next tick.

>>> from tfviz.classroom.store import open_store
>>> sweeper = Sweeper(open_store("sqlite://"), every_s=0.01)
>>> sweeper.start()
>>> sweeper.name, sweeper.daemon
('tfviz-sweep', True)
>>> sweeper.stop()
"""
from __future__ import annotations

import logging
import random
import threading

from tfviz.classroom.guard import StoreDown
from tfviz.threads import thread_name

SWEEP_S = 60.0  # a closed class outlives its day by at most this, an idle one its 4 hours
NAME = thread_name("sweep")

log = logging.getLogger("tfviz")


class Sweeper(threading.Thread):
    """A daemon thread calling ``store.sweep()`` every ``every_s`` (± 10 %) until ``stop``."""

    def __init__(self, store, every_s: float = SWEEP_S):
        super().__init__(name=NAME, daemon=True)
        self.store, self.every_s = store, every_s
        self._stopping = threading.Event()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)

    def run(self) -> None:
        while not self._stopping.wait(self.every_s * random.uniform(0.9, 1.1)):
            try:
                self.store.sweep()
            except StoreDown:
                pass  # the store comes back; the next tick sweeps
            except Exception:  # never let one bad sweep end the process's clean-up
                log.exception("live-class sweep failed")


def sweep_in_background(store, every_s: float = SWEEP_S) -> Sweeper:
    """This process's sweeper of ``store``, started once: a second call (a server entry run
    again) finds it alive and starts no other."""
    for thread in threading.enumerate():
        if isinstance(thread, Sweeper) and thread.is_alive():
            return thread
    sweeper = Sweeper(store, every_s)
    sweeper.start()
    return sweeper
