"""Lesson 3's RoPE on the model's own layout (tfviz.experiments.rope): each pair turned at the
model's real base, in its own pairing (adjacent or Llama's halves), with its scaling; q·k after
the turn unchanged when both tokens move along together; what a scaling does to each pair's
speed and to a far position.

References, independent of the code under test:
- ``tfviz.reference.rope`` and ``rope_inv_freq``: the float64 formulas;
- transformers' own ``ROPE_INIT_FUNCTIONS`` (linear, llama3) for the stretched frequencies, on
  a LlamaConfig of the same head size and base, and its ``apply_rotary_pos_emb`` (rotate_half);
- a hand-worked case: llama3 ×4 over 128 positions at base 10000, d = 16.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.config import RopeScaling, preset
from tfviz.experiments.rope import (RopeLayout, example_scalings, position_reads, rope_layout,
                                    rope_pair, rope_rotate, shifted_scores, stretch_groups,
                                    stretched_frequencies, turn_table)
from tfviz.reference import rope as reference_rope
from tfviz.reference import rope_inv_freq as reference_inv_freq

TEXT = "the animal didn't cross the street because it was too tired"
LLAMA31 = RopeScaling("llama3", 8.0, 1.0, 4.0, 8192)


def test_the_layout_is_the_configs():
    tiny, rope = rope_layout(preset("llama-tiny")), rope_layout(preset("gpt-tiny-rope"))
    assert (tiny.pairs, tiny.base, tiny.dim, tiny.n_pairs) == ("halves", 10000.0, 16, 8)
    assert [tiny.dims(i) for i in (0, 1, 7)] == [(0, 8), (1, 9), (7, 15)]
    assert [rope.dims(i) for i in (0, 1, 7)] == [(0, 1), (2, 3), (14, 15)]
    with pytest.raises(ValueError, match="does not use RoPE"):
        rope_layout(preset("gpt-tiny"))


@pytest.mark.parametrize("layout", [
    RopeLayout(16, 16, 10000.0, "halves"),
    RopeLayout(16, 16, 10000.0, "adjacent"),
    RopeLayout(64, 64, 500000.0, "halves", LLAMA31),
    RopeLayout(16, 16, 10000.0, "halves", RopeScaling("linear", 4.0)),
], ids=["halves", "adjacent", "llama3.1", "linear"])
def test_a_vector_turned_as_the_float64_formula_turns_it(layout):
    v = np.random.default_rng(0).normal(size=layout.d_head)
    inv_freq = reference_inv_freq(layout.dim, layout.base, layout.scaling)
    for position in (0, 1, 7, 100):
        expected = reference_rope(v[None], [position], inv_freq, layout.pairs)[0]
        np.testing.assert_allclose(rope_rotate(v, position, layout=layout), expected,
                                   rtol=1e-5, atol=1e-5 * position + 1e-6)


def test_the_halves_layout_is_transformers_rotate_half():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    layout = RopeLayout(16, 16, 10000.0, "halves")
    v = np.random.default_rng(1).normal(size=16).astype(np.float32)
    angle = 5 * torch.tensor(layout.inv_freq(), dtype=torch.float32)  # position 5
    cos, sin = torch.cat((angle, angle)).cos()[None, None], torch.cat((angle, angle)).sin()[None, None]
    x = torch.tensor(v)[None, None, None]  # (1, H, T, dh) as transformers lays it out
    theirs, _ = llama.apply_rotary_pos_emb(x, x, cos, sin)
    # each entry is two float32 products and a sum of two, here and in transformers, on values
    # of size ~1: a few ulps apart on any CPU and thread count
    np.testing.assert_allclose(rope_rotate(v, 5, layout=layout), theirs[0, 0, 0].numpy(), atol=1e-6)


@pytest.mark.parametrize("name", ["llama-tiny", "gpt-tiny-rope"])
def test_the_turn_table_reads_each_pair_in_the_models_own_dimensions(name):
    b = tfviz.load(name)
    tr = b.trace(TEXT)
    layout = rope_layout(b.config)
    m = len(tr.tokens) - 1
    pair = rope_pair(tr, 0, 1, m, 2)
    rows = turn_table(pair, layout)
    theta = reference_inv_freq(layout.dim, layout.base)
    assert [r["dimensions"] for r in rows] == [f"{a}, {b}" for a, b in map(layout.dims, range(8))]
    for r in rows:
        i = r["pair i"]
        a, c = layout.dims(i)
        before = complex(pair.q[a], pair.q[c])
        after = complex(pair.q_turned[a], pair.q_turned[c])
        assert r["θ_i (radians per step)"] == pytest.approx(theta[i], rel=1e-4)
        assert r[f"{m}·θ_i (wrapped)"] == pytest.approx(math.remainder(m * theta[i], 2 * math.pi), abs=1e-3)
        if abs(before) > 0.1:  # the hook's turned pair is q's pair times e^{i m θ}
            assert abs(math.remainder(np.angle(after / before) - m * theta[i], 2 * math.pi)) < 2e-3
            assert r["turned by"] == pytest.approx(math.remainder(m * theta[i], 2 * math.pi), abs=2e-3)


@pytest.mark.parametrize("layout", [rope_layout(preset("llama-tiny")), rope_layout(preset("gpt-tiny-rope")),
                                    RopeLayout(64, 64, 500000.0, "halves", LLAMA31)],
                         ids=["llama-tiny", "gpt-tiny-rope", "llama3.1"])
def test_moving_both_tokens_along_keeps_their_score(layout):
    """The engine's float32 scores at (i + s, j + s) against the float64 formula's, and against
    each other: equal up to float32's rounding of angles as large as i + s radians."""
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=layout.d_head), rng.normal(size=layout.d_head)
    rows = shifted_scores(q, k, 9, 4, layout)
    assert [(r["shift s"], r["query at"], r["key at"], r["distance"]) for r in rows] == [
        (s, 9 + s, 4 + s, 5) for s in (0, 1, 10, 100, 1000)]
    inv_freq = reference_inv_freq(layout.dim, layout.base, layout.scaling)
    exact = reference_rope(q[None], [9], inv_freq, layout.pairs)[0] @ reference_rope(k[None], [4], inv_freq,
                                                                                     layout.pairs)[0]
    scale = np.abs(q).sum() * np.abs(k).max()
    for r in rows:
        i, j = r["query at"], r["key at"]
        at_ij = reference_rope(q[None], [i], inv_freq, layout.pairs)[0] @ reference_rope(k[None], [j], inv_freq,
                                                                                         layout.pairs)[0]
        assert at_ij == pytest.approx(exact, abs=1e-9 * scale)  # float64: relative position only
        assert r["q·k after rotation"] == pytest.approx(exact, abs=1e-6 * scale * max(i, 1))


def test_shifted_scores_start_at_the_models_own_score():
    b = tfviz.load("llama-tiny")
    tr = b.trace(TEXT)
    pair = rope_pair(tr, 0, 3, len(tr.tokens) - 1, 1)
    rows = shifted_scores(pair.q, pair.k, pair.query, pair.key, rope_layout(b.config))
    assert rows[0]["q·k after rotation"] == pytest.approx(pair.score, rel=1e-5, abs=1e-5)


def _transformers_inv_freq(layout: RopeLayout, scaling: RopeScaling) -> np.ndarray:
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import LlamaConfig

    params = {"rope_type": scaling.kind, "factor": scaling.factor, "rope_theta": layout.base}
    if scaling.kind == "llama3":
        params.update(low_freq_factor=scaling.low_freq_factor, high_freq_factor=scaling.high_freq_factor,
                      original_max_position_embeddings=scaling.original_max_position_embeddings)
    config = LlamaConfig(hidden_size=layout.d_head * 2, num_attention_heads=2, head_dim=layout.d_head,
                         max_position_embeddings=131072, rope_parameters=params)
    theirs, _ = rope_utils.ROPE_INIT_FUNCTIONS[scaling.kind](config)
    return theirs.numpy().astype(np.float64)


@pytest.mark.parametrize("layout, context, factor", [
    (rope_layout(preset("gpt-tiny-rope")), 128, 4.0),
    (rope_layout(preset("llama-tiny")), 128, 16.0),
    (RopeLayout(64, 64, 100000.0, "halves"), 8192, 2.0),  # SmolLM2-135M's head and base
])
def test_stretched_frequencies_are_transformers_own(layout, context, factor):
    scalings = example_scalings(context, factor)
    rows = stretched_frequencies(layout, scalings)
    by = {}
    for r in rows:
        by.setdefault(r["scheme"], []).append(r["θ_i (radians per position)"])
    assert list(by) == ["plain", f"linear ×{factor:g}", f"llama3 ×{factor:g}"]
    # float32 of one power and one division per entry against float64: a few ulps, no sums
    np.testing.assert_allclose(by["plain"], reference_inv_freq(layout.dim, layout.base), rtol=1e-6)
    for kind, scaling in scalings.items():
        # the engine's float32 values and transformers' are the same operations: equal to the bit
        assert np.array_equal(np.array(by[f"{kind} ×{factor:g}"]), _transformers_inv_freq(layout, scaling))
    wavelengths = [r["wavelength (positions per turn)"] for r in rows if r["scheme"] == "plain"]
    np.testing.assert_allclose(wavelengths, 2 * np.pi / reference_inv_freq(layout.dim, layout.base), rtol=1e-6)


def test_a_far_position_as_each_pair_reads_it():
    layout = RopeLayout(16, 16, 10000.0, "adjacent")
    scalings = example_scalings(128, 4.0)
    rows = position_reads(layout, scalings, 511)
    reads = {}
    for r in rows:
        reads.setdefault(r["scheme"], []).append(r["reads as"])
    assert reads["plain"] == pytest.approx([511.0] * 8)
    assert reads["linear ×4"] == pytest.approx([511 / 4] * 8, rel=1e-6)
    # by hand: wavelengths 2π·10000^(i/8) = 6.3, 19.9, 62.8, 198.7, ... against 128/4 = 32 and 128
    llama = reads["llama3 ×4"]
    assert llama[:2] == pytest.approx([511.0, 511.0], rel=1e-6)  # λ < 32: kept
    assert llama[3:] == pytest.approx([511 / 4] * 5, rel=1e-6)  # λ > 128: divided
    s = (128 / (2 * np.pi / 0.1) - 1.0) / (4.0 - 1.0)  # (L / λ − lo) / (hi − lo), λ = 2π / 0.1
    assert llama[2] == pytest.approx(511 * ((1 - s) / 4 + s), rel=1e-5)  # λ = 62.8: blended
    g = stretch_groups(layout, scalings["llama3"])
    assert (g.kept, g.divided, g.blended) == ((0, 1), (3, 4, 5, 6, 7), (2,))
    g = stretch_groups(layout, scalings["linear"])
    assert (g.kept, g.divided, g.blended) == ((), tuple(range(8)), ())


@pytest.mark.parametrize("scaling", [LLAMA31, RopeScaling("llama3", 8.0, 1.0, 4.0, 64)])
def test_stretch_groups_follow_transformers_wavelength_rule(scaling):
    layout = RopeLayout(64, 64, 500000.0, "halves", scaling)
    wavelen = 2 * np.pi / reference_inv_freq(64, 500000.0)
    L = scaling.original_max_position_embeddings
    g = stretch_groups(layout, scaling)
    assert g.kept == tuple(np.flatnonzero(wavelen < L / scaling.high_freq_factor))
    assert g.divided == tuple(np.flatnonzero(wavelen > L / scaling.low_freq_factor))
    assert len(g.kept) + len(g.divided) + len(g.blended) == 32


def test_a_scaled_rope_model_loses_its_scaling_with_its_positions():
    """Lesson 3's order test builds the sidebar's model without positions: a Llama 3.1-shaped
    config (llama3 scaling, partial rotary) must give a model that is order-blind."""
    from tfviz.experiments.order import permutation_check, positionless_model

    cfg = preset("llama-tiny").replace(rope_scaling=LLAMA31, rotary_dim=8)
    bare = positionless_model(cfg)
    assert (bare.cfg.positional, bare.cfg.rope_scaling, bare.cfg.rotary_dim) == ("none", None, None)
    check = permutation_check(bare, [5, 9, 12, 40, 7], [4, 3, 2, 1, 0])
    assert check.max_gap < 1e-5
