"""Speed a learner feels, measured in Debian chromium against a fresh server on this machine.

    python -m bench.bench_browser

1. Server start to first lesson interactive: from launching the server to the tour page having
   finished its first script run in the browser. The browser is already open, as a learner's
   would be. Measured for `streamlit run server.py` (what scripts/run.sh starts: it warms up
   in the background) and for a cold `streamlit run app.py`, ``--starts`` fresh servers each
   (3). tfviz's bytecode is compiled first, as scripts/run.sh does. The yardstick is a
   one-line Streamlit app (``st.title("hello")``) started the same way, in the same run, from
   the same folder (so with the same .streamlit/config.toml): the ratio of the medians says
   what tfviz adds to what any Streamlit app costs on this machine (target ≤ 1.3×). The
   entries take turns, so a busy moment of the machine falls on each alike.
   A second yardstick is the same one-line app served as `server.py` serves tfviz, with
   Nagle's algorithm off on its connections (``tfviz/ui/no_delay.py``: Streamlit leaves it on,
   which costs every kept-alive request about 40 ms): the ratio to it says what tfviz adds to
   a Streamlit app that has the same fix, so that the fix alone cannot pass for a lighter page.
2. View changes (layer, head, token, step) no longer reach the server: they are timed in the
   browser by bench/bench_views.py (issue #15's instant views).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.async_api import async_playwright

from bench.browser_common import launch, new_page, wait_idle
from tests.support.serve import streamlit_server

ROOT = Path(__file__).resolve().parents[1]


HELLO = 'import streamlit as st\n\nst.title("hello")\n'
# the one-line app behind an entry file like server.py, with only its networking fix
HELLO_NO_DELAY = (f"import sys\n\nimport streamlit as st\n\nsys.path.insert(0, {str(ROOT)!r})\n"
                  "from tfviz.ui.no_delay import send_small_writes_at_once  # noqa: E402\n\n"
                  "send_small_writes_at_once()\napp = st.App('hello.py')\n")


async def first_page(browser, entry: str, outside: list[str]) -> float:
    """Seconds from launching a fresh server to the tour (or, for the yardstick, its one
    title) being interactive."""
    context, page = await new_page(browser, outside)
    with streamlit_server(entry=entry) as (url, _, started):
        await page.goto(f"{url}/tour" if entry in ("server.py", "app.py") else url)
        await wait_idle(page)
        took = time.perf_counter() - started
    await context.close()
    return took


async def measure(starts: int) -> dict:
    # scripts/run.sh compiles tfviz before it starts the server (our machines set
    # PYTHONDONTWRITEBYTECODE=1, so no import ever writes bytecode): so do we
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tfviz")], check=True)
    outside: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        hello = Path(folder) / "hello.py"
        hello.write_text(HELLO)
        served = Path(folder) / "hello_no_delay.py"
        served.write_text(HELLO_NO_DELAY)
        entries = ("server.py", "app.py", str(hello), str(served))
        times: dict[str, list[float]] = {e: [] for e in entries}
        async with async_playwright() as p:
            browser = await launch(p)
            for _ in range(starts):
                for entry in entries:
                    times[entry].append(await first_page(browser, entry, outside))
            await browser.close()
    times["hello"] = times.pop(str(hello))
    times["hello, no delay"] = times.pop(str(served))
    return {"starts": times, "outside": outside}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3, help="fresh servers per entry point")
    result = asyncio.run(measure(ap.parse_args().starts))
    print("| measure | value | target |")
    print("|---|---:|---:|")
    for entry, label in (("server.py", "warm-up"), ("app.py", "cold")):
        runs = result["starts"][entry]
        each = ", ".join(f"{t:.1f}" for t in runs)
        target = "≤ 3 s" if entry == "server.py" else ""
        print(f"| server start → tour interactive, `{entry}` ({label}), median of {len(runs)} "
              f"({each}) | {statistics.median(runs):.2f} s | {target} |")
    hello = result["starts"]["hello"]
    print(f"| server start → page interactive, one-line app `st.title(\"hello\")`, median of "
          f"{len(hello)} ({', '.join(f'{t:.1f}' for t in hello)}) | {statistics.median(hello):.2f} s | |")
    fixed = result["starts"]["hello, no delay"]
    print(f"| the same one-line app behind an entry file with Nagle off (`no_delay`), median of "
          f"{len(fixed)} ({', '.join(f'{t:.1f}' for t in fixed)}) | {statistics.median(fixed):.2f} s | |")
    tour = statistics.median(result["starts"]["server.py"])
    print(f"| tour (`server.py`) ÷ one-line app | {tour / statistics.median(hello):.2f}× | ≤ 1.3× |")
    print(f"| tour (`server.py`) ÷ one-line app with Nagle off too | "
          f"{tour / statistics.median(fixed):.2f}× | |")
    print(f"| requests that left localhost | {len(result['outside'])} | 0 |")


if __name__ == "__main__":
    main()
