"""The training lab's induction task, measured: how long until an induction head grows?

    python -m bench.bench_induction                # seeds 0-4 of the task's default setting
    python -m bench.bench_induction --seeds 0 1 2  # these seeds

Each seed trains in a fresh subprocess with one torch thread (as the lab's runner does), on
the default setting (``LabSettings.default("induction")``). "to 0.5" is wall time from the
start of the run (data, model, training and checkpoints, each checkpoint's induction probe
included) to the first checkpoint where some head's induction score passes 0.5
(``tfviz.lab.induction``); checkpoints come every steps/25 steps, so it is rounded up to the
next one. The losses are the held-out rows' mean on the run's first copy and second copy at
the end. Prints a markdown table, the median over seeds and the machine's load average; the
target is a median of at most 60 s.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

TARGET_S = 60.0


def one(seed: int) -> dict:
    import torch

    from tfviz.lab.induction import INDUCTION_HEAD, first_induction
    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import train

    torch.set_num_threads(1)
    s = LabSettings.default("induction", seed=seed)
    view = train(s, threads=1)
    found = first_induction(view.checkpoints, INDUCTION_HEAD)
    last = view.checkpoints[-1].induction
    layer, head, score = last.best
    return {"seed": seed, "setting": s.describe(), "state": view.state,
            "to_s": None if found is None else found.seconds,
            "to_step": None if found is None else found.step, "seconds": view.seconds,
            "head": f"L{layer}H{head}", "score": score, "first": last.first_loss,
            "second": last.second_loss, "acc": view.accuracy, "sps": view.steps_per_second,
            "load": os.getloadavg()[0]}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores); one torch thread per run\n", flush=True)
    print("| seed | to score > 0.5 (s) | at step | whole run (s) | best head | its score | "
          "loss 1st / 2nd copy | held-out solved | steps/s | load |")
    print("|---:|---:|---:|---:|---|---:|---|---:|---:|---:|")
    times = []
    for seed in args.seeds:
        out = subprocess.run([sys.executable, "-m", "bench.bench_induction", "--one", str(seed)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(float("inf") if r["to_s"] is None else r["to_s"])
        to = "never" if r["to_s"] is None else f"{r['to_s']:.1f}"
        print(f"| {seed} | {to} | {r['to_step'] or '-'} | {r['seconds']:.1f} | {r['head']} | "
              f"{r['score']:.2f} | {r['first']:.2f} / {r['second']:.2f} | {r['acc']:.0%} | "
              f"{r['sps']:.1f} | {r['load']:.1f} |", flush=True)
    median = statistics.median(times)
    print(f"\nmedian time to an induction head: {median:.1f} s (target {TARGET_S:.0f} s: "
          f"{'met' if median <= TARGET_S else 'NOT met'}); first setting: {r['setting']}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
