"""Shared pieces of the browser benchmarks: launch chromium, wait for a script run, time a change."""
from __future__ import annotations

import statistics
import time

from tfviz.serve import CHROMIUM, CHROMIUM_ARGS, is_local

CHART_STATE_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(p => JSON.stringify((p.data || []).map(t => [t.z, t.x, t.y])).length + ':' +
              JSON.stringify((p.data || []).map(t => t.z)).slice(0, 2000))
    .join('|')"""

IDLE_JS = """() => {
    const s = document.querySelector('[data-testid="stStatusWidget"]');
    return !!document.querySelector('[data-testid="stMain"] h1, [data-testid="stMain"] [data-testid="stAlert"]') &&
           (!s || !s.innerText.toLowerCase().includes('running'));
}"""


async def launch(playwright):
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                            headless=True)


async def new_page(browser, outside: list[str]):
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})

    async def guard(route):
        if is_local(route.request.url):
            await route.continue_()
        else:
            outside.append(route.request.url)
            await route.abort()

    await context.route("**/*", guard)
    return context, await context.new_page()


async def wait_idle(page, timeout: float = 60_000) -> None:
    await page.wait_for_function(IDLE_JS, timeout=timeout, polling=50)


async def timed_change(page, action, timeout: float = 30_000) -> float:
    """Seconds from doing ``action`` until the charts differ from before and the run is over."""
    before = await page.evaluate(CHART_STATE_JS)
    t0 = time.perf_counter()
    await action()
    await page.wait_for_function(f"() => ({CHART_STATE_JS})() !== {before!r}", timeout=timeout,
                                 polling="raf")
    elapsed = time.perf_counter() - t0
    await wait_idle(page)
    return elapsed


def summary(values: list[float]) -> tuple[float, float]:
    """(median, p95) in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e3, p95 * 1e3
