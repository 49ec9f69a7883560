"""Start and stop ``scripts/serve-class.sh N`` (N replicas behind nginx) on free loopback
ports: tests/test_serve_class.py and bench/bench_replicas.py share it.

No streamlit import here: the script and its servers are child processes, driven over HTTP.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from tests.support.serve import ROOT, free_port

SCRIPT = ROOT / "scripts" / "serve-class.sh"
NO_NGINX = "nginx not found and apt-get could not install it"


class ServedClass:
    """The running script: its URL, replica ports and pids, output, and a stop() that can run
    twice. ``dir`` holds nginx's config and logs and each replica's log (kept afterwards)."""

    def __init__(self, replicas: int, class_dir: Path, timeout: float = 240.0,
                 extra: tuple[str, ...] = (), env: dict | None = None):
        self.dir = class_dir
        self.port = free_port()
        own = {k: v for k, v in os.environ.items() if k not in ("TFVIZ_RAISE", "PYTEST_CURRENT_TEST")}
        env = {**own, **(env or {}), "TFVIZ_CLASS_DIR": str(class_dir)}  # env: TFVIZ_DATA_DIR, say
        self.proc = subprocess.Popen(
            ["bash", str(SCRIPT), str(replicas), "--port", str(self.port),
             "--base-port", str(free_port()), "--no-install", *extra],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)  # its own process group, so nothing can escape the clean-up
        self.lines: list[str] = []
        self.status: int | None = None
        ready = threading.Event()
        threading.Thread(target=self._read, args=(ready,), daemon=True).start()
        ready.wait(timeout)
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready = ready.is_set() and self.proc.poll() is None
        self.replica_ports = {m[1]: int(m[2]) for line in self.lines
                              if (m := re.search(r"replica (r\d+) on 127\.0\.0\.1:(\d+)", line))}
        self.replica_pids = {m[1]: int(m[2]) for line in self.lines
                             if (m := re.search(r"replica (r\d+) on \S+ \(pid (\d+)", line))}
        self.store_url = next((m[1] for line in self.lines
                               if (m := re.search(r"live classes in (\S+)", line))), None)

    def _read(self, ready: threading.Event) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("serving http://"):
                ready.set()
        ready.set()  # the script ended, ready or not

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> int:
        """SIGTERM to the script, as Ctrl+C would; its exit status."""
        if self.status is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.status = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # the script failed its one job: clear up for it
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.status = self.proc.wait()
        return self.status


@contextmanager
def served_class(replicas: int, class_dir: Path, extra: tuple[str, ...] = (),
                 env: dict | None = None):
    """Yields a ready ServedClass (or raises with the script's output); stops it afterwards."""
    served = ServedClass(replicas, class_dir, extra=extra, env=env)
    try:
        if not served.ready:
            raise RuntimeError(f"serve-class.sh did not start:\n{served.output[-3000:]}")
        yield served
    finally:
        served.stop()
