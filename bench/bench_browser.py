"""Speed a learner feels, measured in Debian chromium against a fresh server on this machine.

    python -m bench.bench_browser

1. Server start to first lesson interactive: from launching `streamlit run` to the tour page
   having finished its first script run in the browser.
2. On the multi-head page, changing the layer until the new attention maps are drawn,
   median and p95 over 30 changes.
"""
from __future__ import annotations

import asyncio
import time

from playwright.async_api import async_playwright

from bench.browser_common import launch, new_page, summary, timed_change, wait_idle
from tfviz.serve import streamlit_server

CHANGES = 30


async def measure(url: str, started: float) -> dict:
    outside: list[str] = []
    async with async_playwright() as p:
        browser = await launch(p)
        context, page = await new_page(browser, outside)
        await page.goto(f"{url}/tour")
        await wait_idle(page)
        first = time.perf_counter() - started

        await page.goto(f"{url}/multi-head")
        await wait_idle(page)
        slider = page.locator('[data-testid="stMain"] input[type="range"]').first
        await slider.focus()
        times = []
        for i in range(CHANGES):
            key = "ArrowRight" if (i // 2) % 2 == 0 else "ArrowLeft"  # 0 -> 1 -> 2 -> 1 -> 0 ...

            async def press(key=key):
                await slider.press(key)

            times.append(await timed_change(page, press))
        await context.close()
        await browser.close()
    median, p95 = summary(times)
    return {"first": first, "median": median, "p95": p95, "outside": outside}


def main() -> None:
    with streamlit_server() as (url, _, started):
        result = asyncio.run(measure(url, started))
    print("| measure | value | target |")
    print("|---|---:|---:|")
    print(f"| server start → tour interactive | {result['first']:.2f} s | ≤ 5 s |")
    print(f"| multi-head layer change, median of {CHANGES} | {result['median']:.0f} ms | |")
    print(f"| multi-head layer change, p95 of {CHANGES} | {result['p95']:.0f} ms | ≤ 300 ms |")
    print(f"| requests that left localhost | {len(result['outside'])} | 0 |")


if __name__ == "__main__":
    main()
