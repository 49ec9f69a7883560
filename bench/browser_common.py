"""Shared pieces of the browser benchmarks: launch chromium, wait for a script run, time a change."""
from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path

from tests.support.serve import CHROMIUM, CHROMIUM_ARGS, is_local

# The page's run is over and its title (or a message) is drawn. The app's script state is
# read, not Streamlit's status widget: with the minimal toolbar (.streamlit/config.toml) that
# widget is never drawn, and a wait on it returned as soon as the title appeared, mid-run.
IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!document.querySelector('[data-testid="stMain"] h1, [data-testid="stMain"] [data-testid="stAlert"]') &&
           !!app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


async def launch(playwright):
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                            headless=True)


async def new_page(browser, outside: list[str], server: str | None = None):
    """A fresh browser context (its own cookies, like a separate laptop) whose requests may go
    to localhost, or to ``server`` (scheme://host:port) when the app runs on another machine;
    any other request is aborted and recorded in ``outside``."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})

    async def guard(route):
        url = route.request.url
        if is_local(url) or (server and (url == server or url.startswith(server + "/"))):
            await route.continue_()
        else:
            outside.append(route.request.url)
            await route.abort()

    await context.route("**/*", guard)
    return context, await context.new_page()


async def wait_idle(page, timeout: float = 60_000) -> None:
    await page.wait_for_function(IDLE_JS, timeout=timeout, polling=50)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_quiet(pid: int, *, share: float = 0.05, window: float = 1.0,
                     timeout: float = 60.0) -> float:
    """Wait until the server uses under ``share`` of a core for ``window`` seconds (its
    background warm-up has finished), and return how long that took."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        before = cpu_seconds(pid)
        await asyncio.sleep(window)
        if cpu_seconds(pid) - before < share * window:
            break
    return time.perf_counter() - start


def summary(values: list[float]) -> tuple[float, float]:
    """(median, p95) in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e3, p95 * 1e3
