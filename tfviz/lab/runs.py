"""The server's training queue: each learner's runs in background threads, a few at a time.

    submit(session, settings)   queue a job (one run, or the two or three runs of a comparison)
    status(session)             what the learner sees: queued (with its place), running, finished
    stop(session)               a queued job is cancelled; a running one stops after its step
    drop(session)               forget the job and its records (stopping it first)
    ticket(name)                a place in the same queue for other training (lesson 15's
                                fine-tune): every training on the server shares one cap

Rules, held under one lock: at most ``max_running`` jobs train at once (default 2, one per
core); the others wait in a queue, first come first served, and each learner sees their place
in it. A session has at most one job in flight: a second ``submit`` while one is queued or
running raises :class:`LabBusy`. The runs of one job train one after the other, in its slot.

One :class:`LabRunner` is shared by every learner (the page gets it from ``st.cache_resource``),
so it is thread-safe and holds no model a learner could touch: each run builds its own model
inside its thread (``tfviz.lab.train``), and learners only ever get immutable views. Finished
jobs keep only their logs (numbers and a few small attention maps); ``prune`` forgets the jobs
of sessions that have gone and of finished jobs older than ``keep_seconds``.
"""
from __future__ import annotations

import atexit
import itertools
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tfviz.lab.settings import LabSettings
from tfviz.lab.train import RunLog, RunView, train
from tfviz.threads import thread_name

MAX_RUNNING = 2  # one training per core of this 2-core machine
MAX_QUEUED = 200  # a class of 40 is fine; beyond this, "come back in a minute"


class LabBusy(RuntimeError):
    """This session already has a job queued or running (or the queue is full)."""


@dataclass
class _Job:
    id: int
    session: str
    logs: tuple[RunLog, ...]
    stop: threading.Event = field(default_factory=threading.Event)
    state: str = "queued"  # queued, running, then done, stopped (while running) or cancelled (queued)
    finished_at: float | None = None
    go: threading.Event | None = None  # a ticket's job: set when its slot is free
    done: threading.Event | None = None  # a ticket's job: set when its holder is finished


class Ticket:
    """A place in a :class:`LabRunner`'s queue for training that is not a lab run (lesson 15's
    fine-tune), so that every training on the server waits in one line under one cap.

    ``acquire(timeout)`` is True once the slot is this ticket's (False while still queued);
    ``release()`` gives the slot back when the training is over; ``cancel()`` leaves the queue
    (or gives the slot back). ``position`` is the place in the queue, 1 = next. One use each.
    """

    def __init__(self, runner: "LabRunner", job: _Job) -> None:
        self._runner, self._job = runner, job

    def acquire(self, timeout: float | None = None) -> bool:
        return self._job.go.wait(timeout)

    def release(self) -> None:
        self._job.done.set()

    def cancel(self) -> None:
        self._runner._leave(self._job)

    @property
    def position(self) -> int | None:
        return self._runner._position(self._job)


@dataclass(frozen=True)
class JobView:
    """A learner's job as they see it at one moment."""

    id: int
    state: str  # "queued", "running", "done", "stopped" or "cancelled"
    position: int | None  # place in the queue (1 = next), while queued
    runs: tuple[RunView, ...]

    @property
    def finished(self) -> bool:
        return self.state in ("done", "stopped", "cancelled")

    @property
    def current(self) -> RunView:
        """The run training now (or the last one to have started)."""
        started = [r for r in self.runs if r.state != "queued"]
        return started[-1] if started else self.runs[0]

    @property
    def progress(self) -> float:
        """0..1 over every step of every run of the job."""
        total = sum(r.settings.steps for r in self.runs)
        done = sum(r.settings.steps if r.finished else r.step for r in self.runs)
        return done / total if total else 1.0


class LabRunner:
    def __init__(self, max_running: int = MAX_RUNNING, threads: int | None = 1,
                 keep_seconds: float = 3600.0, max_queued: int = MAX_QUEUED,
                 train_fn: Callable = train) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running, self.threads = max_running, threads
        self.keep_seconds, self.max_queued = keep_seconds, max_queued
        self._train = train_fn
        self._lock = threading.Lock()
        self._queue: deque[_Job] = deque()
        self._jobs: dict[str, _Job] = {}  # session -> its latest job
        self._running: set[int] = set()
        self._ids = itertools.count(1)
        self._threads: dict[int, threading.Thread] = {}
        # At interpreter exit, stop every job and wait for its thread: a daemon thread still
        # inside torch while the interpreter tears down aborts the process ("terminate called
        # without an active exception", exit code 134): a server's Ctrl+C, or a test run's end.
        atexit.register(_shutdown, weakref.ref(self))

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every queued and running job and wait (up to ``timeout`` s) for their threads."""
        with self._lock:
            jobs = list(self._jobs.values())
            tickets = [j for j in list(self._queue) if j.go is not None]
        for job in jobs:
            self.stop(job.session)
        for job in tickets:
            self._leave(job)
        self.join(timeout)

    # ----- learners ------------------------------------------------------------------------
    def submit(self, session: str, settings: LabSettings | Sequence[LabSettings]) -> JobView:
        runs = (settings,) if isinstance(settings, LabSettings) else tuple(settings)
        if not runs or not all(isinstance(s, LabSettings) for s in runs) or len(runs) > 4:
            raise ValueError("A job is one to four LabSettings.")
        with self._lock:
            old = self._jobs.get(session)
            if old is not None and old.state in ("queued", "running"):
                raise LabBusy("You already have a training queued or running; stop it first.")
            if len(self._queue) >= self.max_queued:
                raise LabBusy("The training queue is full right now; try again in a minute.")
            job = _Job(next(self._ids), session, tuple(RunLog(s) for s in runs))
            self._jobs[session] = job
            self._queue.append(job)
            self._dispatch()
            return self._view(job)

    def ticket(self, name: str = "other") -> Ticket:
        """A place in this queue for a training the runner does not run itself (see
        :class:`Ticket`); it is queued at once, behind the lab runs already waiting."""
        with self._lock:
            if len(self._queue) >= self.max_queued:
                raise LabBusy("The training queue is full right now; try again in a minute.")
            job = _Job(next(self._ids), f"ticket:{name}", (), go=threading.Event(),
                       done=threading.Event())
            self._queue.append(job)
            self._dispatch()
            return Ticket(self, job)

    def status(self, session: str) -> JobView | None:
        with self._lock:
            job = self._jobs.get(session)
            return None if job is None else self._view(job)

    def stop(self, session: str) -> bool:
        """Stop this session's job; True if there was one in flight."""
        with self._lock:
            job = self._jobs.get(session)
            if job is None or job.state not in ("queued", "running"):
                return False
            job.stop.set()
            if job.state == "queued":
                self._queue.remove(job)
                self._cancel(job)
            return True

    def drop(self, session: str) -> None:
        """Stop and forget this session's job; its records go with it."""
        self.stop(session)
        with self._lock:
            self._jobs.pop(session, None)

    # ----- the server ----------------------------------------------------------------------
    def counts(self) -> tuple[int, int]:
        """(jobs running, jobs queued)."""
        with self._lock:
            return len(self._running), len(self._queue)

    def prune(self, alive: Callable[[str], bool] | None = None) -> int:
        """Forget finished jobs older than ``keep_seconds`` and every job of a session for which
        ``alive`` says False (a running one is stopped first). Returns how many were dropped."""
        now = time.monotonic()
        with self._lock:
            sessions = list(self._jobs.items())
        gone = [s for s, job in sessions
                if (alive is not None and not alive(s)) or
                (job.finished_at is not None and now - job.finished_at > self.keep_seconds)]
        for s in gone:
            self.drop(s)
        return len(gone)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or running (tests, benchmarks). True if idle in time."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._queue and not self._running:
                    return True
                threads = list(self._threads.values())
            for t in threads:
                t.join(None if end is None else max(0.0, end - time.monotonic()))
            if end is not None and time.monotonic() >= end:
                with self._lock:
                    return not self._queue and not self._running

    # ----- inside (called with the lock held, except _work) -----------------------------------
    def _view(self, job: _Job) -> JobView:
        position = self._queue.index(job) + 1 if job.state == "queued" else None
        return JobView(job.id, job.state, position, tuple(log.view() for log in job.logs))

    def _position(self, job: _Job) -> int | None:
        with self._lock:
            return self._queue.index(job) + 1 if job.state == "queued" else None

    def _leave(self, job: _Job) -> None:
        """A ticket leaves: out of the queue if it waits there, else its slot is given back."""
        with self._lock:
            if job.state == "queued":
                self._queue.remove(job)
                self._cancel(job)
                return
        job.stop.set()
        job.done.set()

    def _cancel(self, job: _Job) -> None:
        job.state, job.finished_at = "cancelled", time.monotonic()
        for log in job.logs:
            if log.state == "queued":
                log.update(state="cancelled")

    def _dispatch(self) -> None:
        while self._queue and len(self._running) < self.max_running:
            job = self._queue.popleft()
            job.state = "running"
            self._running.add(job.id)
            t = threading.Thread(target=self._work, args=(job,), name=thread_name(f"lab-{job.id}"),
                                 daemon=True)
            self._threads[job.id] = t
            t.start()

    def _work(self, job: _Job) -> None:
        try:
            if job.go is not None:  # a ticket: its holder trains; the slot is held till it is done
                job.go.set()
                job.done.wait()
            for log in job.logs:
                if job.stop.is_set():
                    log.update(state="cancelled")
                    continue
                self._train(log.settings, log, job.stop, self.threads)
        finally:
            with self._lock:
                job.state = "stopped" if job.stop.is_set() else "done"
                job.finished_at = time.monotonic()
                self._running.discard(job.id)
                self._threads.pop(job.id, None)
                self._dispatch()


def _shutdown(ref: weakref.ref) -> None:
    runner = ref()
    if runner is not None:
        runner.shutdown()
