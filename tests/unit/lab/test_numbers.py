"""The training lab's numbers, against independent computations: the ready-made comparisons,
the training loss, the experts' load, a job's progress and the comparison table."""
from __future__ import annotations

import dataclasses
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
    assert set(cmp.COMPARISONS) == {"scale", "positions", "norm", "residual", "heads", "moe"}
    diffs = {k: sorted({f for s in c.settings[1:] for f in c.settings[0].differences(s)})
             for k, c in cmp.COMPARISONS.items()}
    assert diffs == {"scale": ["scale"], "positions": ["positional"], "norm": ["norm"],
                     "residual": ["residual"], "heads": ["n_heads"], "moe": ["n_experts"]}
    # the positions comparison offers every kind the notes list that the order task can show:
    # none against the sines added to the tokens and both relative schemes inside attention
    assert [s.positional for s in cmp.COMPARISONS["positions"].settings] == \
        ["none", "sinusoidal", "relative", "t5_bias"]
    assert [len(c.settings) for c in cmp.COMPARISONS.values()] == [2, 4, 2, 2, 2, 2]
    assert cmp.COMPARISONS["residual"].settings[0].n_layers == 6  # a deep stack, as the notes say
    assert cmp.COMPARISONS["scale"].settings[0].d_head == 128
    assert cmp.COMPARISONS["norm"].settings[0].lr == 3e-2 > LabSettings().lr
    a, b, c, d = (train(s.replace(steps=3, d_model=16, n_heads=1)) for s in cmp.COMPARISONS["positions"].settings)
    text = cmp.COMPARISONS["positions"].summarize([a, b, c, d])
    assert text.startswith(f"no positions: {a.accuracy:.0%} held-out after 3 steps")
    assert f"; sinusoidal positions: {b.accuracy:.0%} held-out" in text
    assert f"; Shaw relative positions: {c.accuracy:.0%} held-out" in text
    assert f"; T5 bias positions: {d.accuracy:.0%} held-out" in text


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


# ----- the notice only when the runs show it ---------------------------------------------------
def _run(settings: LabSettings, accuracies: list[float], load=None):
    """A finished run whose held-out checks, every 20 steps, scored ``accuracies``."""
    from tfviz.lab.train import Checkpoint, RunView

    cps = tuple(Checkpoint(20 * i, float(i), a, 0.5, (), None if load is None or i < len(accuracies) - 1
                           else np.asarray(load)) for i, a in enumerate(accuracies))
    return RunView(settings, "done", 20 * (len(accuracies) - 1), (0.7, 0.5), cps, ())


def test_the_notice_is_printed_only_when_the_runs_show_it():
    pos = cmp.COMPARISONS["positions"]
    none, sine, shaw, t5 = pos.settings
    solved = [_run(s, [0.5, 0.8, 1.0]) for s in (sine, shaw, t5)]
    shown = pos.summarize([_run(none, [0.5, 0.49, 0.5]), *solved])
    assert pos.notice in shown and "held-out" in shown
    # one of the three level with no positions -> no claim, that pair said in words
    level = pos.summarize([_run(none, [0.5, 0.5]), _run(sine, [0.5, 1.0]), _run(shaw, [0.5, 0.52]),
                           _run(t5, [0.5, 1.0])])
    assert pos.notice not in level
    assert ("In these runs Shaw relative positions and no positions came out level: Shaw relative "
            "positions 52% and no positions 50% held-out") in level
    assert "sinusoidal positions and" not in level and "T5 bias positions and" not in level
    # ahead, but the run without positions did not stay near chance (guessing scores 50%): said once
    partly = pos.summarize([_run(none, [0.5, 0.8]), *(_run(s, [0.5, 1.0]) for s in (sine, shaw, t5))])
    assert pos.notice not in partly and partly.count("no positions did not stay near chance: it scored 80%") == 1
    # two settings: the sentences as they always were
    two = dataclasses.replace(pos, settings=(none, sine), better=1)
    assert "the two came out level: sinusoidal positions 52% and no positions 50% held-out" in \
        two.summarize([_run(none, [0.5, 0.5]), _run(sine, [0.5, 0.52])])
    # the opposite of the expected effect
    norm = cmp.COMPARISONS["norm"]
    pre, post = norm.settings
    upside = norm.summarize([_run(pre, [0.5, 0.5]), _run(post, [0.5, 1.0])])
    assert norm.notice not in upside and "post-LN came out ahead of pre-LN (100% against 50%" in upside
    assert norm.notice in norm.summarize([_run(pre, [0.5, 1.0]), _run(post, [0.5, 0.55])])


def test_level_at_the_end_but_sooner_counts_as_ahead():
    heads = cmp.COMPARISONS["heads"]
    one, four = heads.settings
    sooner = heads.summarize([_run(one, [0.2, 0.6, 0.9, 1.0]), _run(four, [0.2, 0.96, 1.0, 1.0])])
    assert heads.notice in sooner  # 4 heads reached 95% at step 20, 1 head at step 60
    same = heads.summarize([_run(one, [0.2, 0.96, 1.0]), _run(four, [0.2, 0.97, 1.0])])
    assert heads.notice not in same and "(4 heads reached 95% at step 20, 1 head reached 95% at step 20)" in same
    slower = heads.summarize([_run(one, [0.2, 0.96, 1.0]), _run(four, [0.2, 0.5, 0.97])])
    assert heads.notice not in slower and "1 head came out ahead of 4 heads" in slower


def test_no_check_or_no_load_means_no_notice():
    scale = cmp.COMPARISONS["scale"]
    on, off = scale.settings
    text = scale.summarize([_run(on, [0.2, 1.0]), _run(off, [])])
    assert scale.notice not in text and "Not every run reached a held-out check" in text
    moe = cmp.COMPARISONS["moe"]
    dense, mixed = moe.settings
    with_load = moe.summarize([_run(dense, [0.5, 1.0]), _run(mixed, [0.5, 1.0], load=[[0.4, 0.2, 0.2, 0.2]] * 2)])
    assert moe.notice in with_load and "layer 0: 40% 20% 20% 20%" in with_load
    assert moe.notice not in moe.summarize([_run(dense, [0.5, 1.0]), _run(mixed, [0.5, 1.0])])


def test_layernorms_on_the_residual_path_counted_in_the_running_model():
    """The count the norm comparison prints, against the LayerNorms the model runs: a post-LN
    block's two LayerNorms each normalise the residual sum (resid_mid = LN1(resid_pre + attn_out)),
    a pre-LN block's sit on the branch (resid_mid = resid_pre + attn_out), and the final one."""
    from tfviz.reference import layer_norm
    from tfviz.trace import run_with_trace

    pre, post = cmp.COMPARISONS["norm"].settings
    counts = {}
    for s in (pre, post):
        model = Transformer(s.model_config()).eval()
        t = TASKS[s.task]
        ids, _ = t.encode_many(t.examples(1, seed=0, split="heldout"))
        tr = run_with_trace(model, ids[0])
        on_path = 0
        for i in range(s.n_layers):
            for ln, before, branch, after in (("ln1", "hook_resid_pre", "hook_attn_out", "hook_resid_mid"),
                                              ("ln2", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")):
                summed = tr[f"blocks.{i}.{before}"] + tr[f"blocks.{i}.{branch}"]
                out = tr[f"blocks.{i}.{after}"]
                w = {k: v.detach().numpy() for k, v in model.blocks[i].named_parameters() if k.startswith(ln)}
                normed = layer_norm(summed, w[f"{ln}.weight"], w[f"{ln}.bias"]).output
                if np.allclose(out, normed, atol=1e-4):
                    on_path += 1
                else:
                    np.testing.assert_allclose(out, summed, atol=1e-5)  # pre-LN: nothing on the path
        counts[s.norm] = on_path + (s.norm == "pre")  # pre-LN: the final LayerNorm before the head
        assert hasattr(model, "ln_final") == (s.norm == "pre")
    assert counts == {"pre": cmp.residual_norms(pre), "post": cmp.residual_norms(post)} == {"pre": 1, "post": 8}
    assert "passes through 8 LayerNorms (2 in each of the 4 layers)" in cmp.COMPARISONS["norm"].notice
    assert "four LayerNorms" not in cmp.COMPARISONS["norm"].notice


def test_recall_reach_is_where_the_digit_lies_from_sep():
    from tfviz.lab.tasks import DIGITS, recall_reach

    t = TASKS["recall"]
    back = set()
    for split in ("train", "heldout"):
        for example in t.examples(400, seed=2, split=split):
            row, targets = t.encode(example)
            tokens = t.vocab.decode(row)
            sep = next(i for i, target in enumerate(targets) if target != IGNORE)  # the answer is read here
            digit = next(i for i, s in enumerate(tokens) if s in DIGITS)
            assert tokens[sep] == "<sep>" and tokens[digit] == example[1][0]
            back.add(sep - digit)
    assert (min(back), max(back)) == recall_reach() == (9, 16)
    assert "9 to 16 tokens back from the `<sep>`" in t.blurb
