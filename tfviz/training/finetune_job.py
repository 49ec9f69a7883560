"""One fine-tune comparison (``tfviz.training.finetune.fine_tune``) run in a thread of its own,
so the page that asked for it keeps answering, and only when ``slot`` says its turn has come.

    job = FinetuneJob(model, tokenizer, settings, slot)   # starts its thread
    job.status()      what a page shows: queued, running (which mode, which step), done, failed
    job.wait(5.0)     True once it has finished (tests, benchmarks)

The server keeps one job per settings (``tfviz.ui.finetune_cache``), so a class that presses
the button sixty times trains once. ``slot`` is the job's place in a queue (a :class:`Slot`):
the server gives it a ticket of the training lab's queue (``tfviz.lab.runs.LabRunner.ticket``),
so fine-tunes and lab runs wait in one line under one cap, however many learners ask. The thread reads ``model`` (the server's shared one) only to
copy it. At interpreter exit a running job is stopped between two steps and waited for: a
thread still inside torch while the interpreter tears down aborts the process.
"""
from __future__ import annotations

import atexit
import itertools
import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

from tfviz.threads import thread_name
from tfviz.training.finetune import FinetuneResult, FinetuneSettings, Stopped, fine_tune

_ids = itertools.count(1)
log = logging.getLogger("tfviz")


class Slot(Protocol):
    """A place in a queue of trainings, used once: ``acquire(timeout)`` is True once it is this
    job's turn, ``release()`` ends the turn, ``cancel()`` leaves the queue (or ends the turn);
    ``position`` is the place in the queue while waiting (1 = next), else None."""

    def acquire(self, timeout: float | None = None) -> bool: ...

    def release(self) -> None: ...

    def cancel(self) -> None: ...

    @property
    def position(self) -> int | None: ...


@dataclass(frozen=True)
class JobStatus:
    state: str  # "queued", "running", "done", "failed" or "stopped"
    mode: str | None  # the mode training now, while running
    step: int  # steps done of that mode
    steps: int  # steps each mode takes
    result: FinetuneResult | None  # once done
    error: str = ""
    position: int | None = None  # place in the server's training queue, while queued
    modes: tuple[str, ...] = ()  # every mode the job trains, in order (its settings')

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "stopped")

    @property
    def progress(self) -> float:
        """0..1 over every mode's steps."""
        if self.state == "done":
            return 1.0
        if self.mode is None or self.mode not in self.modes:
            return 0.0
        return (self.modes.index(self.mode) * self.steps + self.step) / (len(self.modes) * self.steps)


class FinetuneJob:
    def __init__(self, model, tokenizer, settings: FinetuneSettings, slot: Slot,
                 name: str = "bert-tiny") -> None:
        self.settings = settings
        self._model, self._tokenizer, self._slot, self._name = model, tokenizer, slot, name
        self._lock = threading.Lock()
        self._state, self._mode, self._step = "queued", None, 0
        self._result: FinetuneResult | None = None
        self._error = ""
        self._stop, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._work, name=thread_name(f"finetune-{next(_ids)}"), daemon=True)
        atexit.register(_shutdown, weakref.ref(self))
        self._thread.start()

    def status(self) -> JobStatus:
        with self._lock:
            state = self._state
            position = self._slot.position if state == "queued" else None
            return JobStatus(state, self._mode, self._step, self.settings.steps, self._result,
                             self._error, position, self.settings.modes)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop between two steps (or before starting) and wait up to ``timeout`` s."""
        self._stop.set()
        self._done.wait(timeout)

    def _progress(self, mode: str, step: int) -> None:
        with self._lock:
            self._mode, self._step = mode, step

    def _work(self) -> None:
        try:
            while not self._slot.acquire(timeout=0.2):  # queued until its turn
                if self._stop.is_set():
                    self._slot.cancel()
                    raise Stopped("stopped while queued")
            try:
                with self._lock:
                    self._state = "running"
                result = fine_tune(self._model, self._tokenizer, self.settings, name=self._name,
                                   on_progress=self._progress, stop=self._stop)
            finally:
                self._slot.release()
            with self._lock:
                self._state, self._result = "done", result
        except Stopped:
            with self._lock:
                self._state = "stopped"
        except Exception as err:  # the page says it failed; the log gets the traceback
            log.exception("fine-tune %s failed", self.settings)
            with self._lock:
                self._state, self._error = "failed", f"{type(err).__name__}: {err}"
        finally:
            self._model = None  # the job keeps its numbers only
            self._done.set()


def _shutdown(ref: weakref.ref) -> None:
    job = ref()
    if job is not None:
        job.stop()
