"""Lesson 5's numbers: the walkthrough and the matrix form equal a recomputation from q, k, v."""
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import attention as att
from tfviz.analysis import attention_matrix as atm
from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.reference import attention, causal_mask
from tfviz.trace import run_with_trace
from tfviz.weights import export_weights

# Long enough for 20+ tokens with the trained BPE as well as with the byte-level fallback.
TEXT = ("the animal didn't cross the street because it was too tired. the dog ran to the park "
        "and the cat sat on the mat.")


def _reference(q, k, v, scale, causal, query_pos, temperature=1.0):
    """One query row of the numpy reference's attention (tfviz.reference), from q, k and v."""
    mask = causal_mask(len(k))[query_pos:query_pos + 1] if causal else None  # (1, n)
    s = attention(q[None], k, v, mask, scale, temperature=temperature)  # one query row
    return s.scores[0], s.scaled[0], s.masked[0], s.weights[0], s.output[0]


@pytest.fixture(scope="module")
def bundles():
    return {name: tfviz.load(name) for name in ("gpt-tiny", "bert-tiny")}


@pytest.mark.parametrize("name,options,causal,divisor_on", [
    ("gpt-tiny", RunOptions(), True, True),
    ("bert-tiny", RunOptions(), False, True),
    ("gpt-tiny", RunOptions(scale=False), True, False),
    ("gpt-tiny", RunOptions(causal=False, temperature=2.5), False, True),
    ("bert-tiny", RunOptions(causal=True, temperature=0.5), True, True),
])
@pytest.mark.parametrize("layer,head,query_pos", [(0, 0, 0), (1, 3, 7), (1, 2, 20)])
def test_walkthrough_equals_numpy_recomputation(bundles, name, options, causal, divisor_on,
                                                layer, head, query_pos):
    tr = bundles[name].trace(TEXT, options=options)
    assert len(tr.tokens) > 20
    walk = att.query_walkthrough(tr, layer, head, query_pos)
    q = tr["q", layer][query_pos, head].astype(np.float64)
    k = tr["k", layer][:, head].astype(np.float64)
    v = tr["v", layer][:, head].astype(np.float64)
    raw, scaled, masked, weights, z = _reference(q, k, v, divisor_on, causal, query_pos,
                                                 options.temperature)
    np.testing.assert_allclose(walk.raw, raw, atol=1e-5)
    np.testing.assert_allclose(walk.scaled, scaled, atol=1e-5)
    assert (np.isneginf(walk.masked) == np.isneginf(masked)).all()
    assert walk.allowed.sum() == (query_pos + 1 if causal else len(tr.tokens))
    # the model's float32 weights against float64 from the same q and k: a float32 tolerance
    np.testing.assert_allclose(walk.weights, weights, atol=1e-5)
    np.testing.assert_allclose(walk.z, z, atol=1e-5)
    np.testing.assert_allclose(walk.weighted_values.sum(axis=0), walk.z, atol=1e-5)
    assert walk.divisor == (4.0 if divisor_on else 1.0)  # d_k = 16
    assert walk.temperature == options.temperature and walk.tokens == tr.tokens


def test_walkthrough_uses_the_shared_kv_head_in_grouped_query_attention():
    cfg = ModelConfig(d_model=32, n_heads=4, n_kv_heads=2, n_layers=1, vocab_size=50)
    tr = run_with_trace(Transformer(cfg).eval(), [3, 8, 1, 9, 4], tokens=list("abcde"))
    walk = att.query_walkthrough(tr, 0, 3, 4)
    assert walk.kv_head == 1 == att.kv_head(4, 2, 3)
    k, v = tr["k", 0][:, 1].astype(np.float64), tr["v", 0][:, 1].astype(np.float64)
    _, _, _, weights, z = _reference(walk.q, k, v, True, True, 4)
    np.testing.assert_allclose(walk.weights, weights, atol=1e-5)  # float32 against float64
    np.testing.assert_allclose(walk.z, z, atol=1e-5)


def test_walkthrough_scores_with_rotated_vectors_under_rope():
    cfg = ModelConfig(d_model=32, n_heads=2, n_layers=1, vocab_size=50, positional="rope")
    tr = run_with_trace(Transformer(cfg).eval(), [3, 8, 1, 9], tokens=list("abcd"))
    walk = att.query_walkthrough(tr, 0, 1, 3)
    np.testing.assert_allclose(walk.q, tr["rot_q", 0][3, 1], atol=1e-6)  # the trace's own numbers
    np.testing.assert_allclose(walk.k @ walk.q, walk.raw, atol=1e-5)


def test_worked_example_matches_the_source():
    ex = att.worked_example()
    assert ex.scaled.tolist() == [14.0, 12.0]
    assert ex.weights.round(2).tolist() == [0.88, 0.12]
    # softmax(14, 12) = 1 / (1 + e^-2)
    assert ex.weights[0] == pytest.approx(1 / (1 + math.exp(-2)))


def test_softmax_matches_torch_and_handles_minus_infinity():
    x = np.array([[1.0, 3.0, -np.inf], [0.5, -2.0, 4.0]])
    ref = torch.softmax(torch.tensor(x) / 0.7, dim=-1).numpy()
    np.testing.assert_allclose(att.softmax(x, temperature=0.7), ref, atol=1e-12)
    assert att.softmax([-np.inf, -np.inf]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_matrix_form_rebuilds_q_k_v_from_x_and_the_weights(norm):
    cfg = ModelConfig(d_model=32, n_heads=4, n_layers=2, vocab_size=60, norm=norm, final_norm=norm == "pre")
    model = Transformer(cfg).eval()
    with torch.no_grad():  # make γ, β non-trivial so the pre-LN input really needs them
        for block in model.blocks:
            block.ln1.weight.uniform_(0.5, 1.5)
            block.ln1.bias.uniform_(-0.2, 0.2)
    tr = run_with_trace(model, [4, 9, 12, 7, 30, 2])
    mf = atm.matrix_form(tr, export_weights(model), 1, 2)
    assert mf.max_error < 1e-4
    np.testing.assert_allclose(mf.S, tr["scores_raw", 1][2], atol=1e-4)
    np.testing.assert_allclose(mf.Z, tr["z", 1][:, 2], atol=1e-5)
    assert mf.X.shape == (6, 32) and mf.Q.shape == (6, 8)
    shapes = mf.shapes(32, 8)
    assert shapes[0] == ("Q = X W^Q", "n×d · d×d_k = n×d_k", "6×32 · 32×8 = 6×8")
    assert shapes[3][2] == "6×8 · 8×6 = 6×6"


def test_pre_ln_input_needs_the_weights():
    cfg = ModelConfig(d_model=16, n_heads=2, n_layers=1, vocab_size=30, norm="pre")
    tr = run_with_trace(Transformer(cfg).eval(), [1, 2, 3])
    with pytest.raises(ValueError):
        atm.attention_input(tr, 0)


def test_strongest_keys():
    cfg = ModelConfig(d_model=16, n_heads=2, n_layers=1, vocab_size=30)
    tr = run_with_trace(Transformer(cfg).eval(), [5, 6, 7, 8], tokens=list("abcd"))
    walk = att.query_walkthrough(tr, 0, 0, 1)
    assert att.strongest_keys(np.array([0.1, 0.5, 0.05, 0.35]), k=2) == [1, 3]
    assert att.strongest_keys(walk.weights, k=10) == [0, 1, 2, 3]


def test_one_layer_of_every_query_and_matrix_form_is_that_layers_slice(bundles):
    """A deep model's page asks for its chosen layer only (``layers=``): the numbers are the
    whole stack's for that layer, in the order asked; the whole stack's are checked above
    against numpy's attention and the model's own hooks."""
    import dataclasses

    b = bundles["gpt-tiny"]
    trace = b.trace("the animal didn't cross the street because it was too tired")
    whole = att.all_queries(trace)
    part = att.all_queries(trace, (2, 0))
    for f in dataclasses.fields(whole):
        a, p = getattr(whole, f.name), getattr(part, f.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(p, a[[2, 0]])
        else:
            assert p == a
    forms, error = atm.matrix_forms(trace, b.weights())
    one, one_error = atm.matrix_forms(trace, b.weights(), (1,))
    assert set(one) == set(forms) and one_error <= error
    for name in forms:
        np.testing.assert_array_equal(one[name], forms[name][1:2])
