"""Lesson 3's numbers for gpt-tiny-relative (Shaw et al.) and gpt-tiny-t5 (T5's bias), each
against a computation that shares none of the lesson's code:

- Shaw's tables straight from the model's nn.Embedding weights (not Bundle.weights()), and the
  heads' mean position terms rebuilt one sentence at a time from each layer's own q (hook_q)
  and a^K, with plain Python loops over the pairs (no batch, no padding, no bincount);
- T5's buckets from transformers' own T5Attention._relative_position_bucket (or, without
  transformers, from the buckets written out by hand for T5's defaults), its biases from the
  model's nn.Embedding.

The claims the page makes about rows and buckets training never reached ("still their random
start, shrunk a little by weight decay") are checked against the models' starting weights.
"""
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis.relative_positions import (bias_by_distance, bucket_layout, favourite_counts,
                                               preference_rows, reached_buckets, reached_distances,
                                               shaw_preferences, shaw_rows, t5_preferences)
from tfviz.config import preset
from tfviz.data import story_corpus
from tfviz.experiments.relative import position_terms
from tfviz.model import Transformer

SENTENCES = 40  # enough pairs at every distance up to the clip, and quick


@pytest.fixture(scope="module")
def shaw():
    return tfviz.load("gpt-tiny-relative")


@pytest.fixture(scope="module")
def t5():
    return tfviz.load("gpt-tiny-t5")


def _hf_bucket():
    try:
        from transformers.models.t5.modeling_t5 import T5Attention
    except ImportError:
        return None
    return lambda rel, both, n, m: T5Attention._relative_position_bucket(
        torch.as_tensor(rel), bidirectional=both, num_buckets=n, max_distance=m).numpy()


# ----- Shaw et al. ---------------------------------------------------------------------------------
def test_shaw_rows_are_the_models_tables_and_the_unused_ones_only_decayed(shaw):
    cfg, reached = shaw.config, shaw.manifest["eval"]["positions_trained"]
    rows = shaw_rows(shaw.weights(), cfg.rel_clip, cfg.causal, reached - 1)
    for layer, block in enumerate(shaw.model.blocks):
        np.testing.assert_array_equal(rows.keys[layer], block.attn.rel_k.weight.detach().double().numpy())
        np.testing.assert_array_equal(rows.values[layer], block.attn.rel_v.weight.detach().double().numpy())
    # a decoder with sentences of 20 positions reads −16 … 0 (k = 16): rows 0 … 16
    assert rows.used.tolist() == [True] * 17 + [False] * 16
    assert (rows.used_from, rows.used_to) == ("−16", "0")
    both = torch.cat([torch.stack([b.attn.rel_k.weight for b in shaw.model.blocks]),
                      torch.stack([b.attn.rel_v.weight for b in shaw.model.blocks])], -1).detach().double()
    assert rows.mean_abs_used == pytest.approx(both[:, :17].abs().mean().item(), rel=1e-12)
    assert rows.mean_abs_unused == pytest.approx(both[:, 17:].abs().mean().item(), rel=1e-12)
    # "still their random start, shrunk a little by weight decay": AdamW with a zero gradient
    # multiplies a row by one common factor a step; the rows it read moved far more
    start = Transformer(preset("gpt-tiny-relative"))
    for b0, b1 in zip(start.blocks, shaw.model.blocks):
        for name in ("rel_k", "rel_v"):
            w0, w1 = getattr(b0.attn, name).weight.detach().double(), getattr(b1.attn, name).weight.detach().double()
            factor = (w1[17:] / w0[17:]).median()
            assert 0.9 < factor < 1.0
            # float32 weights multiplied 1,600 times: relative error ~1e-6, far below 1e-4
            torch.testing.assert_close(w1[17:], w0[17:] * factor, rtol=1e-4, atol=1e-7)
            assert ((w1[:17] - w0[:17] * factor).abs().amax(1) > 1e-2).all()
    assert rows.mean_abs_used > 2 * rows.mean_abs_unused


def test_reached_distances_of_an_encoder_and_a_short_training():
    assert reached_distances(2, causal=False, farthest=9).tolist() == [True] * 5
    assert reached_distances(4, causal=False, farthest=2).astype(int).tolist() == [0, 0, 1, 1, 1, 1, 1, 0, 0]


def _terms_by_hand(bundle, texts):
    """Mean q_i·a^K_{clip(j−i)}/√d per (layer, head, distance back), one sentence at a time,
    from the layer's own q (hook_q) and the model's a^K, with loops over the pairs."""
    cfg = bundle.config
    k, L, H = cfg.rel_clip, cfg.n_layers, cfg.n_heads
    sums, counts = np.zeros((L, H, k + 1)), np.zeros(k + 1)
    for text in texts:
        tr = bundle.trace(text)
        n = len(tr.tokens)
        for layer in range(L):
            a_k = bundle.model.blocks[layer].attn.rel_k.weight.detach().double().numpy()  # (2k+1, dh)
            q = tr["q", layer].astype(np.float64)  # (n, H, dh)
            for i in range(n):
                for j in range(i + 1):
                    back = min(i - j, k)
                    row = a_k[k - back]  # distance j − i = −back
                    sums[layer, :, back] += q[i] @ row / math.sqrt(cfg.d_head)
                    if layer == 0:
                        counts[back] += 1
    return sums / counts, counts


def test_head_preferences_equal_the_pairs_averaged_by_hand(shaw):
    cfg = shaw.config
    texts = story_corpus(512, seed=1001)[:SENTENCES]
    ids = [shaw.encode(t) for t in texts]
    terms, lengths = position_terms(shaw.model, ids, cfg.pad_id)
    pref = shaw_preferences(terms, lengths, cfg.rel_clip, cfg.causal, math.sqrt(cfg.d_head))
    by_hand, counts = _terms_by_hand(shaw, texts)
    assert pref.distances.tolist() == list(range(-16, 1))
    np.testing.assert_array_equal(pref.pairs[::-1], counts)  # −16 … 0 against 0 … 16 back
    assert pref.pairs_at(0) == sum(len(i) for i in ids)  # every token reads itself
    # float32 products of the model against float64 ones here: 1e-5 of the terms' scale
    np.testing.assert_allclose(pref.mean[:, :, ::-1], by_hand, rtol=1e-4, atol=1e-5)
    for p in pref.best:
        row = by_hand[p.layer, p.head]
        assert -p.best == int(np.argmax(row)) and -p.worst == int(np.argmin(row))
        assert p.best_value == pytest.approx(row.max(), abs=1e-5)
    labels = {p.best_label for p in pref.best}
    assert all(lab.endswith("back") or lab == "the token itself" for lab in labels)


def test_a_padded_batch_gives_each_text_what_it_gives_alone(shaw):
    """position_terms pads the batch on the right with a mask: no real pair moves."""
    a, b = shaw.encode("the dog ran to the big red house"), shaw.encode("it was")
    both, lengths = position_terms(shaw.model, [a, b])
    alone, _ = position_terms(shaw.model, [b])
    assert lengths.tolist() == [len(a), len(b)]
    np.testing.assert_allclose(both[:, 1, :, :len(b), :len(b)], alone[:, 0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="relative"):
        position_terms(tfviz.load("gpt-tiny").model, [a])


def test_preferences_and_counts_golden():
    s = np.zeros((1, 1, 2, 3, 3))  # (L, B, H, T, T)
    s[0, 0, 0] = [[1, 0, 0], [5, 2, 0], [0, 7, 3]]  # head 0: distance 0 → 1, 2, 3; 1 back → 5, 7
    s[0, 0, 1] = [[4, 0, 0], [1, 4, 0], [9, 1, 4]]  # head 1: 0 → 4; 1 back → 1; 2 back → 9
    p = shaw_preferences(s, [3], clip=2, causal=True, divisor=2.0)
    assert p.pairs.tolist() == [1, 2, 3]
    np.testing.assert_allclose(p.mean[0], [[0.0, 3.0, 1.0], [4.5, 0.5, 2.0]])
    assert [(b.best_label, b.worst_label) for b in p.best] == [("1 back", "2 or more back"),
                                                               ("2 or more back", "1 back")]
    assert favourite_counts(p.best) == {"1 back": 1, "2 or more back": 1}
    assert preference_rows(p.best, "mean term")[1] == {
        "layer": 0, "head": 1, "favourite": "2 or more back", "mean term": 4.5,
        "least favourite": "1 back", "its mean term": 0.5}


# ----- T5 --------------------------------------------------------------------------------------
# T5's defaults written out by hand, for a machine without transformers: a decoder's 16 exact
# distances, then ln(a/16)/ln(8)·16 rounded down
DECODER_32_128 = {16: 16, 18: 16, 19: 17, 20: 17, 21: 18, 113: 31, 112: 30, 128: 31, 1000: 31}


@pytest.mark.parametrize("both", [False, True])
@pytest.mark.parametrize("n, m", [(32, 128), (8, 20), (16, 64)])
def test_bucket_layout_names_transformers_buckets(both, n, m):
    hf = _hf_bucket()
    layout = bucket_layout(n, m, both)
    span = np.arange(-(m + 40), m + 41)
    theirs = hf(span, both, n, m) if hf is not None else None
    if theirs is None:
        pytest.skip("transformers (a dev dependency) is not installed; the next test pins T5's defaults")
    for b in range(n):
        ds = span[(theirs == b) & ((span <= 0) | both)]
        if not len(ds):
            assert layout.empty[b] and layout.labels[b] == "none"
            continue
        near, far = ds[np.argmin(np.abs(ds))], ds[np.argmax(np.abs(ds))]
        assert layout.nearest[b] == near
        if layout.open_ended[b]:
            assert abs(far) == m + 40 and layout.labels[b].startswith("≥ ")
        else:
            assert layout.farthest[b] == far
    if both:
        assert layout.empty.tolist() == [i == n // 2 for i in range(n)]  # "0 ahead": never used


def test_t5_default_buckets_by_hand():
    layout = bucket_layout(32, 128, False)
    for back, bucket in DECODER_32_128.items():
        lo = abs(layout.nearest[bucket])
        hi = math.inf if layout.open_ended[bucket] else abs(layout.farthest[bucket])
        assert lo <= back <= hi, (back, bucket, layout.labels[bucket])
    assert layout.labels[:3] == ("0", "1 back", "2 back") and layout.labels[-1] == "≥ 113 back"
    assert layout.labels[16:18] == ("16–18 back", "19–20 back")


def test_t5_preferences_and_bias_are_the_models_table(t5):
    cfg, farthest = t5.config, t5.manifest["eval"]["positions_trained"] - 1
    table = t5.model.blocks[0].attn.rel_pos_bias.weight.detach().double().numpy()  # (32, 4)
    layout = bucket_layout(cfg.rel_buckets, cfg.rel_max_distance, bidirectional=False)
    reached = reached_buckets(layout, farthest)
    assert farthest == 19 and reached.tolist() == [True] * 18 + [False] * 14  # 19 back: bucket 17
    hf = _hf_bucket()
    for p in t5_preferences(t5.weights()["rel_pos_bias"], layout, farthest):
        col = table[:18, p.head]
        assert p.best_value == pytest.approx(col.max(), abs=1e-7)
        assert p.worst_value == pytest.approx(col.min(), abs=1e-7)
        assert layout.labels[int(np.argmax(col))] == p.best_label
        if hf is not None:  # the favourite's nearest distance falls in the favourite bucket
            assert hf(np.array([p.best]), False, 32, 128)[0] == int(np.argmax(col))
    shown = list(range(0, -41, -1))
    bias = bias_by_distance(t5.weights()["rel_pos_bias"], shown, False, 128)
    buckets = hf(np.array(shown), False, 32, 128) if hf is not None else \
        np.array([min(-d, 15) if -d < 16 else [b for a, b in sorted(DECODER_32_128.items()) if a <= -d][-1]
                  for d in shown])
    np.testing.assert_allclose(bias, table[buckets].T, rtol=0, atol=1e-7)  # float32 copies


def test_t5_buckets_training_never_read_only_decayed(t5):
    start = Transformer(preset("gpt-tiny-t5")).blocks[0].attn.rel_pos_bias.weight.detach().double()
    now = t5.model.blocks[0].attn.rel_pos_bias.weight.detach().double()
    factor = (now[18:] / start[18:]).median()
    assert 0.9 < factor < 1.0
    torch.testing.assert_close(now[18:], start[18:] * factor, rtol=1e-4, atol=1e-7)
    assert ((now[:18] - start[:18] * factor).abs().amax(1) > 1e-2).all()
