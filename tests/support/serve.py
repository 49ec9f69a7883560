"""Start and stop a real ``streamlit run server.py`` (or app.py) on a free localhost port:
the browser tests, the robustness tests and the benchmarks (bench/) share it.

No streamlit import here: the server is a child process, driven over HTTP.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# Chromium's own background traffic would try to leave the machine; these flags stop it.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-default-apps", "--disable-extensions"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, timeout: float = 60.0) -> float:
    """Seconds until the server answers its health check."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout:.0f} s")


@contextmanager
def streamlit_server(env: dict | None = None, log_path: Path | None = None, entry: str = "server.py",
                     root: Path = ROOT):
    """Yields (base_url, process, started_at) for a fresh server of the checkout at ``root``
    (``entry`` relative to it, or absolute); kills it afterwards."""
    port = free_port()
    child_env = {k: v for k, v in os.environ.items() if k not in ("TFVIZ_RAISE", "PYTEST_CURRENT_TEST")}
    # No file watching: an edit to the repo while a test or benchmark runs would reload modules
    # under live sessions (seen: PicklingError on a cached object from the old module).
    child_env.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    child_env.update(env or {})
    log = open(log_path, "w") if log_path else subprocess.DEVNULL
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(Path(root) / entry),
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=root, env=child_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url)
        yield url, proc, started
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log_path:
            log.close()


def is_local(url: str) -> bool:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about", "chrome", "chrome-extension"):
        return True
    return parsed.hostname in ("127.0.0.1", "localhost", "::1")


def in_own_thread(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a fresh thread, its result or its exception returned here.

    The browser tests keep one sync playwright open for the whole session, and it leaves an
    event loop running in the main thread; ``asyncio.run`` and a second ``sync_playwright``
    refuse to start under it. A thread of their own has no loop."""
    import threading

    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            out["error"] = exc

    worker = threading.Thread(target=run, name="tfviz-test-worker")
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]
