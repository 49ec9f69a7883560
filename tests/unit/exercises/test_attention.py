"""Attention solvers and the attention exercises: hand-worked goldens and torch parity."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tfviz.exercises.attention import select, solve_attention, solve_multihead
from tfviz.exercises.registry import make_instance
from tfviz.reference import causal_mask, softmax

FLYING = np.array([[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]], dtype=float)


def test_flying_arrows_by_hand():
    # q1 = [0,1]; k1 = [1,1], k2 = [0,-1]; v1 = [1,0], v2 = [-1,1]
    # q1·k1 = 0·1 + 1·1 = 1;  q1·k2 = 0·0 + 1·(-1) = -1
    # ÷√2: 0.70711, -0.70711
    # softmax: 1 / (1 + e^(-1.41421)) = 1 / (1 + 0.24312) = 0.80443, and 0.19557
    # output: 0.80443·[1,0] + 0.19557·[-1,1] = [0.60886, 0.19557]
    # (the issue text guessed [0.609, -0.196]; the second entry is +0.196: v2's 1 times 0.1956)
    r = solve_attention(FLYING, select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5]))
    assert r.q[0].tolist() == [0, 1] and r.k.tolist() == [[1, 1], [0, -1]]
    assert r.v.tolist() == [[1, 0], [-1, 1]]
    assert r.scores[0].tolist() == [1, -1]
    assert r.scaled[0] == pytest.approx([0.70711, -0.70711], abs=1e-5)
    assert r.weights[0] == pytest.approx([0.80443, 0.19557], abs=1e-5)
    assert r.output[0] == pytest.approx([0.60886, 0.19557], abs=1e-5)
    inst = make_instance("flying-arrows")
    assert inst.check("output", "[0.61, 0.20]").correct
    assert inst.check("output", "0.609 0.196").correct
    assert not inst.check("output", "0.609 -0.196").correct
    assert inst.arrows.tokens == ("flying", "arrows") and inst.arrows.focus == 0
    assert inst.arrows.weights.shape == (1, 2, 2)
    # the words and the asked one are typed fields; data holds only what the exercise gives
    assert inst.tokens == ("flying", "arrows") and inst.focus == 0
    assert set(inst.data) == {"X", "W_q", "W_k", "W_v"}


def test_how_are_you_by_hand():
    # how = [-1,-1, 1,1], are = [1,1, -1,-1], you = [-1,2, 1,-2]
    # query = dims 1,3; key = dims 2,4:  q_are = [1,-1]; k_how = [-1,1], k_are = [1,-1]
    # scores: 1·(-1) + (-1)·1 = -2 and 1·1 + (-1)(-1) = 2; "you" is masked
    # ÷√2: -1.41421, 1.41421 -> weights 1/(1+e^2.82843) = 1/17.91912 = 0.05581 and 0.94419
    # head 1 (in-vectors):  0.05581·[-1,-1] + 0.94419·[1,1] = [0.88839, 0.88839]
    # head 2 (out-vectors): 0.05581·[1,1] + 0.94419·[-1,-1] = [-0.88839, -0.88839]
    inst = make_instance("how-are-you")
    assert inst.field("weights").expected == pytest.approx([0.05581, 0.94419, 0], abs=1e-5)
    assert inst.field("concat").expected == pytest.approx([0.88839, 0.88839, -0.88839, -0.88839],
                                                          abs=1e-5)
    assert inst.check("concat", "0.89, 0.89, -0.89, -0.89").correct
    assert inst.arrows.weights.shape == (2, 3, 3)
    assert inst.tokens == ("how", "are", "you") and inst.focus == 1


def test_thinking_machines_by_hand():
    # 112/8 = 14, 96/8 = 12; softmax: 1/(1+e^-2) = 0.88080, 0.11920
    # z = 0.8808·[1,0,2] + 0.1192·[3,2,-1] = [1.23840, 0.23840, 1.64240]
    inst = make_instance("thinking-machines")
    assert inst.field("scaled").expected.tolist() == [14, 12]
    assert inst.field("weights").expected == pytest.approx([0.88080, 0.11920], abs=1e-5)
    assert inst.field("output").expected == pytest.approx([1.2384, 0.2384, 1.6424], abs=1e-4)
    assert inst.check("weights", "0.88 0.12").correct


def test_causal_mask_by_hand():
    # row 2 ("cat"): softmax(1, 3) = (1/(1+e^2), e^2/(1+e^2)) = (0.11920, 0.88080)
    # row 3 ("sat"): e^0, e^2, e^1 = 1, 7.38906, 2.71828; sum 11.10734 -> 0.09003 0.66524 0.24473
    inst = make_instance("causal-mask")
    masked = inst.field("masked").expected
    assert np.isneginf(masked[np.triu_indices(3, 1)]).all()
    w = inst.field("weights").expected
    assert w.tolist()[0] == [1, 0, 0]
    assert w[1] == pytest.approx([0.11920, 0.88080, 0], abs=1e-5)
    assert w[2] == pytest.approx([0.09003, 0.66524, 0.24473], abs=1e-5)
    assert inst.check("masked", "2 -inf -inf; 1 3 −∞; 0 2 1").correct


matrices = st.integers(1, 4).flatmap(lambda n: st.tuples(
    arrays(np.float64, (n, 4), elements=st.floats(-3, 3)),
    arrays(np.float64, (4, 3), elements=st.floats(-2, 2)),
    arrays(np.float64, (4, 3), elements=st.floats(-2, 2)),
    arrays(np.float64, (4, 2), elements=st.floats(-2, 2))))


@settings(max_examples=60, deadline=None)
@given(matrices, st.booleans(), st.booleans())
def test_solver_matches_torch(mats, causal, scale):
    X, Wq, Wk, Wv = mats
    r = solve_attention(X, Wq, Wk, Wv, causal=causal, scale=scale)
    q, k, v = (torch.tensor(X @ W) for W in (Wq, Wk, Wv))
    s = q @ k.T / (math.sqrt(3) if scale else 1.0)
    if causal:
        s = s.masked_fill(~torch.tensor(causal_mask(len(X))), float("-inf"))
    w = torch.softmax(s, dim=-1)
    assert np.allclose(r.weights, w.numpy(), atol=1e-9)
    assert np.allclose(r.weights.sum(axis=1), 1.0)
    sdpa = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal,
                                          scale=None if scale else 1.0)[0]
    assert np.allclose(r.output, sdpa.numpy(), atol=1e-9)


def test_multihead_concat_order_and_projection():
    X = FLYING
    h1 = (select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5]))
    h2 = (select(6, [2, 3]), select(6, [0, 1]), select(6, [0, 1]))
    r = solve_multihead(X, [h1, h2], causal=True)
    assert r.concat.shape == (2, 4)
    assert np.allclose(r.concat[:, :2], r.heads[0].output)
    assert np.allclose(r.concat[:, 2:], r.heads[1].output)
    W_o = np.arange(8.0).reshape(4, 2)
    assert np.allclose(solve_multihead(X, [h1, h2], W_o, causal=True).output, r.concat @ W_o)
    with pytest.raises(ValueError):
        solve_multihead(X, [])


def test_softmax_of_fully_masked_row_is_zero():
    assert softmax(np.array([[-np.inf, -np.inf]])).tolist() == [[0.0, 0.0]]


def test_steps_cover_the_pipeline():
    titles = [s.title for s in make_instance("how-are-you").steps]
    assert any("Mask" in t for t in titles) and titles[-1] == "Concatenate"
    assert "Mask" not in " ".join(s.title for s in make_instance("flying-arrows").steps)
