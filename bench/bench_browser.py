"""Speed a learner feels, measured in Debian chromium against a fresh server on this machine.

    python -m bench.bench_browser

1. Server start to first lesson interactive: from launching the server to the tour page having
   finished its first script run in the browser. The browser is already open, as a learner's
   would be. Measured for `streamlit run server.py` (what scripts/run.sh starts: it warms up
   in the background) and for a cold `streamlit run app.py`, three fresh servers each.
2. On the multi-head page, changing the layer until the new attention maps are drawn,
   median and p95 over 30 changes, once the fresh server has finished its background warm-up
   (as a classroom server would have). The very first change, made while the warm-up still
   runs, is reported on its own line.
"""
from __future__ import annotations

import asyncio
import statistics
import time

from playwright.async_api import async_playwright

from bench.browser_common import launch, new_page, summary, timed_change, wait_idle, wait_quiet
from tfviz.serve import streamlit_server

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


async def layer_changes(browser, outside: list[str]) -> tuple[float, float, list[float]]:
    """(first change on a just-started server, seconds the server took to settle, the
    changes after it settled)."""
    context, page = await new_page(browser, outside)
    with streamlit_server() as (url, proc, _started):
        await page.goto(f"{url}/multi-head")
        await wait_idle(page)
        slider = page.locator('[data-testid="stMain"] input[type="range"]').first
        await slider.focus()
        keys = ["ArrowRight" if (i // 2) % 2 == 0 else "ArrowLeft" for i in range(CHANGES + 1)]

        async def press(key):
            await slider.press(key)

        first = await timed_change(page, lambda: press(keys[0]))
        settle = await wait_quiet(proc.pid)  # the background warm-up of a fresh server
        times = [await timed_change(page, lambda key=key: press(key)) for key in keys[1:]]
    await context.close()
    return first, settle, times


async def measure() -> dict:
    outside: list[str] = []
    async with async_playwright() as p:
        browser = await launch(p)
        starts = {entry: [await first_page(browser, entry) for _ in range(STARTS)]
                  for entry in ("server.py", "app.py")}
        first, settle, times = await layer_changes(browser, outside)
        await browser.close()
    median, p95 = summary(times)
    return {"starts": starts, "median": median, "p95": p95, "outside": outside, "first": first,
            "settle": settle}


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
    print(f"| first layer change, seconds after the server started | {result['first'] * 1e3:.0f} ms | |")
    print(f"| (server busy with its warm-up for {result['settle']:.1f} s more) | | |")
    print(f"| multi-head layer change, median of {CHANGES} | {result['median']:.0f} ms | |")
    print(f"| multi-head layer change, p95 of {CHANGES} | {result['p95']:.0f} ms | ≤ 300 ms |")
    print(f"| requests that left localhost | {len(result['outside'])} | 0 |")


if __name__ == "__main__":
    main()
