"""A Redis of our own for the tests and benchmarks: Debian's ``redis-server`` on a free loopback
port, its append-only file in a folder of ours, fsynced before every reply (as
``scripts/serve-class.sh --redis`` starts it). Never the machine's own Redis."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from tests.support.serve import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def have_redis() -> bool:
    return os.path.exists(REDIS_SERVER)


class RedisServer:
    """One redis-server process; ``url`` reaches it, ``kill()`` SIGKILLs it, ``start()`` brings
    it back on the same port and folder (reading its append-only file)."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes",
             "--daemonize", "no", "--logfile", str(self.folder / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return
            except redis.exceptions.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start: {self.log()[-2000:]}")
                time.sleep(0.05)

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def redis_server(folder: Path):
    server = RedisServer(folder)
    try:
        yield server
    finally:
        server.stop()


def flush(url: str, prefix: str = "tfviz:") -> None:
    """Delete every key of the live-class store under ``prefix`` in the Redis at ``url`` (a
    test's empty store; the server may be shared by the tests of one process)."""
    import redis

    r = redis.Redis.from_url(url, socket_timeout=5)
    for key in r.scan_iter(prefix + "*"):
        r.delete(key)
