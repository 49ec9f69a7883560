"""The training lab's queue (tfviz.lab.runs.LabRunner): the cap on runs at once, the order of
the waiting, one job per session, stop, drop and prune."""
from __future__ import annotations

import threading

import pytest

from tfviz.lab.runs import LabBusy, LabRunner
from tfviz.lab.settings import LabSettings
from tfviz.lab.train import train


class Gate:
    """A fake trainer that waits at a gate, and counts how many train at once."""

    def __init__(self):
        self.open = threading.Event()
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, settings, log, stop, threads):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        log.update(state="running")
        while not self.open.wait(0.01):
            if stop.is_set():
                break
        with self.lock:
            self.now -= 1
        log.update(state="stopped" if stop.is_set() else "done", step=0)
        return log.view()


def test_ten_sessions_at_once_two_train_eight_wait_in_order():
    gate = Gate()
    runner = LabRunner(max_running=2, train_fn=gate)
    s = LabSettings.default("copy", steps=10)
    errors = []

    def press(i):
        try:
            runner.submit(f"s{i}", s)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=press, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    views = {f"s{i}": runner.status(f"s{i}") for i in range(10)}
    running = [k for k, v in views.items() if v.state == "running"]
    queued = sorted(v.position for v in views.values() if v.state == "queued")
    assert len(running) == 2 and queued == list(range(1, 9))
    assert runner.counts() == (2, 8)
    with pytest.raises(LabBusy):
        runner.submit("s3", s)  # one job per session
    cancelled = [k for k, v in views.items() if v.position == 4]
    assert runner.stop(cancelled[0]) and runner.status(cancelled[0]).state == "cancelled"
    assert sorted(v.position for v in map(runner.status, views) if v.state == "queued") == list(range(1, 8))
    gate.open.set()
    assert runner.join(timeout=60)
    final = {k: runner.status(k).state for k in views}
    assert gate.peak == 2
    assert sorted(final.values()) == ["cancelled"] + ["done"] * 9


def test_real_runs_of_ten_sessions_respect_the_cap():
    peak, now, lock = [0], [0], threading.Lock()

    def counted(settings, log, stop, threads):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        try:
            return train(settings, log, stop, threads)
        finally:
            with lock:
                now[0] -= 1

    runner = LabRunner(max_running=2, train_fn=counted)
    s = LabSettings.default("order", d_model=16, n_heads=1, n_layers=1, steps=2)
    for i in range(10):
        runner.submit(f"s{i}", s)
    runner.stop("s9")  # cancelled while queued
    assert runner.join(timeout=300)
    states = [runner.status(f"s{i}").runs[0].state for i in range(10)]
    assert states == ["done"] * 9 + ["cancelled"] and peak[0] <= 2


def test_one_job_per_session_stop_drop_and_prune():
    gate = Gate()
    runner = LabRunner(max_running=1, train_fn=gate)
    s = LabSettings.default("copy", steps=10)
    job = runner.submit("a", [s, s.replace(seed=1)])  # a comparison: one job, two runs
    assert len(job.runs) == 2
    with pytest.raises(LabBusy):
        runner.submit("a", s)
    runner.submit("b", s)
    assert runner.status("b").position == 1
    assert runner.stop("a")
    for _ in range(3000):  # "a" stops at its next look at the flag; "b" then waits at the gate
        if runner.status("a").finished:
            break
        threading.Event().wait(0.01)
    view = runner.status("a")
    assert view.state == "stopped" and [r.state for r in view.runs] == ["stopped", "cancelled"]
    runner.submit("a", s)  # a finished job does not block a new one
    assert runner.prune(alive=lambda sid: sid != "a") == 1 and runner.status("a") is None
    gate.open.set()
    assert runner.join(timeout=30)
    runner.drop("b")
    assert runner.status("b") is None and runner.counts() == (0, 0)
    with pytest.raises(ValueError):
        runner.submit("c", [])
