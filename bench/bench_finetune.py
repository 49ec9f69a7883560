"""Lesson 15's fine-tune, measured: bert-tiny fine-tuned the page's default three ways (head
only, LoRA on W_Q and W_V, full) or all six (also prompt tuning, prefix tuning, and full from
random weights) on each of our two sentence tasks, with the lesson's default budget.

    python -m bench.bench_finetune              # both tasks at the default rank, a markdown table
    python -m bench.bench_finetune --ranks      # also the "number" task at ranks 1, 2, 8, 16
    python -m bench.bench_finetune --all-ways   # every way (ranks: the default only)

Each comparison runs in a fresh subprocess on one torch thread, as the server runs it (one
thread, ``tfviz.ui.warmup``). "seconds" is the wall time of a mode (copying the model, its
held-out checks and the training steps); "all" adds tokenising the examples. "reached" is the
first held-out check (every steps / 10) at or above full fine-tuning's final accuracy. The
machine's load average is printed with the table: the cores are shared.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

BUDGET_S = 30.0


def one(task: str, rank: int, every_way: bool) -> dict:
    import torch

    import tfviz
    from tfviz.analysis.finetune_measured import steps_to
    from tfviz.training.finetune import DEFAULT_MODES, MODES, FinetuneSettings, fine_tune

    torch.set_num_threads(1)
    bert = tfviz.load("bert-tiny")
    load = os.getloadavg()[0]
    r = fine_tune(bert.model, bert.tokenizer,
                  FinetuneSettings(task=task, rank=rank, modes=MODES if every_way else DEFAULT_MODES))
    target = r.of("full").accuracy
    return {"task": task, "rank": rank, "seconds": r.seconds, "threads": r.threads, "load": load,
            "load_after": os.getloadavg()[0],
            "settings": {k: getattr(r.settings, k) for k in ("steps", "batch", "train_size", "heldout_size", "p")},
            "modes": [{"mode": m.mode, "trained": m.trained, "expected": m.expected, "before": m.accuracy_before,
                       "after": m.accuracy, "loss": m.final_loss, "seconds": m.seconds,
                       "reached": steps_to(m.curve, target)} for m in r.modes]}


def _run(task: str, rank: int, every_way: bool) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.bench_finetune", "--one", task, str(rank),
                          str(int(every_way))], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(argv[1], int(argv[2]), argv[3] == "1")))
        return
    every_way = "--all-ways" in argv
    runs = [("number", 4), ("it", 4)]
    if "--ranks" in argv:
        runs += [("number", r) for r in (1, 2, 8, 16)]
    print("| task | r | way | numbers trained | held-out before → after | reached full's at step "
          "| final loss | seconds | all |")
    print("|---|---:|---|---:|---|---:|---:|---:|---:|")
    for task, rank in runs:
        r = _run(task, rank, every_way)
        for m in r["modes"]:
            assert m["trained"] == m["expected"], m
            last = m["mode"] == r["modes"][-1]["mode"]
            total = f"{r['seconds']:.1f} s (load {r['load']:.1f} → {r['load_after']:.1f})" if last else ""
            reached = "never" if m["reached"] is None else m["reached"]
            print(f"| {task} | {rank} | {m['mode']} | {m['trained']:,} | {m['before']:.1%} → {m['after']:.1%} "
                  f"| {reached} | {m['loss']:.3f} | {m['seconds']:.1f} | {total} |", flush=True)
        flag = "met" if r["seconds"] <= BUDGET_S else "NOT met"
        print(f"<!-- {task} r={rank}: {r['seconds']:.1f} s for all {len(r['modes'])}, budget "
              f"{BUDGET_S:.0f} s {flag}; {r['settings']} -->", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
