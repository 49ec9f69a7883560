"""The training lab's engine: tasks' data by hand, bounds, a real short run, stop, the queue's cap."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tfviz.data.tasks import is_heldout
from tfviz.lab import comparisons as cmp
from tfviz.lab.runs import LabBusy, LabRunner
from tfviz.lab.settings import LAB_POSITIONALS, LabSettings
from tfviz.lab.tasks import (IGNORE, MARKERS, TASKS, accuracy, make_order, make_recall, make_stories,
                             next_token_targets, order_label, solved)
from tfviz.lab.train import RunLog, evaluate, train
from tfviz.model import Transformer


# ----- tasks ------------------------------------------------------------------------------------
def test_reverse_sort_copy_rows_by_hand():
    t = TASKS["reverse"]
    v = t.vocab
    ids, targets = t.encode((("d", "f", "h"), ("h", "f", "d")))  # 3, 5, 7 -> 7, 5, 3 (a = 4)
    assert ids == [1, 7, 9, 11, 3, 11, 9, 7] and targets == [IGNORE] * 4 + [11, 9, 7, 2]
    for key, want in (("reverse", lambda s: s[::-1]), ("sort", sorted), ("copy", lambda s: s)):
        for src, tgt in TASKS[key].examples(50, seed=4, split="train"):
            assert list(tgt) == list(want(src)) and 3 <= len(src) <= 8
            assert not is_heldout(src)
    assert v.decode(ids) == ["<bos>", "d", "f", "h", "<sep>", "h", "f", "d"]


def test_held_out_is_disjoint_from_training_for_every_task():
    for key, task in TASKS.items():
        train = {s for s, _ in task.examples(300, seed=0, split="train")}
        held = {s for s, _ in task.examples(100, seed=1, split="heldout")}
        if key == "stories":  # held out by (agent, verb, place, adjective), not by the words
            from tfviz.data.coref import coref_split
            tr, ho = coref_split(0)
            assert set(tr).isdisjoint(ho)
            assert {s[1] for s in held} <= {c.agent for c in ho}
        elif key == "order":  # a source and its x/y swap always fall on the same side
            assert not {tuple(sorted(s)) for s in train} & {tuple(sorted(s)) for s in held}
        else:
            assert train.isdisjoint(held), key
        ids, targets = task.encode_many(task.examples(20, seed=0, split="heldout"))
        assert ids.shape == targets.shape and ids.shape[1] <= task.max_len
        assert ((targets != IGNORE).sum(1) >= 1).all()


def test_order_labels_and_balance():
    assert order_label(("d", "y", "k", "x")) == "y" and order_label(("x", "a", "y")) == "x"
    ex = make_order(400, seed=2)
    assert all(sorted(s.count(m) for m in MARKERS) == [1, 1] for s, _ in ex)
    assert all(a == (min(MARKERS, key=list(s).index),) for s, a in ex)
    firsts = [a[0] for _, a in ex]
    assert firsts.count("x") == firsts.count("y") == 200  # each source comes with its swap
    t = TASKS["order"]
    ids, targets = t.encode((("a", "y", "x"), ("y",)))
    assert t.vocab.decode(ids) == ["<bos>", "a", "y", "x", "<sep>"]
    assert targets == [IGNORE] * 4 + [t.vocab.encode(["y"])[0]]


def test_recall_and_stories_answers():
    for src, (digit,) in make_recall(50, seed=1):
        digits = [s for s in src if s.isdigit()]
        assert digits == [digit] and src.index(digit) < len(src) // 2
    for words, (answer,) in make_stories(30, seed=0, split="heldout"):
        assert words[-3:] == ("refers", "to", "the") and answer in words
        adj = words[words.index("it") + 3]
        from tfviz.data.lexicon import AGENT_ADJS
        assert (answer == words[1]) == (adj in AGENT_ADJS)  # the agent is the second word


def test_accuracy_against_a_hand_computed_example():
    targets = np.array([[IGNORE, 4, 5], [IGNORE, 4, 5], [IGNORE, IGNORE, 6], [IGNORE, IGNORE, 6]])
    predicted = np.array([[9, 4, 5], [9, 4, 6], [0, 0, 6], [0, 0, 7]])  # right, wrong, right, wrong
    assert solved(predicted, targets).tolist() == [True, False, True, False]
    assert accuracy(predicted, targets) == 0.5
    assert next_token_targets(np.array([[1, 5, 6, 0]]), np.array([[IGNORE, IGNORE, 9, IGNORE]])).tolist() \
        == [[5, 6, 9, IGNORE]]


def test_evaluate_matches_a_plain_forward_and_argmax():
    s = LabSettings.default("reverse", d_model=32)
    model = Transformer(s.model_config()).eval()
    t = TASKS["reverse"]
    ids, targets = t.encode_many(t.examples(16, seed=0, split="heldout"))
    acc, load = evaluate(model, ids, targets)
    with torch.no_grad():
        pred = model(torch.from_numpy(ids)).argmax(-1).numpy()
    right = [all(pred[i, j] == targets[i, j] for j in range(ids.shape[1]) if targets[i, j] != IGNORE)
             for i in range(len(ids))]
    assert acc == sum(right) / len(right) and load is None


# ----- settings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    dict(n_layers=0), dict(n_layers=5), dict(n_heads=5), dict(d_model=8), dict(d_model=256),
    dict(d_model=64, n_heads=3), dict(positional="absolute"), dict(norm="middle"),
    dict(n_experts=1), dict(n_experts=9), dict(n_experts=4, top_k=5), dict(top_k=2),
    dict(lr=1.0), dict(lr=0.0), dict(lr="0.01"), dict(steps=0), dict(steps=10**9),
    dict(batch_size=10_000), dict(task="nope"), dict(n_layers=2.5), dict(n_layers=True),
    dict(scale="yes"), dict(positional="rope", d_model=48, n_heads=4)])  # RoPE: head size 12 is even;
def test_bad_settings_raise_a_friendly_value_error(bad):
    if bad == dict(positional="rope", d_model=48, n_heads=4):
        LabSettings(**bad)  # 48 / 4 = 12, even: allowed
        with pytest.raises(ValueError, match="even"):
            LabSettings(positional="rope", d_model=36, n_heads=4)  # 9: odd
        return
    with pytest.raises(ValueError) as err:
        LabSettings(**bad)
    msg = str(err.value)
    assert msg.endswith(".") and "Traceback" not in msg and len(msg) < 200


@pytest.mark.parametrize("positional", LAB_POSITIONALS)
def test_every_position_choice_builds(positional):
    s = LabSettings(task="order", positional=positional, n_experts=2, top_k=2, norm="post", scale=False)
    cfg = s.model_config()
    assert (cfg.positional, cfg.norm, cfg.scale_attn, cfg.n_experts, cfg.moe_top_k) == (
        positional, "post", False, 2, 2)
    assert cfg.arch == "encoder" and cfg.moe_capacity_factor is None
    Transformer(cfg)


def test_every_default_is_within_bounds():
    for key in TASKS:
        s = LabSettings.default(key)
        assert s.steps <= 1000 and s.model_config().vocab_size == TASKS[key].vocab.size


# ----- a real run -------------------------------------------------------------------------------
def test_a_short_run_lowers_the_loss_and_records_checkpoints():
    s = LabSettings.default("order", d_model=32, steps=40, lr=1e-2)
    view = train(s)
    assert view.state == "done" and view.step == 40 and len(view.losses) == 40
    assert np.mean(view.losses[-10:]) < np.mean(view.losses[:5])  # the whole point of training
    steps = [c.step for c in view.checkpoints]
    assert steps[0] == 0 and steps[-1] == 40 and steps == sorted(steps)
    maps = view.checkpoints[-1].patterns
    assert len(maps) == 3 and maps[0].shape == (2, 2, 10, 10)  # (layers, heads, T, T)
    # softmax rows; stored as float16 (relative step 2^-11 per weight, 10 weights per row)
    np.testing.assert_allclose(maps[0].astype(np.float32).sum(-1), 1.0, atol=1e-2)
    assert maps[0].dtype == np.float16
    assert view.shown_tokens[0][0] == "<bos>" and len(view.shown_tokens[0]) == 10
    assert not maps[0].flags.writeable


def test_moe_run_records_expert_load():
    view = train(LabSettings.default("copy", d_model=16, n_heads=1, steps=5, n_experts=3, top_k=1))
    load = view.checkpoints[-1].expert_load
    assert load.shape == (2, 3) and np.allclose(load.sum(1), 1.0)
    assert "layer 0:" in cmp.expert_loads(view)


def test_stop_ends_a_run_with_a_last_checkpoint():
    stop = threading.Event()
    log = RunLog(LabSettings.default("copy", d_model=16, n_heads=1, steps=3000))

    class StopAfter(list):  # sets the flag once five steps are logged
        def append(self, x):
            super().append(x)
            if len(self) == 5:
                stop.set()

    log.losses = StopAfter()
    view = train(log.settings, log, stop)
    assert view.state == "stopped" and view.step == 5 and view.checkpoints[-1].step == 5


def test_a_failure_is_reported_not_raised():
    log = RunLog(LabSettings.default("copy", d_model=16, n_heads=1, steps=3))
    view = train(log.settings, log, threads=None)
    assert view.state == "done"
    bad = RunLog(LabSettings.default("copy", d_model=16, n_heads=1, steps=3))
    object.__setattr__(bad.settings, "task", "gone")  # past the checks, as a bug would be
    view = train(bad.settings, bad)
    assert view.state == "failed" and "KeyError" in view.error


# ----- the queue --------------------------------------------------------------------------------
class Gate:
    """A fake trainer that waits at a gate, and counts how many train at once."""

    def __init__(self):
        self.open = threading.Event()
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, settings, log, stop, threads):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        log.update(state="running")
        while not self.open.wait(0.01):
            if stop.is_set():
                break
        with self.lock:
            self.now -= 1
        log.update(state="stopped" if stop.is_set() else "done", step=0)
        return log.view()


def test_ten_sessions_at_once_two_train_eight_wait_in_order():
    gate = Gate()
    runner = LabRunner(max_running=2, train_fn=gate)
    s = LabSettings.default("copy", steps=10)
    errors = []

    def press(i):
        try:
            runner.submit(f"s{i}", s)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=press, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    views = {f"s{i}": runner.status(f"s{i}") for i in range(10)}
    running = [k for k, v in views.items() if v.state == "running"]
    queued = sorted(v.position for v in views.values() if v.state == "queued")
    assert len(running) == 2 and queued == list(range(1, 9))
    assert runner.counts() == (2, 8)
    with pytest.raises(LabBusy):
        runner.submit("s3", s)  # one job per session
    cancelled = [k for k, v in views.items() if v.position == 4]
    assert runner.stop(cancelled[0]) and runner.status(cancelled[0]).state == "cancelled"
    assert sorted(v.position for v in map(runner.status, views) if v.state == "queued") == list(range(1, 8))
    gate.open.set()
    assert runner.join(timeout=60)
    final = {k: runner.status(k).state for k in views}
    assert gate.peak == 2
    assert sorted(final.values()) == ["cancelled"] + ["done"] * 9


def test_real_runs_of_ten_sessions_respect_the_cap():
    peak, now, lock = [0], [0], threading.Lock()

    def counted(settings, log, stop, threads):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        try:
            return train(settings, log, stop, threads)
        finally:
            with lock:
                now[0] -= 1

    runner = LabRunner(max_running=2, train_fn=counted)
    s = LabSettings.default("order", d_model=16, n_heads=1, n_layers=1, steps=2)
    for i in range(10):
        runner.submit(f"s{i}", s)
    runner.stop("s9")  # cancelled while queued
    assert runner.join(timeout=300)
    states = [runner.status(f"s{i}").runs[0].state for i in range(10)]
    assert states == ["done"] * 9 + ["cancelled"] and peak[0] <= 2


def test_one_job_per_session_stop_drop_and_prune():
    gate = Gate()
    runner = LabRunner(max_running=1, train_fn=gate)
    s = LabSettings.default("copy", steps=10)
    job = runner.submit("a", [s, s.replace(seed=1)])  # a comparison: one job, two runs
    assert len(job.runs) == 2
    with pytest.raises(LabBusy):
        runner.submit("a", s)
    runner.submit("b", s)
    assert runner.status("b").position == 1
    assert runner.stop("a")
    for _ in range(3000):  # "a" stops at its next look at the flag; "b" then waits at the gate
        if runner.status("a").finished:
            break
        threading.Event().wait(0.01)
    view = runner.status("a")
    assert view.state == "stopped" and [r.state for r in view.runs] == ["stopped", "cancelled"]
    runner.submit("a", s)  # a finished job does not block a new one
    assert runner.prune(alive=lambda sid: sid != "a") == 1 and runner.status("a") is None
    gate.open.set()
    assert runner.join(timeout=30)
    runner.drop("b")
    assert runner.status("b") is None and runner.counts() == (0, 0)
    with pytest.raises(ValueError):
        runner.submit("c", [])


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
