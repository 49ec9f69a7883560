"""One fine-tune comparison (``tfviz.training.finetune.fine_tune``) run in a thread of its own,
so the page that asked for it keeps answering, and at most ``gate``'s count at once.

    job = FinetuneJob(model, tokenizer, settings, gate)   # starts its thread
    job.status()      what a page shows: queued, running (which mode, which step), done, failed
    job.wait(5.0)     True once it has finished (tests, benchmarks)

The server keeps one job per settings (``tfviz.ui.finetune_cache``), so a class that presses
the button sixty times trains once. ``gate`` is a semaphore every job of the server shares:
a job waits for it before training, so however many different settings learners ask for,
only that many train at once. The thread reads ``model`` (the server's shared one) only to
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

from tfviz.training.finetune import MODES, FinetuneResult, FinetuneSettings, Stopped, fine_tune

THREAD_PREFIX = "tfviz-finetune-"  # "tfviz-": Streamlit's context warnings stay quiet for it
_ids = itertools.count(1)
log = logging.getLogger("tfviz")


@dataclass(frozen=True)
class JobStatus:
    state: str  # "queued", "running", "done", "failed" or "stopped"
    mode: str | None  # the mode training now, while running
    step: int  # steps done of that mode
    steps: int  # steps each mode takes
    result: FinetuneResult | None  # once done
    error: str = ""

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "stopped")

    @property
    def progress(self) -> float:
        """0..1 over the three modes' steps."""
        if self.state == "done":
            return 1.0
        if self.mode is None:
            return 0.0
        return (MODES.index(self.mode) * self.steps + self.step) / (len(MODES) * self.steps)


class FinetuneJob:
    def __init__(self, model, tokenizer, settings: FinetuneSettings, gate: threading.Semaphore,
                 name: str = "bert-tiny") -> None:
        self.settings = settings
        self._model, self._tokenizer, self._gate, self._name = model, tokenizer, gate, name
        self._lock = threading.Lock()
        self._state, self._mode, self._step = "queued", None, 0
        self._result: FinetuneResult | None = None
        self._error = ""
        self._stop, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._work, name=f"{THREAD_PREFIX}{next(_ids)}", daemon=True)
        atexit.register(_shutdown, weakref.ref(self))
        self._thread.start()

    def status(self) -> JobStatus:
        with self._lock:
            return JobStatus(self._state, self._mode, self._step, self.settings.steps, self._result,
                             self._error)

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
            while not self._gate.acquire(timeout=0.2):  # queued until a place is free
                if self._stop.is_set():
                    raise Stopped("stopped while queued")
            try:
                with self._lock:
                    self._state = "running"
                result = fine_tune(self._model, self._tokenizer, self.settings, name=self._name,
                                   on_progress=self._progress, stop=self._stop)
            finally:
                self._gate.release()
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
