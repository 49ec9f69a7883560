"""Lessons 1-4 analysis: pipeline shapes and predictions, positions, soft lookup.

Every number is checked against an independent reference: torch's own functions, a hand-worked
example, or the source's "I am a Robot" table.
"""
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import lookup, pipeline, positions
from tfviz.config import RunOptions, preset
from tfviz.experiments import rope
from tfviz.experiments.masked import masked_trace
from tfviz.experiments.order import permutation_check, positionless_model
from tfviz.model import Transformer
from tfviz.reference import positional_table
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.tokenizer.task import TaskTokenizer
from tfviz.trace import run_with_trace

PRESETS = ["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec"]


@pytest.fixture(scope="module")
def bundles():
    return {name: tfviz.load(name) for name in PRESETS}


# ----- pipeline --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PRESETS)
def test_stage_shapes_are_the_trace_shapes(bundles, name):
    b = bundles[name]
    tr = b.trace("the cat sat")
    stages = {s.key: s for s in pipeline.pipeline_stages(tr)}
    assert list(stages) == ["tokens", "embed", "pos", "blocks", "attn", "ffn", "logits", "next"]
    T = len(tr.tokens)
    assert stages["tokens"].shape == (T,)
    assert stages["embed"].shape == tr["hook_embed"].shape == (T, b.config.d_model)
    assert stages["pos"].shape == tr["hook_pos_embed"].shape
    assert stages["blocks"].shape == tr[f"blocks.{b.config.n_layers - 1}.hook_resid_post"].shape
    assert stages["attn"].shape == (b.config.n_heads, T, T)
    assert stages["logits"].shape == tr.logits.shape
    assert stages["next"].shape == (tr.logits.shape[-1],)
    if b.config.is_moe:
        assert stages["ffn"].shape == (T, b.config.n_experts)
    else:
        assert stages["ffn"].shape == (T, b.config.d_ff)


@pytest.mark.parametrize("kind, word", [("rope", "RoPE"), ("alibi", "ALiBi"), ("none", "no position")])
def test_stage_notes_for_models_without_added_positions(kind, word):
    cfg = preset("gpt-tiny").replace(positional=kind, n_layers=1)
    tr = run_with_trace(Transformer(cfg), [5, 6, 7], tokens=["a", "b", "c"])
    pos = next(s for s in pipeline.pipeline_stages(tr) if s.key == "pos")
    assert word in pos.note


def test_probabilities_match_torch_softmax():
    z = np.array([[1.0, 2.0, -3.0, 1000.0], [0.0, 0.0, 0.0, 0.0]])
    ref = torch.softmax(torch.tensor(z), dim=-1).numpy()
    np.testing.assert_allclose(pipeline.probabilities(z), ref, atol=1e-12)


def test_top_predictions_order_probabilities_and_tokens():
    logits = np.log(np.array([0.1, 0.05, 0.5, 0.2, 0.15]))
    top = pipeline.top_predictions(logits, 3, lambda i: "abcde"[i])
    assert [(i, t) for i, t, _ in top] == [(2, "c"), (3, "d"), (4, "e")]
    np.testing.assert_allclose([p for _, _, p in top], [0.5, 0.2, 0.15])


def test_top_predictions_survive_ids_outside_the_tokenizer():
    def strict(i):
        raise IndexError(i)

    assert pipeline.top_predictions(np.array([0.0, 5.0]), 1, strict)[0][1] == "#1"


def test_mask_token_id_is_the_tokenizers_own():
    assert pipeline.mask_token_id(ByteTokenizer()) == 4
    assert pipeline.mask_token_id(TaskTokenizer()) is None  # letters only: no [MASK]


def test_masked_trace_hides_one_token_and_matches_a_direct_forward(bundles):
    b = bundles["bert-tiny"]
    text = "the cat sat on the mat"
    ids = b.encode(text)
    assert len(ids) > 2  # holds for the byte-level fallback and for the trained BPE
    tr = masked_trace(b, text, 2)
    ids[2] = 4
    assert tr.ids.tolist() == ids and tr.tokens[2] == "[MASK]"
    with torch.no_grad():
        ref = b.model(torch.tensor([ids]))[0].numpy()
    np.testing.assert_allclose(tr.logits, ref, atol=1e-5)


def test_rnn_vs_transformer_counts():
    rows = pipeline.rnn_vs_transformer([2, 10])
    got = {(r["n"], r["measure"], r["model"]): r["value"] for r in rows}
    assert got[(10, pipeline.STEPS, "RNN")] == 10
    assert got[(10, pipeline.STEPS, "Transformer")] == 1
    assert got[(10, pipeline.PATH, "RNN")] == 9
    assert got[(10, pipeline.PATH, "Transformer")] == 1
    assert len(rows) == 8


# ----- positions -------------------------------------------------------------------------------

ROBOT = [[0, 1, 0, 1], [0.84, 0.54, 0.10, 1.0], [0.91, -0.42, 0.20, 0.98], [0.14, -0.99, 0.30, 0.96]]


def test_robot_table_matches_the_source_to_two_decimals():
    # Rounded float32 compared exactly: the entry closest to a rounding boundary, cos 0.1 =
    # 0.995004, is 4e-6 from 0.995, 40 times float32's error (~1e-7), so every CPU rounds alike.
    np.testing.assert_allclose(positions.sinusoid_table(4, 4, 100).round(2), ROBOT, atol=1e-9)
    rows = positions.formula_table(d=4, base=100)
    assert [r["word"] for r in rows] == ["I", "am", "a", "Robot"]
    for k, row in enumerate(rows):
        for j in range(4):
            assert row[f"P(k,{j})"].endswith(f"= {ROBOT[k][j]:.2f}")
    assert rows[2]["P(k,1)"] == "cos(2/1) = -0.42"


@pytest.mark.parametrize("n, d, base", [(16, 8, 10000.0), (10, 6, 100.0), (5, 3, 10.0)])
def test_sinusoid_table_matches_an_independent_numpy_version(n, d, base):
    np.testing.assert_allclose(positions.sinusoid_table(n, d, base), positional_table(n, d, base),
                               atol=1e-6)  # float64 sines, one side rounded once to float32


@pytest.mark.parametrize("n, d, base", [(128, 64, 10000.0), (128, 2, 10.0), (50, 128, 100000.0),
                                        (7, 3, 100.0)])
def test_sinusoid_table_is_the_engines_table_to_the_bit(n, d, base):
    from tfviz.model.positional import sinusoidal_table

    # Both round the same float64 sines to float32; exact on any CPU unless a sine sits within
    # float64's error (~1e-16) of a float32 rounding boundary, which none of these do.
    np.testing.assert_array_equal(positions.sinusoid_table(n, d, base),
                                  sinusoidal_table(n, d, base).numpy())


@pytest.mark.parametrize("heads, n", [(4, 12), (3, 5), (8, 1)])
def test_alibi_is_the_engines_bias_to_the_bit(heads, n):
    from tfviz.model.positional import alibi_bias, alibi_slopes

    slopes, bias = positions.alibi(heads, n)
    pos = torch.arange(n)  # float32 products of the same float32 slopes: exact on any CPU
    np.testing.assert_array_equal(slopes, alibi_slopes(heads).numpy())
    np.testing.assert_array_equal(bias, alibi_bias(heads, pos, pos).numpy())


def test_similarity_by_distance_hand_example_and_distance_only_property():
    np.testing.assert_allclose(positions.similarity_by_distance(np.array([[1.0, 0], [0, 1], [-1, 0]])),
                               [1.0, 0.0, -1.0], atol=1e-12)
    table = positions.sinusoid_table(20, 16)
    sim = positions.cosine_matrix(table)
    for delta in range(20):
        diag = np.diagonal(sim, offset=delta)
        np.testing.assert_allclose(diag, diag[0], atol=1e-5)  # same at every starting position
    v = table[3] / np.linalg.norm(table[3])
    w = table[7] / np.linalg.norm(table[7])
    assert math.isclose(sim[3, 7], float(v @ w), abs_tol=1e-9)


def _rotate_by_hand(x, pos, base=10000.0):
    out = np.empty_like(x)
    for i in range(len(x) // 2):
        a = pos * base ** (-2 * i / len(x))
        c, s = math.cos(a), math.sin(a)
        out[2 * i] = c * x[2 * i] - s * x[2 * i + 1]
        out[2 * i + 1] = s * x[2 * i] + c * x[2 * i + 1]
    return out


def test_rope_rotation_matches_a_hand_rotation_and_depends_only_on_distance():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=8), rng.normal(size=8)
    np.testing.assert_allclose(rope.rope_rotate(q, 5), _rotate_by_hand(q, 5), atol=1e-5)
    rows = rope.rope_scores(q, k, 3, [3, 10, 40])
    scores = [r["q·k after rotation"] for r in rows]
    ref = float(_rotate_by_hand(q, 3) @ _rotate_by_hand(k, 0))
    np.testing.assert_allclose(scores, [ref] * 3, atol=1e-4)
    assert [(r["query position"], r["key position"]) for r in rows] == [(3, 0), (10, 7), (40, 37)]
    angles = rope.rope_pair_angles(1, 8)
    # float32 powers of at most 1, an ulp or two from float64's
    np.testing.assert_allclose(angles, [10000.0 ** (-2 * i / 8) for i in range(4)], atol=1e-6)


def test_alibi_bias_is_minus_slope_times_distance():
    slopes, bias = positions.alibi(4, 5)
    np.testing.assert_allclose(slopes, [2 ** (-8 * (h + 1) / 4) for h in range(4)])
    for h in range(4):
        for i in range(5):
            for j in range(5):
                # powers of two times whole distances: exact in float32
                assert math.isclose(bias[h, i, j], -slopes[h] * abs(i - j), abs_tol=1e-7)


def test_permutation_kinds():
    assert positions.permutation(5, "reverse").tolist() == [4, 3, 2, 1, 0]
    assert positions.permutation(5, "rotate").tolist() == [1, 2, 3, 4, 0]
    shuffled = positions.permutation(8, "shuffle", seed=3)
    assert sorted(shuffled.tolist()) == list(range(8))
    assert shuffled.tolist() == positions.permutation(8, "shuffle", seed=3).tolist()
    with pytest.raises(ValueError):
        positions.permutation(3, "sideways")


def test_positionless_model_is_a_separate_model(bundles):
    shared = bundles["gpt-tiny"]
    bare = positionless_model(shared.config)
    assert bare.cfg.positional == "none" and bare is not shared.model
    assert shared.config.positional == "sinusoidal" and shared.model.cfg.positional == "sinusoidal"


@pytest.mark.parametrize("name", PRESETS)
def test_without_positions_outputs_permute_with_the_tokens(bundles, name):
    b = bundles[name]
    ids = b.encode("the cat sat on the mat")
    order = positions.permutation(len(ids), "shuffle", seed=1)
    check = permutation_check(positionless_model(b.config), ids, order)
    assert check.max_gap < 1e-4
    np.testing.assert_allclose(check.permuted, check.original[order], atol=1e-4)


def test_permutation_check_outputs_match_a_direct_forward(bundles):
    b = bundles["gpt-tiny"]  # post-LN with tied embeddings: logits = last output @ E^T
    ids = b.encode("a dog")
    check = permutation_check(b.model, ids, positions.permutation(len(ids)))
    with torch.no_grad():
        logits = b.model(torch.tensor([ids]), options=RunOptions(causal=False))[0].numpy()
    np.testing.assert_allclose(check.original @ b.model.embed.weight.detach().numpy().T, logits, atol=1e-4)
    assert check.max_gap > 1e-2  # with positions, reordering changes the outputs


# ----- soft lookup -----------------------------------------------------------------------------

def test_soft_lookup_matches_torch():
    t = lookup.toy_table()
    q = np.array([0.7, -0.2])
    for tau in (0.1, 1.0, 3.0):
        got = lookup.soft_lookup(q, t.keys, t.values, tau)
        w = torch.softmax(torch.tensor(t.keys) @ torch.tensor(q) / tau, dim=0).numpy()
        np.testing.assert_allclose(got.weights, w, atol=1e-12)
        np.testing.assert_allclose(got.output, w @ t.values, atol=1e-12)
        np.testing.assert_allclose(got.scores, t.keys @ q)


def test_hard_lookup_returns_exactly_one_value():
    t = lookup.toy_table()
    hard = lookup.hard_lookup(np.array([-1.0, 0.0]), t.keys, t.values)
    assert hard.weights.tolist() == [0.0, 0.0, 1.0, 0.0]  # "car" matches best
    assert hard.output.tolist() == t.values[2].tolist()


def test_sharp_softmax_approaches_the_hard_lookup():
    t = lookup.toy_table()
    q = np.array([1.0, 0.5])
    rows = lookup.temperature_sweep(q, t.keys, t.values, [10.0, 1.0, 0.1, 0.001])
    weights = [r["weight on best key"] for r in rows]
    assert weights == sorted(weights)  # sharper -> more weight on the best key
    assert weights[-1] > 0.999 and rows[-1]["distance from hard answer"] < 1e-6
    with pytest.raises(ValueError):
        lookup.soft_lookup(q, t.keys, t.values, 0.0)


def test_effective_count_and_one_hot():
    assert lookup.effective_count([0.5, 0.5]) == 2.0
    assert lookup.one_hot_of_best([0.2, 0.7, 0.1]).tolist() == [0.0, 1.0, 0.0]
