"""What a shared server holds once a learner opens a Hugging Face folder, measured in chromium.

    python -m bench.bench_checkpoint_memory                 # builds a random GPT-2 small folder
    python -m bench.bench_checkpoint_memory --folder DIR    # or names one (a model folder)

A real ``streamlit run server.py`` is started with ``TFVIZ_MODELS`` naming the folder. One
browser opens the self-attention lesson on the default model; once the server's background
warm-up of the bundled models is over (its resident set stops moving), the RSS is read from
/proc. Then it opens the same lesson on the folder's model with ``?model=``: the
server opens the folder (the first learner to ask pays for it) and the RSS is read again. A
second browser then opens the same page: the model is shared, so only that learner's trace and
page should add to it. The server's peak (VmHWM, started again once the base is read) is what
had to fit in the machine's free memory while the folder was opened. The table also prints
what the sidebar said before opening (the estimate of ``tfviz.hf.memory``) and the machine's
MemAvailable before and after.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.support.serve import CHROMIUM, CHROMIUM_ARGS, streamlit_server
from tfviz.decoding.memory import human_bytes
from tfviz.hf import describe
from tfviz.hf.memory import available_bytes, opening_cost

IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
    return !!document.querySelector('[data-testid="stMain"] h1') && !!app &&
           app.getAttribute('data-test-script-state') === 'notRunning'; }"""


def rss(pid: int, field: str = "VmRSS") -> int:
    """A process's resident set from /proc, or with ``field="VmHWM"`` its peak."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field}")


def reset_peak(pid: int) -> None:
    """Start the process's peak (VmHWM) again from its resident set now (Linux's clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def settled_rss(pid: int, quiet_mb: float = 5.0, quiet_s: float = 10.0, most_s: float = 180.0) -> int:
    """The RSS once it has stopped moving (less than ``quiet_mb`` over ``quiet_s``): server.py
    warms up the bundled models in the background after the first page, and the base must
    include them, or the folder would be charged for them."""
    start = last_change = time.perf_counter()
    last = rss(pid)
    while time.perf_counter() - start < most_s:
        time.sleep(1.0)
        now = rss(pid)
        if abs(now - last) > quiet_mb * 1e6:
            last, last_change = now, time.perf_counter()
        elif time.perf_counter() - last_change >= quiet_s:
            return now
    return rss(pid)


def open_page(browser, url: str) -> float:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    start = time.perf_counter()
    page.goto(url)
    for _ in range(2):  # twice, so a run about to start is not missed
        page.wait_for_function(IDLE_JS, timeout=600_000, polling=200)
        page.wait_for_timeout(500)
    if page.locator('[data-testid="stException"]').count() or "Traceback" in page.inner_text("body"):
        raise RuntimeError(f"{url} showed an exception")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", help="a model folder (default: a random GPT-2 small, built here)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.folder:
            folder = Path(args.folder).expanduser()
        else:
            from bench.make_gpt2_folder import make_gpt2_folder

            folder = make_gpt2_folder(Path(tmp) / "gpt2")
        info = describe(folder)
        name = folder.resolve().name  # discovery's name for a lone folder (not a bundled one's)
        env = {"TFVIZ_MODELS": str(folder), "HF_HUB_CACHE": str(Path(tmp) / "no-hub")}
        rows = []
        with streamlit_server(env=env) as (url, proc, _), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            open_page(browser, f"{url}/self-attention")
            base, free0 = settled_rss(proc.pid), available_bytes()
            reset_peak(proc.pid)
            rows.append(("server on the default model (gpt-tiny), one learner", 0.0, base, base))
            took = open_page(browser, f"{url}/self-attention?model={name}")
            rows.append((f"first learner opens {name} (self-attention)", took, rss(proc.pid),
                         rss(proc.pid, "VmHWM")))
            took = open_page(browser, f"{url}/self-attention?model={name}")
            rows.append(("a second learner, same page", took, rss(proc.pid), rss(proc.pid, "VmHWM")))
            free1 = available_bytes()
            browser.close()
    print(f"\n{name}: {info.family}, {info.size}, {info.n_params:,} parameters, "
          f"{info.bytes_on_disk / 1e6:.0f} MB on disk")
    said = opening_cost(info.memory_bytes)
    print(f"said before opening: about {human_bytes(said)} ({said / 1e6:.0f} MB; "
          f"{info.memory_bytes / 1e6:.0f} MB of float32 weights)\n")
    print("| step | seconds | server RSS, MB | growth, MB | peak growth, MB |")
    print("|---|---:|---:|---:|---:|")
    for what, sec, r, peak in rows:
        print(f"| {what} | {sec:.1f} | {r / 1e6:.0f} | {(r - base) / 1e6:+.0f} | {(peak - base) / 1e6:+.0f} |")
    if free0 is not None and free1 is not None:
        print(f"\nMemAvailable fell by {(free0 - free1) / 1e6:.0f} MB while the folder was opened "
              "(other work on the machine moves it too)")


if __name__ == "__main__":
    main()
