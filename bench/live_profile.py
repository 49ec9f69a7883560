"""Where the cores go during a live-class benchmark (``bench_replicas --live --profile``).

Two views, both taken while the class runs:

- **CPU by process**, sampled every second from /proc: each replica, nginx, redis-server and
  the benchmark's own learners (this process). A replica SIGKILLed midway keeps what it had
  used until then.
- **CPU by activity inside each replica**, with ``py-spy record`` (sampling, ``--nonblocking``,
  so the replica never pauses): each sampled stack is put in the first bucket whose marker it
  holds, so a page run that reads the store counts as the store.

>>> bucket("tornado/websocket.py:on_message;streamlit/runtime/scriptrunner/script_runner.py:_run_script;tfviz/classroom/sqlite_store.py:get")
'store'
"""
from __future__ import annotations

import collections
import contextlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")

# (bucket, markers): the first bucket with a marker in the stack takes the sample.
BUCKETS = (
    ("store", ("classroom/sqlite_store", "classroom/redis_store", "redis/connection",
               "redis/client", "sqlite3")),
    ("long poll (route and watch)", ("ui/live_route", "classroom/watch")),
    ("page run: the lesson", ("lessons/",)),
    ("page run: the frame and sidebar", ("scriptrunner", "exec_func_with_error_handling")),
    ("messages out (protobuf, websocket)", ("protobuf", "forward_msg", "websocket",
                                           "browser_websocket_handler")),
    ("HTTP and the event loop", ("tornado", "starlette", "uvicorn", "asyncio")),
)


def bucket(stack: str) -> str:
    for name, markers in BUCKETS:
        if any(m in stack for m in markers):
            return name
    return "other"


def _cpu(pid: int) -> float | None:
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    return None


def _children(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for t in os.listdir(f"/proc/{p}/task"):
                kids = Path(f"/proc/{p}/task/{t}/children").read_text().split()
                out += map(int, kids)
                todo += map(int, kids)
    return out


def _role(pid: int, replicas: dict[int, str]) -> str:
    if pid in replicas:
        return f"replica {replicas[pid]}"
    with contextlib.suppress(OSError):
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        if "nginx" in name:
            return "nginx"
        if "redis" in name:
            return "redis-server"
        return name
    return "?"


class RoleWatch(threading.Thread):
    """CPU seconds by role (replica rN, nginx, redis-server, the learners), sampled each
    second, between ``start`` and ``stop``."""

    def __init__(self, root_pid: int, replica_pids: dict[str, int]):
        super().__init__(daemon=True)
        self.root, self.replicas = root_pid, {p: n for n, p in replica_pids.items()}
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.roles: dict[int, str] = {}
        self.running = True
        self.me0 = time.process_time()
        self.me = float("nan")

    def sample(self) -> None:
        for pid in [self.root, *_children(self.root)]:
            cpu = _cpu(pid)
            if cpu is None:
                continue
            self.first.setdefault(pid, cpu)
            self.last[pid] = cpu
            self.roles.setdefault(pid, _role(pid, self.replicas))

    def run(self) -> None:
        while self.running:
            self.sample()
            time.sleep(1.0)

    def stop(self) -> dict[str, float]:
        self.running = False
        self.sample()
        self.me = time.process_time() - self.me0
        out: collections.Counter = collections.Counter()
        for pid, cpu in self.last.items():
            out[self.roles[pid]] += cpu - self.first[pid]
        out["the learners (this process)"] = self.me
        return dict(out)


def spy(pids: dict[str, int], seconds: float, out: Path) -> list[subprocess.Popen]:
    """``py-spy record`` on each replica for ``seconds`` (raw stacks into ``out``); none when
    py-spy is not installed."""
    exe = shutil.which("py-spy")
    if exe is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen([exe, "record", "--pid", str(pid), "--duration", str(int(seconds)),
                              "--rate", "50", "--format", "raw", "--nonblocking",
                              "--output", str(out / f"{name}.txt")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, pid in pids.items()]


def spied(out: Path) -> dict[str, collections.Counter]:
    """Samples by bucket, per replica, from the raw files ``spy`` wrote."""
    found = {}
    for f in sorted(out.glob("*.txt")):
        counts: collections.Counter = collections.Counter()
        for line in f.read_text(errors="replace").splitlines():
            stack, _, n = line.rpartition(" ")
            if n.isdigit():
                counts[bucket(stack)] += int(n)
        found[f.stem] = counts
    return found


def report(cpu: dict[str, float], seconds: float, actions: int, by_activity=None) -> str:
    total = sum(cpu.values())
    lines = [f"CPU by process over {seconds:.0f} s of wall time ({2 * seconds:.0f} core-s on 2 "
             f"cores): {total:.1f} s", "| process | CPU s | share | per join or answer (ms) |",
             "|---|---:|---:|---:|"]
    for role, s in sorted(cpu.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {role} | {s:.1f} | {100 * s / max(total, 1e-9):.0f}% | "
                     f"{1e3 * s / max(actions, 1):.0f} |")
    for name, counts in (by_activity or {}).items():
        n = sum(counts.values())
        lines.append(f"\n{name}, py-spy samples by activity ({n} samples):")
        lines += [f"  {k}: {100 * v / max(n, 1):.0f}%" for k, v in counts.most_common()]
    return "\n".join(lines)
