"""What one poll of the teacher's dashboard costs the live-class store, on both backends, with a
class holding ``--answers`` answers (20,000: the cap), and what a student's heartbeat and answer
cost.

    python -m bench.bench_live_store [--answers 20000] [--polls 200]

Rows:
- ``summary, before``: what ``LiveStore.summary`` did before the counts were kept by the
  backend, replayed on today's store: a write transaction (the teacher's keep-alive, fsynced
  on SQLite) and every answer row read and counted in Python (``summarise(rows)``);
- ``summary``: today's, one read of the counts the backend keeps with each answer (SQLite's
  ``counts`` table, a Redis hash) and no write (the keep-alive is written once a minute at most);
- ``room``: the room's counts (here, lost, answered to the current question), one read;
- ``heartbeat``: a student's "here" (SQLite: a commit without fsync);
- ``answer``: one answer stored for good (SQLite: fsynced).

Times are per call, median and p95, in ms, on a SQLite file in a temporary folder and on a
redis-server of our own (``tests/support/redis_server.py``, appendfsync always).
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from tfviz.classroom.catalog import STEPS
from tfviz.classroom.live import Limits, new_student, summarise
from tfviz.classroom.store import open_store


def _fill(store, code: str, n: int) -> None:
    """``n`` answers to the class through the backend's own write path, put in fast: SQLite
    without fsync while filling, Redis in one pipeline."""
    rng = random.Random(0)
    boxes = [(e, b) for e, steps in STEPS.items() for b in steps]
    rows = []
    for i in range(n):
        exercise, box = rng.choice(boxes)
        rows.append({"exercise": exercise, "box": box, "correct": rng.random() < 0.5,
                     "slip": None, "t": 1.0 + i})
    b = store.backend
    if store.url.startswith("sqlite"):
        b._db.execute("PRAGMA synchronous=OFF")
        try:
            for r in rows:
                b.add_answer(code, r, alive_since=0.0, max_answers=10**9, max_slip_kinds=24,
                             late_after=2.0)
        finally:
            b._db.execute("PRAGMA synchronous=FULL")
        return
    import json

    with b.r.pipeline(transaction=False) as pipe:
        for r in rows:
            keys = [b._k("class", code), b._k("answers", code), b._k("tally", code)]
            args = [0, 10**9, 24, 2.0, r["exercise"], r["box"], "1" if r["correct"] else "0", "",
                    r["t"], json.dumps(r)[1:], json.dumps(r)[1:]]
            b._add(keys=keys, args=args, client=pipe)
        pipe.execute()


def _times(call, n: int) -> tuple[float, float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    out.sort()
    return statistics.median(out), out[int(0.95 * (len(out) - 1))]


def measure(url: str, answers: int, polls: int) -> list[tuple[str, float, float]]:
    store = open_store(url, limits=Limits(max_answers=answers + polls))  # room for "answer"
    code, key = store.start()
    _fill(store, code, answers)
    store.ask(code, key, *next((e, b) for e, steps in STEPS.items() for b in steps))
    students = [new_student() for _ in range(50)]
    for s in students:
        store.heartbeat(code, s)
    assert sum(s.answered for s in store.summary(code, key)) == answers

    def before():
        store._teacher_change(code, key, lambda rec: None)
        return summarise(store.backend.answers(code))

    assert before() == store.summary(code, key)
    return [("summary, before", *_times(before, max(10, polls // 10))),
            ("summary", *_times(lambda: store.summary(code, key), polls)),
            ("room", *_times(lambda: store.room(code, key), polls)),
            ("heartbeat", *_times(lambda: store.heartbeat(code, random.choice(students)), polls)),
            ("answer", *_times(lambda: store.submit_answer(code, "layernorm", "std", True),
                               max(10, polls // 4)))]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=20_000)
    ap.add_argument("--polls", type=int, default=200)
    args = ap.parse_args(argv)
    from tests.support.redis_server import have_redis, redis_server

    with tempfile.TemporaryDirectory() as tmp:
        results = {"SQLite": measure(f"sqlite:///{Path(tmp) / 'live.sqlite3'}", args.answers,
                                     args.polls)}
        if have_redis():
            with redis_server(Path(tmp) / "redis") as server:
                results["Redis"] = measure(server.url, args.answers, args.polls)
    print(f"live-class store, a class of {args.answers:,} answers: ms per call, median / p95")
    print(f"| call | {' | '.join(results)} |")
    print("|---|" + "---:|" * len(results))
    for i, (name, *_rest) in enumerate(results["SQLite"]):
        cells = [f"{rows[i][1]:.2f} / {rows[i][2]:.2f}" for rows in results.values()]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
