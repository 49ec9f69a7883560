"""The training lab's defaults, measured: does each task reach 95% held-out accuracy in 30 s?

    python -m bench.bench_lab                 # every task's default setting, a markdown table
    python -m bench.bench_lab --comparisons   # also the ready-made comparisons' sentences
    python -m bench.bench_lab --only residual # just these comparisons (keys of COMPARISONS)

Each task trains in a fresh subprocess with one torch thread (as the lab's runner does), so
its peak memory is its own: "peak RSS" is the process's peak resident memory minus what it held
after the imports, just before training. "to 95%" is wall time from the start of the run
(data, model, training and checkpoints) to the first checkpoint at >= 95% held-out accuracy;
checkpoints come every steps/25 steps, so it is rounded up to the next checkpoint. steps/s
counts training steps only. The machine's load average is printed with the table: the cores
are shared, and a loaded machine gives fewer steps per second.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

BUDGET_S = 30.0


def one(task: str) -> dict:
    import torch

    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import train

    torch.set_num_threads(1)
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s = LabSettings.default(task)
    view = train(s, threads=1)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reached = next((c for c in view.checkpoints if c.accuracy >= 0.95), None)
    return {"task": task, "setting": s.describe(), "state": view.state, "steps": view.step,
            "seconds": view.seconds, "train_seconds": view.train_seconds,
            "to95_s": None if reached is None else reached.seconds,
            "to95_step": None if reached is None else reached.step,
            "final_acc": view.accuracy, "sps": view.steps_per_second,
            "peak_mb": max(0, peak_kb - base_kb) / 1024, "load": os.getloadavg()[0]}


def comparisons(keys: list[str] | None = None) -> None:
    import torch

    from tfviz.lab.comparisons import COMPARISONS
    from tfviz.lab.train import train

    torch.set_num_threads(1)
    for comp in COMPARISONS.values():
        if keys and comp.key not in keys:
            continue
        runs = [train(s, threads=1) for s in comp.settings]
        secs = " + ".join(f"{r.seconds:.0f}" for r in runs)
        print(f"- **{comp.title}** ({secs} s, load {os.getloadavg()[0]:.1f}): {comp.summarize(runs)}",
              flush=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2])))
        return
    if sys.argv[1:2] == ["--only"]:
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        comparisons(sys.argv[2:])
        return
    from tfviz.lab.tasks import TASK_NAMES

    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores); one torch thread per run\n", flush=True)
    print("| task | default setting | to 95% (s) | at step | whole run (s) | final held-out | "
          "steps/s | peak RSS (MB) | load | within 30 s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for task in TASK_NAMES:
        out = subprocess.run([sys.executable, "-m", "bench.bench_lab", "--one", task],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        to95 = "never" if r["to95_s"] is None else f"{r['to95_s']:.1f}"
        ok = r["to95_s"] is not None and r["to95_s"] <= BUDGET_S
        print(f"| {task} | {r['setting']} | {to95} | {r['to95_step'] or '-'} | {r['seconds']:.1f} | "
              f"{r['final_acc']:.1%} | {r['sps']:.1f} | {r['peak_mb']:.0f} | {r['load']:.1f} | "
              f"{'yes' if ok else 'NO'} |", flush=True)
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if "--comparisons" in sys.argv:
        print("\nReady-made comparisons (each run with its task's checkpoints):\n")
        comparisons()


if __name__ == "__main__":
    main()
