"""Lesson 3's trained position models: gpt-tiny-learned (a trained position table),
gpt-tiny-rope (RoPE), gpt-tiny-relative (Shaw et al.'s relative vectors) and gpt-tiny-t5 (T5's
bucketed bias), each gpt-tiny with only its positions changed. (The last two's lesson numbers:
tests/unit/analysis/test_relative_positions.py.)

References, independent of the lesson's code paths:
- learned table: torch.nn.functional.cosine_similarity on the model's own nn.Embedding weight
  (not Bundle.weights(), which the lesson reads), and the sine table from tfviz.model.positional;
- RoPE: the turn written with complex numbers (pair i of a vector is the complex number
  x[2i] + i·x[2i+1]; turning it by an angle is multiplying by e^{i·angle}), in float64, and
  layer 0's scores rebuilt from the weights by hand.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis.positions import learned_positions
from tfviz.config import POS_PRESET_NAMES, PRESET_NAMES, preset
from tfviz.decoding import generate
from tfviz.experiments.rope import rope_pair, rope_scores, shift_gap, turn_table
from tfviz.model import Transformer
from tfviz.model.positional import sinusoidal_table
from tfviz.training.recipes import CORPUS_SENTENCES, GPT_COREF_FRACTION, RECIPES, _story_rows

TEXT = "the animal didn't cross the street because it was too tired. it refers to the"


@pytest.fixture(scope="module")
def learned():
    return tfviz.load("gpt-tiny-learned")


@pytest.fixture(scope="module")
def rope():
    return tfviz.load("gpt-tiny-rope")


def test_presets_differ_from_gpt_tiny_only_in_positions():
    gpt = preset("gpt-tiny")
    assert POS_PRESET_NAMES == ("gpt-tiny-learned", "gpt-tiny-rope", "gpt-tiny-relative", "gpt-tiny-t5")
    for name, kind in zip(POS_PRESET_NAMES, ("learned", "rope", "relative", "t5_bias")):
        cfg = preset(name)
        assert name not in PRESET_NAMES  # kept out of the sidebar's model list
        assert cfg.positional == kind and gpt.positional == "sinusoidal"
        assert {**vars(cfg), "name": "", "positional": ""} == {**vars(gpt), "name": "", "positional": ""}
        a, b = RECIPES[name], RECIPES["gpt-tiny"]
        assert (a.steps, a.batch_size, a.lr, a.seed, a.warmup, a.weight_decay) == \
               (b.steps, b.batch_size, b.lr, b.seed, b.warmup, b.weight_decay)
        assert a.data["compared_with"] == "gpt-tiny (sinusoidal)"
        assert {k: v for k, v in a.data.items() if k != "compared_with"} == \
               {k: v for k, v in b.data.items() if k != "heldout"}
    with pytest.raises(KeyError, match="unknown preset"):
        preset("gpt-tiny-alibi")


@pytest.mark.parametrize("name", POS_PRESET_NAMES)
def test_bundles_load_trained_with_their_manifest(name):
    b = tfviz.load(name)
    assert b.trained and b.config == preset(name)
    m = b.manifest
    assert m["command"] == f"python -m tfviz.train --preset {name}"
    assert m["data"]["compared_with"] == "gpt-tiny (sinusoidal)"
    gpt = tfviz.load("gpt-tiny").manifest["eval"]
    # measured like gpt-tiny, on the same held-out sentences and probe items
    assert m["eval"]["val_sentences"] == gpt["val_sentences"] and m["eval"]["coref_items"] == gpt["coref_items"]
    assert m["eval"]["val_loss"] < 1.0 and m["eval"]["coref_accuracy"] >= 0.95


@pytest.mark.parametrize("name", POS_PRESET_NAMES)
def test_kv_cache_generates_what_the_full_rerun_does(name):
    b = tfviz.load(name)
    fast = generate(b, "the dog", max_new_tokens=12, use_cache=True)
    slow = generate(b, "the dog", max_new_tokens=12, use_cache=False)
    assert fast.ids == slow.ids


# ----- learned positions ------------------------------------------------------------------------
def test_positions_trained_is_the_longest_training_input():
    tok = tfviz.load("gpt-tiny").tokenizer
    rows = _story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION)(tok)
    # a row of n ids feeds positions 0..n-1, and the last one (<eos>) has no next token
    longest = max(len(r) for r in rows)
    assert tfviz.load("gpt-tiny-learned").manifest["eval"]["positions_trained"] == longest - 1 == 20


def test_rows_training_never_reached_only_decayed(learned):
    """AdamW with a zero gradient leaves only the weight decay: rows past positions_trained are
    their initial values times one common factor; the trained rows are not."""
    reached = learned.manifest["eval"]["positions_trained"]
    start = Transformer(preset("gpt-tiny-learned")).pos_embed.weight.detach().double()
    now = learned.model.pos_embed.weight.detach().double()
    factor = (now[reached:] / start[reached:]).median()
    assert 0.9 < factor < 1.0
    # float32 weights multiplied 1,600 times: relative error ~1e-6, far below 1e-4
    torch.testing.assert_close(now[reached:], start[reached:] * factor, rtol=1e-4, atol=1e-7)
    assert ((now[:reached] - start[:reached] * factor).abs().amax(1) > 1e-2).all()


def _mean_cosine_by_distance(table: torch.Tensor) -> list[float]:
    t = table.double()
    return [F.cosine_similarity(t[: len(t) - d], t[d:], dim=1).mean().item() for d in range(len(t))]


def test_learned_similarity_by_distance_equals_torch_cosine_similarity(learned):
    reached = learned.manifest["eval"]["positions_trained"]
    lp = learned_positions(learned.weights()["W_pos"], reached, learned.config.pos_base)
    table = learned.model.pos_embed.weight.detach()
    # the same float32 numbers in float64, summed in another order: ~1e-16
    np.testing.assert_allclose(lp.learned, _mean_cosine_by_distance(table[:reached]), atol=1e-12)
    sine = sinusoidal_table(reached, learned.config.d_model, learned.config.pos_base)
    np.testing.assert_allclose(lp.sine, _mean_cosine_by_distance(sine), atol=1e-12)
    shown = len(lp.cosine)
    ref = F.cosine_similarity(table[:shown, None].double(), table[None, :shown].double(), dim=-1)
    np.testing.assert_allclose(lp.cosine, ref.numpy(), atol=1e-12)
    neighbours = F.cosine_similarity(table[:-1].double(), table[1:].double(), dim=1)
    assert lp.neighbours_trained == pytest.approx(neighbours[: reached - 1].mean().item(), abs=1e-12)
    assert lp.neighbours_untrained == pytest.approx(neighbours[reached:].mean().item(), abs=1e-12)
    # what the lesson says of them: trained neighbours are more alike than untrained ones, and
    # the sine table is smooth (its neighbours nearly equal)
    assert lp.neighbours_trained > lp.neighbours_untrained + 0.1 and lp.sine[1] > 0.9


def test_learned_positions_hand_example():
    table = np.array([[1.0, 0], [0, 1], [-1, 0], [0, -1], [2, 2]])  # rows 3 and 4: untrained
    lp = learned_positions(table, trained=3, base=100.0, shown=4)
    np.testing.assert_allclose(lp.learned, [1.0, 0.0, -1.0], atol=1e-12)
    # d = 2: one pair; float64 sines rounded once to float32 (half an ulp), as the model's table
    np.testing.assert_allclose(lp.sine, [1.0, math.cos(1), math.cos(2)], atol=1e-7)
    assert lp.cosine.shape == (4, 4) and lp.neighbours_trained == 0.0
    assert lp.neighbours_untrained == pytest.approx(-math.sqrt(0.5))  # (0, -1) against (2, 2)


# ----- RoPE -------------------------------------------------------------------------------------
def _complex(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x[..., 0::2] + 1j * x[..., 1::2]  # (..., dh/2): pair i as one complex number


def _thetas(dh: int, base: float) -> np.ndarray:
    return base ** (-np.arange(0, dh, 2) / dh)  # (dh/2,)


def _turn(x, position, base=10000.0) -> np.ndarray:
    """RoPE written with complex numbers: pair i times e^{i·position·θ_i}, back to reals."""
    z = _complex(x) * np.exp(1j * position * _thetas(np.shape(x)[-1], base))
    out = np.empty(np.shape(x))
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


@pytest.fixture(scope="module")
def rope_trace(rope):
    return rope.trace(TEXT)


def test_the_trained_model_turns_q_and_k_as_complex_numbers_do(rope_trace):
    T = len(rope_trace.tokens)
    for layer in range(rope_trace.config.n_layers):
        q, k = rope_trace["q", layer], rope_trace["k", layer]  # (T, H, dh) before the turn
        ref_q = np.stack([_turn(q[t], t) for t in range(T)])
        ref_k = np.stack([_turn(k[t], t) for t in range(T)])
        # the engine turns in float32 (angle t·θ rounded to ~1e-6 rad at these positions)
        np.testing.assert_allclose(rope_trace["rot_q", layer], ref_q, atol=1e-4)
        np.testing.assert_allclose(rope_trace["rot_k", layer], ref_k, atol=1e-4)
        # and the model's scores are the turned vectors' dot products
        scores = np.einsum("qhd,khd->hqk", ref_q, ref_k)
        np.testing.assert_allclose(rope_trace["scores_raw", layer], scores, atol=1e-3)


def test_rope_pair_and_turn_table_read_the_model(rope_trace):
    i, j, head = len(rope_trace.tokens) - 1, 2, 1
    pair = rope_pair(rope_trace, 0, head, i, j)
    np.testing.assert_array_equal(pair.q, rope_trace["q", 0][i, head])
    np.testing.assert_array_equal(pair.k_turned, rope_trace["rot_k", 0][j, head])
    assert pair.score == pytest.approx(float(_turn(pair.q, i) @ _turn(pair.k, j)), abs=1e-4)
    thetas = _thetas(len(pair.q), 10000.0)
    for row, z in zip(turn_table(pair), _complex(pair.q)):
        n = row["pair i"]
        assert row["θ_i (radians per step)"] == pytest.approx(thetas[n], abs=1e-5)
        expected = math.remainder(i * thetas[n], 2 * math.pi)  # wrapped into [−π, π]
        assert row[f"{i}·θ_i (wrapped)"] == pytest.approx(expected, abs=1e-3)  # shown to 3 decimals
        if abs(z) > 0.1:  # a pair near the origin has no clear direction
            gap = math.remainder(row["turned by"] - expected, 2 * math.pi)
            assert abs(gap) < 3e-3  # two numbers rounded to 3 decimals, plus float32's turn
    with pytest.raises(ValueError, match="RoPE"):
        rope_pair(tfviz.load("gpt-tiny").trace(TEXT), 0, 0, 1, 0)


@pytest.mark.parametrize("head", range(4))
def test_score_depends_only_on_the_offset_for_trained_q_and_k(rope_trace, head):
    """q_m·k_n = Re(Σ_i z_q,i · conj(z_k,i) · e^{i(m−n)θ_i}): the same for every m at one m − n.

    Tolerance: the engine computes the angle m·θ in float32 for m up to 53 here, off by up to
    ~4e-6 rad, which moves a score by at most that times |q||k|; 1e-5·|q||k| leaves room."""
    i = len(rope_trace.tokens) - 1
    pair = rope_pair(rope_trace, 0, head, i, 0)
    size = np.linalg.norm(pair.q) * np.linalg.norm(pair.k)
    thetas = _thetas(len(pair.q), 10000.0)
    for d in (0, 3, i):
        exact = float(np.real(np.sum(_complex(pair.q) * np.conj(_complex(pair.k)) * np.exp(1j * d * thetas))))
        rows = rope_scores(pair.q, pair.k, d, range(d, d + 40, 4))
        assert [r["key position"] for r in rows] == [r["query position"] - d for r in rows]
        np.testing.assert_allclose([r["q·k after rotation"] for r in rows], exact, atol=1e-5 * size)
    # the model's own score for the pair sits on its line (the chart's black diamond)
    on_line = rope_scores(pair.q, pair.k, i, [i])[0]["q·k after rotation"]
    assert on_line == pytest.approx(pair.score, abs=1e-5 * size)


def _layer0_scores_by_hand(bundle, ids, offset):
    """Layer 0's raw scores from the weights: post-LN, so layer 0 reads the embeddings (+ the
    sine table for gpt-tiny); RoPE turns q and k by their positions offset, offset+1, ..."""
    w, cfg = bundle.weights(), bundle.config
    x = w["W_E"][ids].astype(np.float64)  # (T, d)
    pos = np.arange(offset, offset + len(ids))
    if cfg.positional == "sinusoidal":
        x = x + sinusoidal_table(offset + len(ids), cfg.d_model, cfg.pos_base).numpy()[pos]
    q = np.einsum("td,hde->the", x, w["W_Q"][0]) + w["b_Q"][0]  # (T, H, dh)
    k = np.einsum("td,hde->the", x, w["W_K"][0]) + w["b_K"][0]
    if cfg.positional == "rope":
        q = np.stack([_turn(q[t], p) for t, p in enumerate(pos)])
        k = np.stack([_turn(k[t], p) for t, p in enumerate(pos)])
    return np.einsum("qhd,khd->hqk", q, k)


@pytest.mark.parametrize("name, moves", [("gpt-tiny-rope", False), ("gpt-tiny", True)])
def test_moving_the_text_changes_layer0_scores_only_with_added_positions(name, moves):
    b = tfviz.load(name)
    ids = b.encode(TEXT)
    filler, shift = b.encode("the")[0], 8
    by_hand = np.abs(_layer0_scores_by_hand(b, ids, shift) - _layer0_scores_by_hand(b, ids, 0)).max()
    gap = shift_gap(b.model, ids, shift, filler)
    if moves:
        assert gap > 0.5 and gap == pytest.approx(by_hand, rel=1e-3)  # float32 against float64
    else:
        assert by_hand < 1e-9 and gap < 1e-3  # float32 angles at other positions: ~1e-5
