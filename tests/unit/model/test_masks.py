"""Masks and positions: causality, sparse patterns, RoPE, ALiBi, GQA."""
import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.model.masks import pattern_mask, sparse_pattern, strided_halves
from tfviz.model.positional import alibi_bias, apply_rope, rope_angles
from tfviz.trace import run_with_trace


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "alibi", "none"])
def test_decoder_cannot_peek_but_encoder_can(positional):
    ids = torch.tensor([[4, 8, 15, 16, 23, 42]])
    later = ids.clone()
    later[0, 4] = 7  # change a later token
    dec = Transformer(ModelConfig(positional=positional, n_layers=2)).eval()
    a, b = dec(ids), dec(later)
    # Bit for bit, on any CPU: both calls have the same shapes, so the same kernels; a row of a
    # dense decoder is computed from its own row and earlier ones, and a later key gets weight
    # exp(-inf) = 0 exactly, so 0 · (its changed value) adds nothing.
    torch.testing.assert_close(a[0, :4], b[0, :4], rtol=0, atol=0)
    assert not torch.allclose(a[0, 4:], b[0, 4:])
    enc = Transformer(ModelConfig(arch="encoder", positional=positional, n_layers=2)).eval()
    assert not torch.allclose(enc(ids)[0, :4], enc(later)[0, :4])


def test_causal_option_turns_an_encoder_into_a_decoder():
    enc = Transformer(ModelConfig(arch="encoder", n_layers=1)).eval()
    tr = run_with_trace(enc, [1, 2, 3], options=RunOptions(causal=True))
    assert tr["pattern", 0][:, 0, 1:].max() == 0


def _as_int(a):
    return a.astype(int).tolist()


def test_sparse_patterns_match_hand_drawn_examples():
    # window 1: each token sees itself and one neighbour each side
    assert _as_int(sparse_pattern("sliding", 4, window=1)) == [
        [1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    # dilation 2, window 1: neighbours at distance 2 only (and itself)
    assert _as_int(sparse_pattern("dilated", 5, window=1, dilation=2)) == [
        [1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 1, 0, 1], [0, 1, 0, 1, 0], [0, 0, 1, 0, 1]]
    # one global token (position 0) plus window 0
    assert _as_int(sparse_pattern("global", 4, window=0, n_global=1)) == [
        [1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]]
    # strided with stride 2: distance < 2 or even distance
    assert _as_int(sparse_pattern("strided", 5, stride=2)) == [
        [1, 1, 1, 0, 1], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [1, 0, 1, 1, 1]]
    big = sparse_pattern("bigbird", 16, window=1, n_global=1, n_random=2, seed=3)
    base = sparse_pattern("global", 16, window=1, n_global=1)
    assert (big >= base).all() and (big.sum(1) <= base.sum(1) + 2).all() and (big != base).any()
    np.testing.assert_array_equal(big, sparse_pattern("bigbird", 16, window=1, n_random=2, seed=3))


def test_pattern_read_by_an_encoder_and_by_a_decoder():
    # an encoder reads the pattern as drawn (symmetric, as in the papers' figures); a decoder
    # keeps only keys at or before the query
    for kind in ("full", "sliding", "dilated", "global", "strided"):
        enc = pattern_mask(kind, 9, causal=False, window=1, dilation=2, n_global=1, stride=3)
        dec = pattern_mask(kind, 9, causal=True, window=1, dilation=2, n_global=1, stride=3)
        assert (enc == enc.T).all()
        assert _as_int(dec) == [[int(enc[i, j] and j <= i) for j in range(9)] for i in range(9)]
    # Longformer's global token reads every position in an encoder, only itself in a decoder
    assert pattern_mask("global", 6, causal=False, window=1)[0].all()
    assert _as_int(pattern_mask("global", 6, causal=True, window=1)[0]) == [1, 0, 0, 0, 0, 0]


def test_sparse_transformer_halves_by_hand():
    local, step = strided_halves(7, 3)
    # the last token's local half: Child et al.'s l = 3 back, and itself
    assert _as_int(local[6]) == [0, 0, 0, 1, 1, 1, 1]
    assert _as_int(step[6]) == [1, 0, 0, 1, 0, 0, 1]  # its strided half: every 3rd back
    np.testing.assert_array_equal(local | step, sparse_pattern("strided", 7, stride=3))
    local, step = strided_halves(7, 3, causal=True)  # a decoder's halves: nothing ahead
    assert _as_int(local[4]) == [0, 1, 1, 1, 1, 0, 0] and _as_int(step[3]) == [1, 0, 0, 1, 0, 0, 0]
    np.testing.assert_array_equal(local | step, pattern_mask("strided", 7, causal=True, stride=3))


@pytest.mark.parametrize("pattern", ["sliding", "dilated", "global", "bigbird", "strided", "block"])
def test_model_applies_pattern_with_causality(pattern):
    cfg = ModelConfig(attn_pattern=pattern, window=1, n_layers=1, max_seq_len=16)
    tr = run_with_trace(Transformer(cfg).eval(), list(range(1, 11)))
    allowed = sparse_pattern(pattern, 16, window=1, dilation=2, n_global=1, n_random=2,
                             stride=4, seed=0)[:10, :10] & np.tril(np.ones((10, 10), bool))
    np.testing.assert_array_equal(tr["pattern", 0][0] > 0, allowed)


def test_rope_scores_depend_only_on_distance():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8, generator=g), torch.randn(1, 1, 1, 8, generator=g)

    def score(m, n):
        qm = apply_rope(q, *rope_angles(torch.tensor([m]), 8))
        kn = apply_rope(k, *rope_angles(torch.tensor([n]), 8))
        return float((qm * kn).sum())

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 4), abs=1e-3)
    # rotation keeps length
    rotated = apply_rope(q, *rope_angles(torch.tensor([7]), 8))
    assert float(rotated.norm()) == pytest.approx(float(q.norm()), rel=1e-5)


def test_alibi_bias_by_hand():
    bias = alibi_bias(2, torch.arange(3), torch.arange(3))
    # slopes 2^-4 and 2^-8; bias = -slope * |i - j|
    np.testing.assert_allclose(bias[0].numpy(), -np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]]) / 16)
    np.testing.assert_allclose(bias[1, 0, 2].item(), -2 / 256)


def test_gqa_equals_mha_with_shared_key_value_heads():
    gqa = Transformer(ModelConfig(n_heads=4, n_kv_heads=2, n_layers=1, d_model=32)).eval()
    mha = Transformer(ModelConfig(n_heads=4, n_layers=1, d_model=32)).eval()
    state = dict(gqa.state_dict())
    for name in ("W_k", "W_v"):  # repeat each kv head for the 2 query heads it serves
        w = state[f"blocks.0.attn.{name}.weight"].view(2, 8, 32)  # (Hkv, dh, d)
        b = state[f"blocks.0.attn.{name}.bias"].view(2, 8)
        state[f"blocks.0.attn.{name}.weight"] = w.repeat_interleave(2, 0).reshape(32, 32)
        state[f"blocks.0.attn.{name}.bias"] = b.repeat_interleave(2, 0).reshape(32)
    mha.load_state_dict(state)
    ids = torch.tensor([[1, 5, 9, 3, 2]])
    torch.testing.assert_close(gqa(ids), mha(ids), atol=1e-5, rtol=1e-5)
    same = Transformer(ModelConfig(n_heads=4, n_kv_heads=4, n_layers=1, d_model=32)).eval()
    fresh_mha = Transformer(ModelConfig(n_heads=4, n_layers=1, d_model=32)).eval()
    # same seed, same maths: 4 kv heads for 4 heads is plain MHA's code path (nothing repeated),
    # with the same weights and shapes, so the same kernels give the same bits
    torch.testing.assert_close(same(ids), fresh_mha(ids), atol=0, rtol=0)
    assert run_with_trace(gqa, [1, 2, 3])["k", 0].shape == (3, 2, 8)


def test_multi_query_has_one_key_head():
    m = Transformer(ModelConfig(n_heads=4, n_kv_heads=1, n_layers=1)).eval()
    assert m.blocks[0].attn.W_k.weight.shape == (16, 64)
