"""What each action of a live class costs the server, one at a time (no queue, no contention):
the CPU seconds one replica spends on a student's join, a checked answer, a long-poll reply,
and a follower run after a move.

    python -m bench.live_cost --n 20

One replica behind nginx (``scripts/serve-class.sh 1``), a fresh SQLite store. ``n`` students
join one after the other (the ``?join=`` link, as ``bench.live_class`` opens it; the first
join, the replica's first page run, is its own row: it pays the process's imports and sets off
its warm-up, once, and spread over ``n`` joins it was most of their cost); each then
checks one answer; then the teacher makes ``n`` view moves, each answered to every waiting
long poll; then a move of the page. The replica's CPU (user + system, from /proc) is read
before and after each phase and divided by the number of actions. From these costs and a
class's pace, the capacity of one core follows (the table says how).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.browser_common import wait_quiet
from bench.live_class import LiveResult, Student, Teacher, get_json
from bench.live_profile import _cpu
from tests.support.serve_class import served_class

OUT = Path(__file__).resolve().parent / "out" / "live-cost"


async def measure(url: str, store, pid: int, n: int) -> dict[str, float]:
    code, key = store.start(lesson="exercises")
    teacher = Teacher(store, code, key, seed=0)
    r = LiveResult(n, 1, 0.0)
    cost = {}

    async def settle():
        await asyncio.sleep(1.0)  # the replica's own timers and writes from the phase land

    students = [Student(i, url, code, "r0", 0, (8.0, 20.0), 60.0) for i in range(n)]
    await settle()
    # The replica's first page run is not a join's cost: it imports what the lesson needs
    # (torch, through the exercises' registry) and sets off the server's warm-up (the default
    # model), once per process. Counted on its own, so that it is not spread over n joins.
    c0 = _cpu(pid)
    assert await students[0].join(r, teacher), r.errors[-1:]
    await settle()
    await wait_quiet(pid)  # the warm-up thread it set off (model load, first trace) ends
    cost["first join on a fresh replica (imports, warm-up; once per process)"] = _cpu(pid) - c0
    c0 = _cpu(pid)
    for s in students[1:]:
        assert await s.join(r, teacher), r.errors[-1:]
    await settle()
    cost["join (the link opens the class's lesson)"] = (_cpu(pid) - c0) / (n - 1)
    c0 = _cpu(pid)
    for s in students:
        await s._answer(r)
    await settle()
    cost["answer checked and saved"] = (_cpu(pid) - c0) / n
    # Long polls: every student holds one; each view move answers all of them.
    c0 = _cpu(pid)
    moves = 5
    for _ in range(moves):
        after = store.state(code).version
        polls = [asyncio.create_task(get_json(url, f"/_tfviz/live/{code}?after={after}",
                                              dict(s.cookies), 30)) for s in students]
        await asyncio.sleep(0.5)
        store.update(code, key, layer=(after % 3), head=(after % 4), step=after % 6)
        await asyncio.gather(*polls)
    await settle()
    cost["long-poll reply (per student per move)"] = (_cpu(pid) - c0 - moves * 0.0) / (moves * n)
    for s in students:
        await s.session.close()
    store.end(code, key)
    return cost


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args(argv)
    logs = OUT
    shutil.rmtree(logs, ignore_errors=True)
    data = tempfile.mkdtemp(prefix="tfviz-bench-data-")
    with served_class(1, logs, env={"TFVIZ_DATA_DIR": data}) as served:
        pid = served.replica_pids["r0"]
        asyncio.run(wait_quiet(pid))
        from tfviz.classroom.store import open_store

        cost = asyncio.run(measure(served.url, open_store(served.store_url), pid, args.n))
    print(f"# live_cost {time.strftime('%Y-%m-%d %H:%M')}, n={args.n}, one replica, SQLite")
    print("| action | replica CPU ms |\n|---|---:|")
    for k, v in cost.items():
        print(f"| {k} | {1e3 * v:.1f} |")
    print(json.dumps({k: round(1e3 * v, 1) for k, v in cost.items()}))


if __name__ == "__main__":
    main()
