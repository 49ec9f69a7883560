"""Lesson 17: what one head of attention costs on this CPU as the sequence grows.

    nice -n 10 python -m bench.bench_attention_cost

Full attention builds the (n, n) score matrix; causal sliding-window attention builds (n, w+1).
Times are best of 5 (ms), d = 64, w = 64; the ratio columns divide by the n=512 row so they
can be read against n² and n·w growth (4× and 2× per doubling). Memory is measured: the peak
PyTorch's profiler sees the call hold at once (MB), beside the scores counted (n² and
n·(w+1) float32 numbers).
"""
from __future__ import annotations

import os

import torch

from tfviz.experiments.long_sequences import attention_cost

NS = (512, 1024, 2048, 4096)
W = 64
MB = 2**20


def main() -> None:
    torch.set_num_threads(1)  # the machine is shared: one core, steadier numbers
    rows = attention_cost(NS, window=W, d=64, repeats=5)
    base = rows[0]
    print(f"load average {os.getloadavg()[0]:.2f}, torch {torch.__version__}, threads 1, d=64, w={W}")
    print(f"{'n':>6} {'full ms':>9} {'x':>6} {'(n/512)^2':>9} {'window ms':>10} {'x':>6} "
          f"{'n/512':>6} {'full MB':>8} {'x':>5} {'window MB':>9} {'x':>5} "
          f"{'full scores MB':>14} {'window scores MB':>16}")
    for r in rows:
        print(f"{r.n:>6} {r.full_ms:>9.2f} {r.full_ms / base.full_ms:>6.1f} "
              f"{(r.n / base.n) ** 2:>9.0f} {r.window_ms:>10.2f} {r.window_ms / base.window_ms:>6.1f} "
              f"{r.n / base.n:>6.0f} {r.full_bytes / MB:>8.2f} {r.full_bytes / base.full_bytes:>5.1f} "
              f"{r.window_bytes / MB:>9.2f} {r.window_bytes / base.window_bytes:>5.1f} "
              f"{r.full_cells * 4 / MB:>14.1f} {r.window_cells * 4 / MB:>16.2f}")


if __name__ == "__main__":
    main()
