"""The training lab's numbers, against independent computations: the ready-made comparisons,
the training loss, the experts' load, a job's progress and the comparison table."""
from __future__ import annotations

import threading

import numpy as np
import torch

from tfviz.lab import comparisons as cmp
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import IGNORE, TASKS
from tfviz.lab.train import RunLog, evaluate, train
from tfviz.model import Transformer


# ----- ready-made comparisons ------------------------------------------------------------------
def test_comparisons_differ_in_what_they_say_and_summarize_measured_numbers():
    assert set(cmp.COMPARISONS) == {"scale", "positions", "norm", "heads", "moe"}
    diffs = {k: list(c.settings[0].differences(c.settings[1])) for k, c in cmp.COMPARISONS.items()}
    assert diffs == {"scale": ["scale"], "positions": ["positional"], "norm": ["norm"],
                     "heads": ["n_heads"], "moe": ["n_experts"]}
    assert cmp.COMPARISONS["scale"].settings[0].d_head == 128
    assert cmp.COMPARISONS["norm"].settings[0].lr == 3e-2 > LabSettings().lr
    a, b = (train(s.replace(steps=3, d_model=16, n_heads=1)) for s in cmp.COMPARISONS["positions"].settings)
    text = cmp.COMPARISONS["positions"].summarize([a, b])
    assert text.startswith(f"no positions: {a.accuracy:.0%} held-out after 3 steps")
    assert f"; sinusoidal positions: {b.accuracy:.0%} held-out" in text


# ----- the numbers the page shows, against independent computations ---------------------------
def test_training_loss_is_cross_entropy_over_the_scored_positions_only():
    from tfviz.lab.train import loss_of

    s = LabSettings.default("reverse", d_model=16, n_heads=1)
    model = Transformer(s.model_config())
    t = TASKS["reverse"]
    ids, targets = t.encode_many(t.examples(4, seed=0, split="train"))
    loss, ce = loss_of(model, torch.from_numpy(ids), torch.from_numpy(targets))
    logp = torch.log_softmax(model(torch.from_numpy(ids)), -1).detach().numpy()  # (B, T, V)
    picked = [-logp[b, i, targets[b, i]] for b in range(len(ids)) for i in range(ids.shape[1])
              if targets[b, i] != IGNORE]
    assert abs(ce.item() - float(np.mean(picked))) < 1e-5  # float32 sums in another order
    assert loss.item() == ce.item()  # a dense model has no balance loss


def test_expert_load_matches_the_traced_router_choices():
    from tfviz.trace import run_with_trace

    s = LabSettings.default("copy", d_model=16, n_heads=1, n_experts=4, top_k=2)
    model = Transformer(s.model_config()).eval()
    t = TASKS["copy"]
    ids, targets = t.encode_many(t.examples(8, seed=0, split="heldout"))
    _, load = evaluate(model, ids, targets)
    counts = np.zeros((2, 4))
    for row in ids:
        row = row[row != 0]  # one unpadded row at a time
        tr = run_with_trace(model, row, names=lambda n: n.endswith("expert_indices"))
        for layer in range(2):
            for first in tr[f"blocks.{layer}.mlp.hook_expert_indices"][:, 0]:
                counts[layer, first] += 1
    np.testing.assert_allclose(load, counts / counts.sum(1, keepdims=True))


def test_job_progress_and_time_to_target():
    from tfviz.lab.runs import JobView
    from tfviz.lab.train import Checkpoint, RunView

    s = LabSettings.default("copy", steps=100)
    cps = tuple(Checkpoint(step, sec, acc, 0.0, ()) for step, sec, acc in
                ((0, 0.5, 0.0), (50, 3.0, 0.96), (100, 6.0, 0.99)))
    done = RunView(s, "done", 100, (1.0,) * 100, cps, ())
    half = RunView(s.replace(steps=300), "running", 150, (), (), ())
    job = JobView(1, "running", None, (done, half))
    assert job.progress == (100 + 150) / 400 and job.current is half
    assert done.seconds_to(0.95) == 3.0 and done.seconds_to(0.995) is None
    assert done.accuracy == 0.99 and done.final_loss() == 1.0


def test_the_comparison_table_says_when_a_run_was_stopped_before_its_first_step():
    """Seen in CI: Stop pressed on a loaded server before the first step; the page failed on
    formatting the missing loss. The table says so instead, and reports the other run's
    numbers as measured (the mean of its last 20 losses, its last held-out check)."""
    settings = LabSettings.default("copy", d_model=16, n_heads=1, steps=3)
    done = train(settings, RunLog(settings))
    stop = threading.Event()
    stop.set()  # before the first step
    early = train(settings, RunLog(settings), stop)
    assert early.state == "stopped" and early.step == 0 and early.final_loss() is None
    table = cmp.comparison_table([done, early], ["1: done", "2: stopped"])
    assert table["run"] == ["1: done", "2: stopped"]
    assert table["final loss"] == [f"{sum(done.losses) / len(done.losses):.3f}", "no step trained"]
    assert table["held-out accuracy"][0] == f"{done.checkpoints[-1].accuracy:.1%}"
    assert table["held-out accuracy"][1] in ("no check yet", f"{early.checkpoints[-1].accuracy:.1%}")
    assert len({len(column) for column in table.values()}) == 1
