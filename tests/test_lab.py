"""The training lab's engine: tasks' data by hand, the settings' bounds, a real short run, stop.

The queue's cap: tests/unit/lab/test_queue.py; the numbers the page shows: tests/unit/lab/test_numbers.py."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tfviz.data.tasks import is_heldout
from tfviz.lab import comparisons as cmp
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
    dict(n_layers=0), dict(n_layers=7), dict(n_heads=5), dict(d_model=8), dict(d_model=256),
    dict(d_model=64, n_heads=3), dict(positional="absolute"), dict(norm="middle"),
    dict(n_experts=1), dict(n_experts=9), dict(n_experts=4, top_k=5), dict(top_k=2),
    dict(lr=1.0), dict(lr=0.0), dict(lr="0.01"), dict(steps=0), dict(steps=10**9),
    dict(batch_size=10_000), dict(task="nope"), dict(n_layers=2.5), dict(n_layers=True),
    dict(scale="yes"), dict(residual="no"), dict(residual=0),
    dict(positional="rope", d_model=48, n_heads=4)])  # RoPE: head size 12 is even;
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
