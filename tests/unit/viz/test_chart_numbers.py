"""The numbers behind lessons 12 and 13's charts as tables (tfviz.viz.kit.chart_numbers): every
table holds the model's own numbers, labelled as the charts label them."""
from __future__ import annotations

import numpy as np
import pytest

import tfviz
from tfviz.analysis import forward as fw
from tfviz.viz.kit import chart_numbers as cn
from tfviz.viz.kit.style import token_labels

TEXT = "the dog sat on the mat"


@pytest.fixture(scope="module")
def walk():
    bundle = tfviz.load("gpt-tiny")
    trace = bundle.trace(TEXT)
    steps = [fw.forward_steps(trace, head=h, token_strings=bundle.token_strings)
             for h in range(trace.config.n_heads)]
    return trace, steps, cn.forward_walk(steps)


def test_the_forward_walk_has_one_table_per_step_and_one_per_head_where_heads_differ(walk):
    trace, steps, tables = walk
    cfg = trace.config
    # each block's self-attention differs by head; every other step is the same for all heads
    assert len(tables) == len(steps[0]) + cfg.n_layers * (cfg.n_heads - 1)
    names = [t.name for t in tables]
    assert names[0].startswith("1 · Tokens")
    assert len(set(names)) == len(names)
    for layer in range(cfg.n_layers):
        for head in range(cfg.n_heads):
            shown = next(t for t in tables if f"Block {layer} · self-attention (head {head})" in t.name)
            np.testing.assert_array_equal(shown.values, trace["pattern", layer][head])
            # the repeated "the" stays two rows and two columns, named by position
            assert shown.rows == tuple(token_labels(trace.tokens)) == shown.cols


def test_the_forward_walk_tables_hold_the_traces_numbers(walk):
    trace, steps, tables = walk
    ids = next(t for t in tables if t.name.startswith("1 · Tokens"))
    assert ids.values[0].tolist() == list(trace.ids) and ids.rows == ("id",)
    emb = next(t for t in tables if "Token embeddings" in t.name)
    np.testing.assert_allclose(emb.values, trace["hook_embed"], rtol=1e-6)  # the trace's own numbers
    assert emb.cols[:3] == ("0", "1", "2") and emb.values.shape == (len(trace.tokens), trace.config.d_model)
    top = tables[-1]
    assert top.rows == ("P",) and np.isclose(top.values[0, 0], steps[0][-1].values[0, 0])
    assert top.values[0, 0] == top.values.max()  # the most likely candidate first


def test_encoder_and_decoder_tables_name_layer_head_and_keep_masked_cells_empty():
    rng = np.random.default_rng(0)
    enc = rng.random((2, 2, 3, 3))
    memory = rng.standard_normal((3, 4))
    tables = cn.encoder(enc, memory, ["a", "b", "a"])
    assert [t.name for t in tables] == [
        "encoder self-attention · layer 0, head 0", "encoder self-attention · layer 0, head 1",
        "encoder self-attention · layer 1, head 0", "encoder self-attention · layer 1, head 1",
        "memory (n × d = 3 × 4)"]
    np.testing.assert_array_equal(tables[3].values, enc[1, 1])
    np.testing.assert_array_equal(tables[4].values, memory)
    assert tables[0].rows == ("0 a", "1 b", "2 a") and tables[4].cols == ("d0", "d1", "d2", "d3")
    causal = np.where(np.tri(2, dtype=bool), 0.5, np.nan)[None, None]  # (1, 1, 2, 2)
    cross = np.full((1, 1, 2, 3), 1 / 3)
    dec = cn.decoder(causal, cross, ["<bos>", "c"], ["a", "b", "c"])
    assert [t.name for t in dec] == ["decoder self-attention · layer 0, head 0",
                                     "cross-attention · layer 0, head 0"]
    assert np.isnan(dec[0].values[0, 1]) and dec[0].values[1, 1] == 0.5
    assert dec[1].rows == ("0 <bos>", "1 c") and dec[1].cols == ("0 a", "1 b", "2 c")


def test_labels_must_fit_the_numbers():
    with pytest.raises(ValueError, match=r"\(2, 2\) values for 2 × 3 labels"):
        cn.matrix("x", np.zeros((2, 2)), ["a", "b"], ["a", "b", "c"])
    assert cn.matrix("x", [[1, 2]], ["r"], ["c", "c"]).cols == ("c", "c (2)")
