"""What opening a model folder costs a fresh process, against what the sidebar says first.

    python -m bench.bench_folder_memory                 # builds a SmolLM2-135M-shaped folder
    python -m bench.bench_folder_memory --folder DIR    # or names one

The sidebar states a folder's cost before reading a weight (``tfviz.hf.memory.opening_cost``
of ``tfviz.hf.describe``'s float32 bytes). Here a new Python process, with torch and tfviz
imported, does what the first learner's lesson makes a server do, one step at a time:
``tfviz.load`` (safetensors read, a bfloat16 file widened to float32), ``Bundle.weights()``
(every parameter as numpy, which most lessons read) and one trace of 64 tokens. After each
step it reads its resident set (``VmRSS``), its peak (``VmHWM``) and the part of the resident
set that is a file's pages (``RssFile``) from /proc; the peak is what must fit in the machine's
free memory, the resident set what stays taken. All are counted from the process before
loading. A float32 file's tensors that need no conversion stay pages of the file itself
(safetensors maps it, and a tensor that is already right is not copied): resident, but pages
the kernel can drop and read again, unlike the copies a bfloat16 file or GPT-2's transposed
matrices need. The table also checks that the count the sidebar
uses is the loaded model's own (``sum(p.numel())``).

``python -m bench.bench_checkpoint_memory --folder DIR`` measures the same folder in a real
server with chromium, where the lessons' own caches come on top.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys
from pathlib import Path

def status():
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssFile"):
            got[key] = int(value.split()[0]) * 1024
    return got["VmRSS"], got["VmHWM"], got["RssFile"]

import torch
torch.set_num_threads(1)
import tfviz
from tfviz.trace import run_with_trace

Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from here
rows = [("before loading (torch and tfviz imported)", *status())]
bundle = tfviz.load(sys.argv[1])
rows.append(("tfviz.load", *status()))
bundle.weights()
rows.append(("Bundle.weights(): every parameter as numpy", *status()))
cfg = bundle.config
ids = [int(i) % cfg.vocab_size for i in range(1000, 1000 + 997 * 64, 997)][:64]
trace = run_with_trace(bundle.model, ids)
rows.append(("one trace of 64 tokens, every activation", *status()))
params = sum(p.numel() for p in bundle.model.parameters())
weights = sum(p.numel() * p.element_size() for p in bundle.model.parameters())
print(json.dumps({"rows": rows, "params": params, "weights": weights}))
"""


def measure(folder: Path) -> dict:
    """The child's rows (what, RSS, peak RSS) and the loaded model's parameters and bytes."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, help="a model folder (default: SmolLM2-135M-shaped)")
    args = parser.parse_args()
    from tfviz.decoding.memory import human_bytes
    from tfviz.hf import describe
    from tfviz.hf.memory import OPEN_FACTOR, opening_cost

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            from bench.make_llama_folder import make_llama_folder

            folder = make_llama_folder(Path(tmp) / "smollm2-135m")
        info = describe(folder)
        got = measure(folder)
    said = opening_cost(info.memory_bytes)
    (_, base, _, base_file), *steps = got["rows"]
    peak = max(p for _, _, p, _ in steps) - base
    mb = 1e6
    print(f"{folder.name}: {info.family}, {info.size}; {info.n_params:,} parameters "
          f"({'the loaded model has as many' if info.n_params == got['params'] else 'the loaded model has ' + format(got['params'], ',')}), "
          f"{info.bytes_on_disk / mb:.0f} MB on disk, {got['weights'] / mb:.0f} MB as float32\n")
    print("| step, in a fresh process | resident set grew, MB | of which the file's pages | peak grew, MB |")
    print("|---|---:|---:|---:|")
    for what, rss, hwm, file in steps:
        print(f"| {what} | {(rss - base) / mb:+.0f} | {(file - base_file) / mb:+.0f} | {(hwm - base) / mb:+.0f} |")
    print(f"\nthe sidebar says: about {human_bytes(said)} ({said / mb:.0f} MB, {OPEN_FACTOR:g} × the "
          f"float32 weights); measured peak {peak / mb:.0f} MB = {peak / info.memory_bytes:.2f} × the "
          f"weights, {peak / said:.2f} of what the sidebar says")


if __name__ == "__main__":
    main()
