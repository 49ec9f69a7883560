"""The same class on 1 and on 2 replicas behind nginx (scripts/serve-class.sh); and one live
class across replicas, on each store.

    python -m bench.bench_replicas --learners 40 --minutes 2            # 1 then 2 replicas
    python -m bench.bench_replicas --learners 40 --minutes 2 --rounds 2 # 1, 2, then 2, 1
    python -m bench.bench_replicas --live --learners 120 --replicas 2 --kill-one          # SQLite
    python -m bench.bench_replicas --live --learners 120 --replicas 2 --kill-one --redis  # Redis

**--live**: a teacher starts a live class and moves it every few seconds; every learner joins
it and works a worked exercise while following (``bench.live_class`` says exactly what each
one does and what is timed). ``--kill-one`` SIGKILLs one replica halfway. The store is the
script's default SQLite file (in a fresh data folder), or with ``--redis`` a redis-server the
script starts. The output ends with one line:
``learners=L replicas=N follow_p95_ms=X answers_sent=S answers_exported=E lost=0 errors=0
p95_ms=Y rejoin_p95_s=Z``; reconnects after the kill are reported apart, and the rejoin is the
time from a student's websocket dropping to their page following the class again. It also
says where the CPU went, by process (each replica, nginx, redis-server, the learners); with
``--profile``, by activity inside each replica too (``bench.live_profile``).

Each run starts ``serve-class.sh N`` afresh on free loopback ports, waits until every replica's
warm-up has finished, then sends the same headless class as ``bench.bench_class`` (same
learners, seed and pace) through nginx, and stops it. Rounds alternate the order, so a drift
in the machine's other load does not always favour the same set-up. The server's CPU and peak
memory cover the whole tree: nginx and every replica. nginx's and the replicas' logs stay in
bench/out/replicas/ until the same run comes again.

The output ends with one line per set-up:
``replicas=N learners=L actions=A errors=E p50_ms=X p95_ms=Y``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import time
from pathlib import Path

from bench.bench_class import ClassResult, pct, run_class, table
from bench.browser_common import wait_quiet
from tests.support.serve_class import served_class

OUT = Path(__file__).resolve().parent / "out" / "replicas"  # nginx's and the replicas' logs


def one_run(replicas: int, round_: int, args) -> ClassResult:
    logs = OUT / f"round{round_}-{replicas}"  # kept until the same run comes again
    shutil.rmtree(logs, ignore_errors=True)
    with served_class(replicas, logs) as served:
        for pid in served.replica_pids.values():  # each replica's warm-up, one by one
            asyncio.run(wait_quiet(pid))
        load_before = os.getloadavg()
        r = asyncio.run(run_class(served.url, args.learners, args.minutes * 60, seed=args.seed,
                                  pace=tuple(args.pace), timeout=args.timeout,
                                  server_pids=[served.proc.pid]))
        dead = served.proc.poll() is not None
    print(table(r))
    print(f"server CPU (nginx + replicas): {r.cpu_s:.1f} s over {r.seconds:.0f} s wall, "
          f"{r.cpu_s / max(len(r.actions), 1):.3f} s per action; peak memory {r.peak_mb:.0f} MB; "
          f"learners' own CPU {r.client_cpu_s:.1f} s")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{v:.2f}" for v in load_before)
          + "; after " + ", ".join(f"{v:.2f}" for v in r.load), flush=True)
    for a in r.errors[:10]:
        print(f"  error: learner {a.learner} {a.kind} {a.label[:40]!r} on {a.page} "
              f"at {a.at:.1f} s: {a.error}")
    if dead:
        raise RuntimeError("serve-class.sh stopped during the run (a replica or nginx died)")
    return r


def live_run(args) -> None:
    """One live class across ``args.replicas`` replicas (see the module's docstring)."""
    import tempfile

    from bench.live_class import run_live, table as live_table
    from bench.live_profile import RoleWatch, report, spied, spy
    from tfviz.classroom.store import open_store

    (n,) = args.replicas
    logs = OUT / f"live-{n}-{'redis' if args.redis else 'sqlite'}"
    shutil.rmtree(logs, ignore_errors=True)
    data = tempfile.mkdtemp(prefix="tfviz-bench-data-")  # a fresh store, nobody else's classes
    extra = ("--redis",) if args.redis else ()
    with served_class(n, logs, extra=extra, env={"TFVIZ_DATA_DIR": data}) as served:
        for pid in served.replica_pids.values():
            asyncio.run(wait_quiet(pid))
        if served.store_url is None:
            raise RuntimeError(f"serve-class.sh named no store:\n{served.output[-2000:]}")
        store = open_store(served.store_url)
        victim = served.replica_pids["r0"] if args.kill_one else None
        roles = RoleWatch(served.proc.pid, served.replica_pids)
        roles.start()
        spies = spy(served.replica_pids, (args.minutes * 30 if victim else args.minutes * 60) - 5,
                    logs / "py-spy") if args.profile else []
        print(f"store {served.store_url}; {args.learners} learners over {n} replicas, "
              f"{args.minutes:g} min" + (", r0 SIGKILLed halfway" if victim else ""), flush=True)
        r = asyncio.run(run_live(served.url, store, args.learners, args.minutes * 60,
                                 replicas=sorted(served.replica_ports), seed=args.seed,
                                 timeout=args.timeout,
                                 kill_at=args.minutes * 30 if victim else None, kill_pid=victim,
                                 server_pids=[served.proc.pid]))
        alive = served.proc.poll() is None
        cpu = roles.stop()
        for p in spies:
            p.wait(timeout=60)
    print(live_table(r))
    print(report(cpu, r.seconds, len(r.actions_ms), spied(logs / "py-spy") if spies else None))
    print(f"teacher moves: {r.moves} (made in the browser: {r.view_moves}); "
          f"reconnects after the kill: {r.reconnects} (connections refused and retried: "
          f"{r.retries}; runs cut by the kill: {r.cut}); "
          f"server CPU (nginx + replicas + store): {r.cpu_s:.1f} s over {r.seconds:.0f} s; "
          f"peak memory {r.peak_mb:.0f} MB; script still serving: {alive}")
    for e in r.errors[:10]:
        print(f"  error: {e}")
    print(r.line())


def line(replicas: int, r: ClassResult) -> str:
    lat = r.latencies_ms()
    return (f"replicas={replicas} learners={r.learners} actions={len(r.actions)} "
            f"errors={len(r.errors)} p50_ms={pct(lat, .5):.0f} p95_ms={pct(lat, .95):.0f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learners", type=int, default=40)
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--replicas", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2],
                    help="set-ups to compare, comma-separated (default 1,2)")
    ap.add_argument("--rounds", type=int, default=1, help="repeat, alternating the order")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pace", type=float, nargs=2, default=[5.0, 15.0], metavar=("A", "B"))
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--live", action="store_true", help="one live class across the replicas")
    ap.add_argument("--kill-one", action="store_true", help="with --live: SIGKILL r0 halfway")
    ap.add_argument("--redis", action="store_true", help="with --live: the store is Redis")
    ap.add_argument("--profile", action="store_true",
                    help="with --live: py-spy each replica (until the kill) and say where "
                         "the CPU went by activity")
    args = ap.parse_args(argv)
    if args.live:
        if len(args.replicas) != 1:
            ap.error("--live takes one number of replicas, e.g. --replicas 2")
        return live_run(args)
    print(f"# bench_replicas {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; {args.learners} learners, seed {args.seed}, "
          f"pace {args.pace[0]:g}-{args.pace[1]:g} s, {args.minutes:g} min per run", flush=True)
    results: list[tuple[int, ClassResult]] = []
    for round_ in range(args.rounds):
        order = args.replicas if round_ % 2 == 0 else args.replicas[::-1]
        for n in order:
            print(f"\n## round {round_ + 1}: {n} replica(s) behind nginx", flush=True)
            results.append((n, one_run(n, round_ + 1, args)))
    print("\n| replicas | learners | actions | errors | p50 ms | p95 ms | server CPU s/action "
          "| peak MB |\n|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in results:
        lat = r.latencies_ms()
        print(f"| {n} | {r.learners} | {len(lat)} | {len(r.errors)} | {pct(lat, .5):.0f} | "
              f"{pct(lat, .95):.0f} | {r.cpu_s / max(len(lat), 1):.3f} | {r.peak_mb:.0f} |")
    print()
    for n, r in results:
        print(line(n, r))


if __name__ == "__main__":
    main()
