"""A classroom on one server: many browser sessions clicking through lessons at once.

    python -m bench.bench_load              # 10 sessions x 20 interactions
    python -m bench.bench_load --ramp       # then 1, 2, 3, 5, 10, ... sessions until p95 > 5 s
    python -m bench.bench_load --ramp-only  # only the ramp
    python -m bench.bench_load --ramp-only --url=http://server:8501
                                            # drive a server running on another machine

Each session is its own browser context (own cookies and websocket, like a student's laptop)
in one chromium, and types its own sentence, so no two share a cached trace. A session opens
the app once (timed apart as "first load": it includes the browser loading Streamlit's
frontend), then alternates: click the next lesson in the sidebar, move that lesson's first
slider. An interaction's latency runs from the action until the page finished re-running.
Errors: an exception or our error message on the page, or an interaction that timed out.
The server's peak memory is read from /proc while the load runs. The ramp raises the number
of sessions until p95 passes 5 s (or an error), to show how latency grows past the 1 s mark.

The server logs how long each page run took on its side (TFVIZ_LOG_RUNS=1, see
tfviz/ui/runlog.py); those are reported too, as the server's share of the wait. So is the CPU
time each level cost: the server process's own, and the rest of the machine's (the browsers,
and this script driving them).

Caveat: by default the browsers run on the same 2 cores as the server, and drawing the charts
costs them several times the CPU the server spends computing them (see the CPU column), so
these numbers are pessimistic for a class whose laptops do their own drawing. With --url the
browsers run here and the server elsewhere (started there with scripts/run.sh, or
`streamlit run server.py --server.address 0.0.0.0`); the server's own columns (its run times,
CPU and memory) are then not available and show as nan.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from playwright.async_api import async_playwright

from bench.browser_common import cpu_seconds, launch, new_page, summary, wait_idle
from tests.support.serve import streamlit_server
from tfviz.ui.runlog import parse

ROUTE = ["self-attention", "multi-head", "layernorm", "masking", "mixture-of-experts",
         "embeddings", "tokenizer", "forward-walk", "scaling", "feed-forward"]
ERROR_JS = """() => !!document.querySelector('[data-testid="stException"]') ||
    document.body.innerText.includes('Sorry, something went wrong')"""


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (Linux /proc)."""
    total = 0
    for p in [pid] + [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total / 1024


class PeakMemory(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self):
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.2)


def machine_busy_seconds() -> float:
    """CPU seconds all cores of this machine have spent busy since boot (Linux /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


STOP_P95_MS = 5000
H1_JS = "() => (document.querySelector('[data-testid=\"stMain\"] h1') || {}).innerText || ''"


async def student(browser, url: str, index: int, n_actions: int, latencies: list, errors: list,
                  outside: list, first_loads: list, by_action: dict):
    """One learner: opens the app with their own sentence, then alternates between moving to
    the next lesson in the sidebar and moving that lesson's first slider."""
    context, page = await new_page(browser, outside, server=url)
    start = ROUTE[index % len(ROUTE)]
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/{start}?text=student+{index}+says+hello")
        await wait_idle(page, timeout=60_000)
        first_loads.append(time.perf_counter() - t0)
    except Exception as exc:
        errors.append(f"session {index} opening {start}: {type(exc).__name__}")
        await context.close()
        return
    try:
        for step in range(n_actions):
            lesson = ROUTE[(index + 1 + step // 2) % len(ROUTE)]
            t0 = time.perf_counter()
            stage = "acting"  # named in the error, so a timeout says what never happened
            try:
                if step % 2 == 0:  # a click in the sidebar: same session, no page reload
                    before = await page.evaluate(H1_JS)
                    link = f'[data-testid="stSidebarNav"] a[href$="/{lesson}"]'
                    stage = "clicking the sidebar link"
                    await page.locator(link).first.click()
                    stage = f"waiting for a title other than {before!r}"
                    await page.wait_for_function(f"() => ({H1_JS})() !== {before!r}",
                                                 timeout=30_000, polling=50)
                else:
                    slider = page.locator('[data-testid="stMain"] input[type="range"]').first
                    if await slider.count():
                        stage = "moving the slider"
                        await slider.press("ArrowRight")
                    await page.wait_for_timeout(50)  # let the rerun start before waiting for idle
                stage = "waiting for the run to finish"
                await wait_idle(page, timeout=30_000)
                latencies.append(time.perf_counter() - t0)
                by_action.setdefault(("open" if step % 2 == 0 else "slider", lesson),
                                     []).append(time.perf_counter() - t0)
                if await page.evaluate(ERROR_JS):
                    errors.append(f"session {index} step {step} on {lesson}: error shown")
            except Exception as exc:  # a timeout counts as an error, and the session goes on
                errors.append(f"session {index} step {step} on {lesson}: {type(exc).__name__} "
                              f"while {stage}")
    finally:
        await context.close()


async def run_level(url: str, sessions: int, n_actions: int) -> dict:
    latencies, errors, outside, first_loads, by_action = [], [], [], [], {}
    async with async_playwright() as p:
        browser = await launch(p)
        t0 = time.perf_counter()
        await asyncio.gather(*(student(browser, url, i, n_actions, latencies, errors, outside,
                                       first_loads, by_action)
                               for i in range(sessions)))
        wall = time.perf_counter() - t0
        await browser.close()
    median, p95 = summary(latencies) if latencies else (float("nan"), float("nan"))
    first = statistics.median(first_loads) * 1e3 if first_loads else float("nan")
    return {"sessions": sessions, "n": len(latencies), "errors": errors, "median": median,
            "p95": p95, "wall": wall, "outside": outside, "first": first, "by_action": by_action}


def main() -> None:
    known = ("--ramp", "--ramp-only", "--url=")
    unknown = [a for a in sys.argv[1:] if a.startswith("-") and not a.startswith(known)]
    if unknown:  # --help included: a typo must not start a three-minute run
        print(__doc__)
        sys.exit(0 if unknown in (["-h"], ["--help"]) else f"unknown option {unknown[0]}")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    ramp_only = "--ramp-only" in sys.argv
    levels = [int(a) for a in args] or ([] if ramp_only else [10])
    ramp = [1, 2, 3, 5, 10, 15, 20, 30, 40] if ramp_only or "--ramp" in sys.argv else []
    remote = next((a.split("=", 1)[1].rstrip("/") for a in sys.argv if a.startswith("--url=")),
                  None)
    log = Path(__file__).resolve().parent / "out" / "load-server.log"
    log.parent.mkdir(exist_ok=True)
    nan = float("nan")

    def level(url: str, sessions: int, n_actions: int) -> dict:
        """Run one level and add the server's own run times logged meanwhile, and how much
        CPU the server and everything else (the browsers, mostly) used."""
        start = log.stat().st_size if proc else 0
        busy, served = machine_busy_seconds(), cpu_seconds(proc.pid) if proc else 0.0
        r = asyncio.run(run_level(url, sessions, n_actions))
        r["cpu_server"] = cpu_seconds(proc.pid) - served if proc else nan
        r["cpu_rest"] = machine_busy_seconds() - busy - (r["cpu_server"] if proc else 0.0)
        runs = []
        if proc:
            with open(log, encoding="utf-8", errors="replace") as f:
                f.seek(start)
                runs = [ms / 1e3 for _, ms in parse(f)]
        r["server"] = summary(runs) if runs else (nan, nan)
        return r

    server = (contextlib.nullcontext((remote, None, None)) if remote else
              streamlit_server(env={"TFVIZ_LOG_RUNS": "1"}, log_path=log))
    with server as (url, proc, _):
        mem = PeakMemory(proc.pid if proc else 0)
        if proc:
            mem.start()
        else:
            mem.peak = nan
        rows = [level(url, s, 20) for s in levels]
        peak_main = mem.peak
        ramp_rows = []
        for s in ramp:
            r = level(url, s, 10)
            ramp_rows.append(r)
            if r["p95"] > STOP_P95_MS or r["errors"]:  # past 1 s, still show how it degrades
                break
        mem.running = False
    print("| sessions | interactions | errors | median ms | p95 ms | first load ms (median) "
          "| server run median ms | server run p95 ms | wall s | CPU s: server / browsers "
          + ("| left localhost and the server |" if remote else "| left localhost |"))
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows + ramp_rows:
        print(f"| {r['sessions']} | {r['n']} | {len(r['errors'])} | {r['median']:.0f} | "
              f"{r['p95']:.0f} | {r['first']:.0f} | {r['server'][0]:.0f} | {r['server'][1]:.0f} | "
              f"{r['wall']:.1f} | {r['cpu_server']:.0f} / {r['cpu_rest']:.0f} | "
              f"{len(r['outside'])} |", flush=True)
    print(f"\nserver peak memory during the 20-interaction run: {peak_main:.0f} MB; "
          f"over the whole ramp: {mem.peak:.0f} MB")
    ok = [r["sessions"] for r in ramp_rows if r["p95"] <= 1000 and not r["errors"]]
    print(f"largest ramp level with p95 under 1 s and no errors: {max(ok) if ok else 'none'}")
    print("\nslowest actions at the first level (median ms, count):")
    slow = sorted((rows + ramp_rows)[0]["by_action"].items(),
                  key=lambda kv: -statistics.median(kv[1]))
    for (kind, lesson), values in slow[:8]:
        print(f"  {kind:6s} {lesson:20s} {statistics.median(values) * 1e3:6.0f}  ({len(values)})")
    for r in rows + ramp_rows:
        for e in r["errors"][:5]:
            print("  error:", e)
    if not remote:
        print(f"server log (tracebacks of any page that failed): {log}")


if __name__ == "__main__":
    main()
