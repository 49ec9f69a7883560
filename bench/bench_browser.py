"""Speed a learner feels, measured in Debian chromium against a fresh server on this machine.

    python -m bench.bench_browser

1. Server start to first lesson interactive: from launching the server to the tour page having
   finished its first script run in the browser. The browser is already open, as a learner's
   would be. Measured for `streamlit run server.py` (what scripts/run.sh starts: it warms up
   in the background) and for a cold `streamlit run app.py`, three fresh servers each.
2. On the multi-head page, changing the layer (and, apart, the head) until the new attention
   maps are drawn: 30 changes of each on each of three fresh servers, once the server has
   finished its background warm-up (as a classroom server would have). The median and p95 are
   over all 90 changes of a kind; the p95 of each server's 30 is printed too, because on a shared
   2-core machine one server's p95 (its second-slowest change) moves by ±50 ms from run to run.
   The very first change, made while the warm-up still runs, is reported on its own line.
3. The same on the self-attention lesson, one fresh server: the lesson with the most charts
   per change (five in its open tab), for comparison; it has no target of its own.
"""
from __future__ import annotations

import asyncio
import statistics
import time

from playwright.async_api import async_playwright

from bench.browser_common import launch, new_page, summary, timed_change, wait_idle, wait_quiet
from tests.support.serve import streamlit_server

CHANGES = 30
STARTS = 3


async def first_page(browser, entry: str) -> float:
    """Seconds from launching a fresh server to the tour being interactive."""
    context, page = await new_page(browser, [])
    with streamlit_server(entry=entry) as (url, _, started):
        await page.goto(f"{url}/tour")
        await wait_idle(page)
        took = time.perf_counter() - started
    await context.close()
    return took


async def slider_changes(browser, outside: list[str], lesson: str = "multi-head") -> dict:
    """On one fresh server: the first layer change (made during the warm-up), how long the
    warm-up went on after it, then CHANGES layer changes and CHANGES head changes."""
    context, page = await new_page(browser, outside)
    with streamlit_server() as (url, proc, _started):
        await page.goto(f"{url}/{lesson}")
        await wait_idle(page)
        sliders = page.locator('[data-testid="stMain"] input[type="range"]')
        # Right, right, left, left, ...: through every layer (0 1 2 1 0 1 ...) and back.
        keys = ["ArrowRight" if (i // 2) % 2 == 0 else "ArrowLeft" for i in range(CHANGES + 1)]
        out = {}
        for name, slider in (("layer", sliders.nth(0)), ("head", sliders.nth(1))):
            await slider.focus()

            async def press(key, slider=slider):
                await slider.press(key)

            if name == "layer":
                out["first"] = await timed_change(page, lambda: press(keys[0]))
                out["settle"] = await wait_quiet(proc.pid)  # the fresh server's warm-up
            else:
                await timed_change(page, lambda: press(keys[0]))
            out[name] = [await timed_change(page, lambda key=key: press(key)) for key in keys[1:]]
    await context.close()
    return out


async def measure() -> dict:
    outside: list[str] = []
    async with async_playwright() as p:
        browser = await launch(p)
        starts = {entry: [await first_page(browser, entry) for _ in range(STARTS)]
                  for entry in ("server.py", "app.py")}
        servers = [await slider_changes(browser, outside) for _ in range(STARTS)]
        heavy = await slider_changes(browser, outside, "self-attention")
        await browser.close()
    return {"starts": starts, "servers": servers, "heavy": heavy, "outside": outside}


def main() -> None:
    result = asyncio.run(measure())
    print("| measure | value | target |")
    print("|---|---:|---:|")
    for entry, label in (("server.py", "warm-up"), ("app.py", "cold")):
        runs = result["starts"][entry]
        each = ", ".join(f"{t:.1f}" for t in runs)
        target = "≤ 5 s" if entry == "server.py" else ""
        print(f"| server start → tour interactive, `{entry}` ({label}), median of {len(runs)} "
              f"({each}) | {statistics.median(runs):.2f} s | {target} |")
    servers = result["servers"]
    firsts = ", ".join(f"{s['first'] * 1e3:.0f}" for s in servers)
    settle = max(s["settle"] for s in servers)
    print(f"| first layer change on a fresh server, during its warm-up ({firsts}) | "
          f"{statistics.median(s['first'] for s in servers) * 1e3:.0f} ms | |")
    print(f"| (the warm-up went on for at most {settle:.1f} s after it) | | |")
    for name in ("layer", "head"):
        pooled = [t for s in servers for t in s[name]]
        median, p95 = summary(pooled)
        each = ", ".join(f"{summary(s[name])[1]:.0f}" for s in servers)
        print(f"| multi-head {name} change, median of {len(pooled)} | {median:.0f} ms | |")
        print(f"| multi-head {name} change, p95 of {len(pooled)} (each server's p95 of "
              f"{CHANGES}: {each}) | {p95:.0f} ms | ≤ 300 ms |")
    heavy = result["heavy"]  # the lesson with the most charts per change, for comparison
    for name in ("layer", "head"):
        median, p95 = summary(heavy[name])
        print(f"| self-attention {name} change, median / p95 of {CHANGES} (one server) | "
              f"{median:.0f} / {p95:.0f} ms | |")
    print(f"| requests that left localhost | {len(result['outside'])} | 0 |")


if __name__ == "__main__":
    main()
