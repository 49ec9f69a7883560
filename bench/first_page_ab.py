"""Interleaved A/B of bench_browser's first-page measure between two checkouts of tfviz.

    git worktree add /tmp/tfviz-before <commit>
    python -m bench.first_page_ab --before /tmp/tfviz-before --rounds 6

Each round starts three fresh servers in turn, the order rotated each round: this checkout's
``server.py``, the other checkout's ``server.py`` (both timed to the tour interactive), and
bench_browser's one-line yardstick app (``st.title("hello")``). One chromium serves them all,
and "interactive" is bench_browser's own (``browser_common.wait_idle``: the run over, the
title drawn). On a machine whose load moves by the minute only runs taken in turn compare, so
the table gives each round and the medians, and the ratio of each round's pair. ``--page``
times another lesson opened by its link on the fresh server (default: the tour).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.async_api import async_playwright

from bench.bench_browser import HELLO
from bench.browser_common import launch, new_page, wait_idle
from tests.support.serve import streamlit_server

ROOT = Path(__file__).resolve().parents[1]


async def first_page(browser, root: Path, entry: Path, path: str, outside: list[str]) -> float:
    """Seconds from launching ``streamlit run entry`` (in ``root``) to ``path`` interactive."""
    context, page = await new_page(browser, outside)
    with streamlit_server(entry=str(entry), root=root) as (url, _, started):
        await page.goto(url + path)
        await wait_idle(page)
        took = time.perf_counter() - started
    await context.close()
    return took


async def measure(before: Path, rounds: int, page: str = "tour") -> tuple[dict[str, list[float]], list[str]]:
    for root in (ROOT, before):  # as scripts/run.sh does
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "tfviz")], check=True)
    outside: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        hello = Path(folder) / "hello.py"
        hello.write_text(HELLO)
        entries = {"after": (ROOT, ROOT / "server.py", f"/{page}"),
                   "before": (before, before / "server.py", f"/{page}"),
                   "hello": (ROOT, hello, "")}  # from this folder: the same config.toml
        names = list(entries)
        times: dict[str, list[float]] = {n: [] for n in names}
        async with async_playwright() as p:
            browser = await launch(p)
            for r in range(rounds):
                for n in names[r % 3:] + names[:r % 3]:
                    times[n].append(await first_page(browser, *entries[n], outside))
                print(f"| {r + 1} | {os.getloadavg()[0]:.1f} | "
                      + " | ".join(f"{times[n][-1]:.2f} s" for n in ("before", "after", "hello"))
                      + f" | {times['after'][-1] / times['before'][-1]:.2f} |", flush=True)
            await browser.close()
    return times, outside


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the other checkout's folder")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--page", default="tour", help="the lesson's URL path (default tour)")
    args = ap.parse_args()
    print("| round | load average | before | after | one-line app | after ÷ before |")
    print("|---:|---:|---:|---:|---:|---:|")
    times, outside = asyncio.run(measure(args.before.resolve(), args.rounds, args.page))
    med = {n: statistics.median(t) for n, t in times.items()}
    pairs = statistics.median(a / b for a, b in zip(times["after"], times["before"]))
    print(f"| median | | {med['before']:.2f} s | {med['after']:.2f} s | {med['hello']:.2f} s | {pairs:.2f} |")
    print(f"\n{args.page} ÷ one-line app: before {med['before'] / med['hello']:.2f}×, "
          f"after {med['after'] / med['hello']:.2f}× (target ≤ 1.3×); "
          f"requests that left localhost: {len(outside)}")


if __name__ == "__main__":
    main()
