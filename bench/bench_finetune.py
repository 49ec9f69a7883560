"""Lesson 15's fine-tune, measured: bert-tiny fine-tuned three ways (head only, LoRA on W_Q and
W_V, full) on each of our two sentence tasks, with the lesson's default budget.

    python -m bench.bench_finetune              # both tasks at the default rank, a markdown table
    python -m bench.bench_finetune --ranks      # also the "number" task at ranks 1, 2, 8, 16

Each comparison runs in a fresh subprocess on one torch thread, as the server runs it (one
thread, ``tfviz.ui.warmup``). "seconds" is the wall time of a mode (copying the model, both
held-out evaluations and the training steps); "all three" adds tokenising the examples. The
machine's load average is printed with the table: the cores are shared.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

BUDGET_S = 30.0


def one(task: str, rank: int) -> dict:
    import torch

    import tfviz
    from tfviz.training.finetune import FinetuneSettings, fine_tune

    torch.set_num_threads(1)
    bert = tfviz.load("bert-tiny")
    load = os.getloadavg()[0]
    r = fine_tune(bert.model, bert.tokenizer, FinetuneSettings(task=task, rank=rank))
    return {"task": task, "rank": rank, "seconds": r.seconds, "threads": r.threads, "load": load,
            "settings": {k: getattr(r.settings, k) for k in ("steps", "batch", "train_size", "heldout_size")},
            "modes": [{"mode": m.mode, "trained": m.trained, "expected": m.expected, "before": m.accuracy_before,
                       "after": m.accuracy, "loss": m.final_loss, "seconds": m.seconds} for m in r.modes]}


def _run(task: str, rank: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.bench_finetune", "--one", task, str(rank)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(argv[1], int(argv[2]))))
        return
    runs = [("number", 4), ("it", 4)]
    if "--ranks" in argv:
        runs += [("number", r) for r in (1, 2, 8, 16)]
    print("| task | r | way | numbers trained | held-out before → after | final loss | seconds | all three |")
    print("|---|---:|---|---:|---|---:|---:|---:|")
    for task, rank in runs:
        r = _run(task, rank)
        for m in r["modes"]:
            assert m["trained"] == m["expected"], m
            total = f"{r['seconds']:.1f} s (load {r['load']:.1f})" if m["mode"] == "full" else ""
            print(f"| {task} | {rank} | {m['mode']} | {m['trained']:,} | {m['before']:.1%} → {m['after']:.1%} "
                  f"| {m['loss']:.3f} | {m['seconds']:.1f} | {total} |")
        flag = "met" if r["seconds"] <= BUDGET_S else "NOT met"
        print(f"<!-- {task} r={rank}: {r['seconds']:.1f} s for all three, budget {BUDGET_S:.0f} s {flag}; "
              f"{r['settings']} -->")


if __name__ == "__main__":
    main(sys.argv[1:])
