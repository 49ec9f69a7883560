"""Lesson 11 analysis: routing tables, capacity, dropped tokens, class × expert counts."""
import math

import numpy as np
import pytest

import tfviz
from tfviz.analysis import moe as ma
from tfviz.config import ModelConfig, RunOptions
from tfviz.data.lexicon import CLASSES, word_class
from tfviz.model import Transformer
from tfviz.trace import run_with_trace


@pytest.fixture(scope="module")
def moe():
    return tfviz.load("moe-tiny")


def test_routing_reads_the_trace(moe):
    tr = moe.trace("the cat sat on the mat.", options=RunOptions(moe_top_k=2))
    r = ma.routing(tr, 1)  # the trace's own arrays, no arithmetic: bit for bit
    np.testing.assert_array_equal(r.probs, tr["blocks.1.mlp.hook_gate_probs"])
    np.testing.assert_array_equal(r.indices, tr["blocks.1.mlp.hook_expert_indices"])
    np.testing.assert_array_equal(r.counts, tr["blocks.1.mlp.hook_expert_counts"])
    assert r.k == 2 and r.n_experts == 4
    chosen = r.chosen_mask()
    assert (chosen.sum(1) == 2).all()
    np.testing.assert_array_equal(np.sort(np.nonzero(chosen)[1].reshape(-1, 2), 1), np.sort(r.indices, 1))


@pytest.mark.parametrize("factor,T,k,E", [(2.0, 10, 1, 4), (1.25, 7, 2, 4), (0.1, 3, 1, 8)])
def test_capacity_matches_the_model(factor, T, k, E):
    cfg = ModelConfig(n_experts=E, moe_top_k=k, moe_capacity_factor=factor, d_model=16, n_heads=2, d_ff=32)
    from tfviz.model.moe import MoE
    assert ma.capacity_of(factor, T, k, E) == MoE(cfg).capacity(T, k) == max(1, math.ceil(factor * T * k / E))
    assert ma.capacity_of(None, T, k, E) is None


def test_dropped_tokens_are_accounted_for():
    model = Transformer(ModelConfig(n_experts=4, moe_top_k=2, moe_capacity_factor=0.3, n_layers=1)).eval()
    tr = run_with_trace(model, list(range(1, 17)), tokens=[f"t{i}" for i in range(16)])
    r = ma.routing(tr, 0)
    rows = ma.dropped_tokens(r, tr.tokens)
    assert len(rows) == int(r.dropped.sum()) > 0
    assert r.dropped_mask().sum() == r.dropped.sum()
    # every choice of an expert is either served or dropped
    np.testing.assert_array_equal(r.counts + r.dropped_per_expert(), np.bincount(r.indices.ravel(), minlength=4))
    cap = ma.capacity_of(0.3, 16, 2, 4)
    assert (r.counts <= cap).all()
    first = rows[0]
    t = int(first["token"].split()[0])
    assert r.dropped[t, first["choice"] - 1] and r.indices[t, first["choice"] - 1] == first["expert"]
    # with the factor, each row says why: the expert had served its budget by then
    for row in ma.dropped_tokens(r, tr.tokens, 0.3):
        t = int(row["token"].split()[0])
        served = sum(1 for u in range(t) for s in range(2)
                     if r.indices[u, s] == row["expert"] and not r.dropped[u, s])
        assert row["served before"] == served >= row["budget by then"] == math.ceil(0.3 * (t + 1) * 2 / 4)


def test_token_words_and_classes():
    assert ma.token_words(["c", "a", "t", "␣", "s", "a", "t", "."]) == ["cat"] * 3 + ["", "sat", "sat", "sat", "."]
    assert ma.token_words(["␣the", "␣cat", "s", "␣didn", "'t", "?"]) == ["the", "cats", "cats", "didn't", "didn't", "?"]
    assert ma.token_words(["<bos>", "hi"]) == ["<bos>", "hi"]
    classes = ma.token_classes(["␣the", "␣cat", "s", "␣", "walked", "."], word_class)
    assert classes == ["function", "noun", "noun", "space", "verb", "punct"]


def test_class_expert_table_counts_first_choices(moe):
    traces = [moe.trace(s) for s in ma.SAMPLE_SENTENCES[:4]]
    classes, experts, counts = ma.class_expert_table(traces, word_class, layer=1, order=(*CLASSES, "space"))
    assert experts == [0, 1, 2, 3] and counts.shape == (len(classes), 4)
    assert counts.sum() == sum(len(t.tokens) for t in traces)
    assert classes == [c for c in (*CLASSES, "space") if c in classes]
    # independent recount, token by token
    ref = np.zeros_like(counts)
    for t in traces:
        for cls, e in zip(ma.token_classes(t.tokens, word_class), t["blocks.1.mlp.hook_expert_indices"][:, 0]):
            ref[classes.index(cls), e] += 1
    np.testing.assert_array_equal(counts, ref)


def test_shares_concentration_and_summary():
    counts = np.array([[3, 1], [2, 2], [0, 0]])
    np.testing.assert_allclose(ma.row_shares(counts), [[0.75, 0.25], [0.5, 0.5], [0, 0]])
    np.testing.assert_allclose(ma.concentration(counts), [0.75, 0.5, 0.0])
    rows = ma.class_summary(["noun", "verb", "adj"], counts)
    assert rows[0] == {"class": "noun", "tokens": 4, "favourite expert": 0, "concentration": 0.75}


def test_table_from_manifest_shapes():
    table = {"classes": ["noun", "verb"], "counts": [[1, 2], [3, 4]]}
    assert ma.table_from_manifest({}) is None
    classes, experts, counts = ma.table_from_manifest({"moe": table})
    assert classes == ["noun", "verb"] and experts == [0, 1] and counts.tolist() == [[1, 2], [3, 4]]
    assert ma.table_from_manifest({"moe": [table, table]}, layer=1)[0] == ["noun", "verb"]
    assert ma.table_from_manifest({"moe": {"layers": [table]}}, layer=3) is None
    assert ma.table_from_manifest({"moe": {"classes": ["a"], "counts": [[1], [2]]}}) is None
