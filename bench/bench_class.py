"""A whole class on one server, measured without browsers (issue #15).

    python -m bench.bench_class --learners 40 --minutes 2
    python -m bench.bench_class --ramp --minutes 1          # 10, 20, 40, 60, ... until p95 > 1 s
    python -m bench.bench_class --url http://127.0.0.1:8080 --server-pids 123,456
                                                            # a running server (nginx + replicas)

Each learner is a headless client of Streamlit's websocket protocol (bench/headless.py), so
no browser shares the server's two cores. Learners arrive spread over the first pace
interval, open a lesson, type their own sentence, switch model and try what-ifs and view
changes, one action every 5-15 s (``--pace``), from their own seeded generator (``--seed``);
see bench/class_learner.py. An action's latency runs from its message to the server's
script_finished for that run. Errors: an exception element, our "Sorry, something went
wrong" message, no script_finished within ``--timeout`` s, a dropped websocket, a run that
finished other than successfully.

Without ``--url`` the server is started fresh (``streamlit run server.py``, its warm-up
awaited, file watching off so edits to the repo during a run do not reload modules) and logs
how long each page run took on its side (TFVIZ_LOG_RUNS=1). Its CPU seconds (user + system,
from /proc, the whole process tree) and its peak resident memory (polled every 0.2 s) are
reported; with ``--url`` they come from ``--server-pids``, else they are n/a.

The output ends with exactly one line:
``learners=40 actions=N errors=E p50_ms=X p95_ms=Y``.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.class_learner import Action, Learner
from tests.support.serve import streamlit_server

TARGET_P95_MS = 1000
RAMP = [10, 20, 40, 60, 80, 120, 160, 200]
LOG = Path(__file__).resolve().parent / "out" / "class-server.log"


# -- the server's cost, from /proc -------------------------------------------------------
def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes (and their descendants) used so far."""
    total = 0
    for p in {c for pid in pids for c in process_tree(pid)}:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def rss_mb(pids: list[int]) -> float:
    total = 0
    for p in {c for pid in pids for c in process_tree(pid)}:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


class ServerWatch(threading.Thread):
    """CPU seconds used between start and stop, and the peak resident memory meanwhile."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.pids, self.peak_mb, self.running = pids, 0.0, True
        self.cpu0 = cpu_seconds(pids) if pids else 0.0
        self.cpu = float("nan")

    def run(self):
        while self.running:
            self.peak_mb = max(self.peak_mb, rss_mb(self.pids))
            time.sleep(0.2)

    def stop(self):
        self.running = False
        self.cpu = cpu_seconds(self.pids) - self.cpu0 if self.pids else float("nan")
        if not self.pids:
            self.peak_mb = float("nan")


# -- a class ----------------------------------------------------------------------------
@dataclass
class ClassResult:
    learners: int
    seconds: float
    actions: list[Action] = field(default_factory=list)
    cpu_s: float = float("nan")
    peak_mb: float = float("nan")
    load: tuple = ()  # load average (1, 5, 15 min) at the end
    client_cpu_s: float = float("nan")  # this process: the learners' own share of the cores

    @property
    def errors(self) -> list[Action]:
        return [a for a in self.actions if a.error]

    def latencies_ms(self, kind: str | None = None) -> list[float]:
        return [a.seconds * 1e3 for a in self.actions if kind is None or a.kind == kind]


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, as the other benchmarks compute it (q in 0..1)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary_line(r: ClassResult) -> str:
    lat = r.latencies_ms()
    return (f"learners={r.learners} actions={len(r.actions)} errors={len(r.errors)} "
            f"p50_ms={pct(lat, .5):.0f} p95_ms={pct(lat, .95):.0f}")


async def run_class(url: str, learners: int, seconds: float, *, seed: int = 0,
                    pace: tuple[float, float] = (5.0, 15.0), timeout: float = 30.0,
                    server_pids: list[int] | None = None) -> ClassResult:
    """``learners`` headless learners on ``url`` for ``seconds``; the server's CPU and
    memory are measured when ``server_pids`` are given."""
    watch = ServerWatch(server_pids or [])
    watch.start()
    client0 = time.process_time()
    t0 = time.perf_counter()
    class_ = [Learner(i, url, seed, pace, timeout) for i in range(learners)]
    await asyncio.gather(*(lr.attend(t0, t0 + seconds) for lr in class_))
    watch.stop()
    return ClassResult(learners, time.perf_counter() - t0,
                       sorted((a for lr in class_ for a in lr.actions), key=lambda a: a.at),
                       watch.cpu, watch.peak_mb, os.getloadavg(), time.process_time() - client0)


@contextlib.contextmanager
def fresh_server():
    """A fresh ``streamlit run server.py`` whose warm-up has finished: (url, [pid])."""
    from bench.browser_common import wait_quiet

    LOG.parent.mkdir(exist_ok=True)
    env = {"TFVIZ_LOG_RUNS": "1", "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    with streamlit_server(env=env, log_path=LOG) as (url, proc, _):
        asyncio.run(wait_quiet(proc.pid))
        yield url, [proc.pid]
        if proc.poll() is not None:
            raise RuntimeError(f"the server died; see {LOG}")


# -- the report -------------------------------------------------------------------------
def table(r: ClassResult) -> str:
    rows = ["| action | count | errors | p50 ms | p95 ms | max ms |",
            "|---|---:|---:|---:|---:|---:|"]
    kinds = ["load", "open", "type", "model", "what-if", "view"]
    for kind in kinds + [None]:
        lat = r.latencies_ms(kind)
        if lat:
            errs = sum(1 for a in r.errors if kind is None or a.kind == kind)
            rows.append(f"| {kind or '**all**'} | {len(lat)} | {errs} | {pct(lat, .5):.0f} | "
                        f"{pct(lat, .95):.0f} | {max(lat):.0f} |")
    return "\n".join(rows)


def server_runs(start: int) -> str:
    """The server's own time per full page run (TFVIZ_LOG_RUNS), by page, slowest first."""
    from tfviz.ui.runlog import parse

    with open(LOG, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        by_page = defaultdict(list)
        for page, ms in parse(f):
            by_page[page].append(ms)
    rows = ["| page | full runs | p50 ms | p95 ms | max ms |", "|---|---:|---:|---:|---:|"]
    for page, ms in sorted(by_page.items(), key=lambda kv: -pct(kv[1], .95)):
        rows.append(f"| {page} | {len(ms)} | {pct(ms, .5):.0f} | {pct(ms, .95):.0f} | "
                    f"{max(ms):.0f} |")
    return "\n".join(rows)


def report(r: ClassResult, load_before: tuple, log_start: int | None) -> None:
    print(table(r))
    n = len(r.actions)
    per_action = f"{r.cpu_s / n:.3f}" if n and r.cpu_s == r.cpu_s else "n/a"
    print(f"\nserver CPU: {r.cpu_s:.1f} s over {r.seconds:.0f} s wall "
          f"({per_action} CPU s per action); peak memory {r.peak_mb:.0f} MB"
          if r.cpu_s == r.cpu_s else "\nserver CPU and memory: n/a (give --server-pids)")
    print(f"the headless learners' own CPU (this process): {r.client_cpu_s:.1f} s")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{v:.2f}" for v in load_before)
          + "; after " + ", ".join(f"{v:.2f}" for v in r.load))
    slow = defaultdict(list)
    for a in r.actions:
        slow[(a.kind, a.page)].append(a.seconds * 1e3)
    print("\nslowest (action, page) by p95, ms (count):")
    for (kind, page), ms in sorted(slow.items(), key=lambda kv: -pct(kv[1], .95))[:10]:
        print(f"  {kind:8s} {page:20s} p50 {pct(ms, .5):6.0f}  p95 {pct(ms, .95):6.0f}  "
              f"({len(ms)})")
    if log_start is not None:
        print("\nthe server's own time per full page run (fragment reruns are not logged):")
        print(server_runs(log_start))
    for a in r.errors[:10]:
        print(f"  error: learner {a.learner} {a.kind} {a.label[:40]!r} on {a.page} "
              f"at {a.at:.1f} s: {a.error}")


def one_level(args, learners: int) -> ClassResult:
    load_before = os.getloadavg()
    server = contextlib.nullcontext((args.url, args.server_pids)) if args.url else fresh_server()
    with server as (url, pids):
        log_start = None if args.url else LOG.stat().st_size
        r = asyncio.run(run_class(url, learners, args.minutes * 60, seed=args.seed,
                                  pace=tuple(args.pace), timeout=args.timeout, server_pids=pids))
        report(r, load_before, log_start)
    return r


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--learners", type=int, default=40)
    ap.add_argument("--minutes", type=float, default=2.0, help="per level (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pace", type=float, nargs=2, default=[5.0, 15.0], metavar=("A", "B"),
                    help="seconds between a learner's actions, uniform in [A, B] (default 5 15)")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds before an action counts as an error (default 30)")
    ap.add_argument("--ramp", action="store_true",
                    help=f"levels {RAMP} until p95 passes 1 s or errors appear")
    ap.add_argument("--levels", type=lambda s: [int(v) for v in s.split(",")], default=RAMP,
                    help="the ramp's levels, comma-separated")
    ap.add_argument("--url", help="drive this running server instead of starting one")
    ap.add_argument("--server-pids", type=lambda s: [int(v) for v in s.split(",")], default=None,
                    help="with --url: the server processes whose CPU and memory to report")
    args = ap.parse_args(argv)
    if args.url:
        args.url = args.url.rstrip("/")
    print(f"# bench_class {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; pace {args.pace[0]:g}-{args.pace[1]:g} s, "
          f"seed {args.seed}, {args.minutes:g} min per level, "
          + (f"server {args.url}" if args.url else "a fresh server per level"), flush=True)
    if not args.ramp:
        print(f"\n## {args.learners} learners", flush=True)
        r = one_level(args, args.learners)
        print("\n" + summary_line(r))
        return
    rows = []
    for n in args.levels:
        print(f"\n## {n} learners", flush=True)
        r = one_level(args, n)
        rows.append(r)
        print(f"level: {summary_line(r)}", flush=True)  # the bare line ends the output, once
        if pct(r.latencies_ms(), .95) > TARGET_P95_MS or r.errors:
            break
    print("\n| learners | actions | errors | p50 ms | p95 ms | CPU s/action | peak MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lat = r.latencies_ms()
        print(f"| {r.learners} | {len(lat)} | {len(r.errors)} | {pct(lat, .5):.0f} | "
              f"{pct(lat, .95):.0f} | {r.cpu_s / max(len(lat), 1):.3f} | {r.peak_mb:.0f} |")
    ok = [r.learners for r in rows if pct(r.latencies_ms(), .95) <= TARGET_P95_MS and not r.errors]
    last = rows[-1]
    if last.learners not in ok:
        print(f"\np95 passes 1 s (or errors appear) at {last.learners} learners; "
              f"largest level within target: {max(ok) if ok else 'none'}")
    else:
        print(f"\np95 stayed within 1 s with no errors up to {last.learners} learners")
    print("\n" + summary_line(last))


if __name__ == "__main__":
    main()
