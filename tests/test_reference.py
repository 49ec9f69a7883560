"""The numpy reference (tfviz.reference) against hand-worked goldens and torch's own functions.

torch is the independent implementation here: its softmax, layer_norm and
scaled_dot_product_attention, and the tfviz model's own masked scores. Both sides compute in
float64 (the reference always does; torch is handed float64), so the tolerances are float64's;
the hand-worked goldens are written to 7 decimals (atol 1e-7).
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig
from tfviz.model import Transformer
from tfviz.reference import attention, causal_mask, layer_norm, softmax
from tfviz.trace import run_with_trace


def test_softmax_goldens():
    # "Thinking Machines": 112/8 = 14 and 96/8 = 12; softmax = 1/(1 + e^-2), e^-2/(1 + e^-2)
    assert softmax([14.0, 12.0])[0] == pytest.approx(1 / (1 + math.exp(-2)), abs=1e-15)
    assert softmax([0.0, math.log(3.0)]).tolist() == pytest.approx([0.25, 0.75], abs=1e-15)
    assert softmax([[-np.inf, -np.inf]]).tolist() == [[0.0, 0.0]]  # sees nothing: zeros, not NaN
    assert softmax([1000.0, 0.0]).tolist() == [1.0, 0.0]  # no overflow


@pytest.mark.parametrize("axis, temperature", [(-1, 1.0), (0, 1.0), (-1, 0.3), (1, 4.0)])
def test_softmax_matches_torch(axis, temperature):
    x = np.random.default_rng(0).normal(size=(3, 5, 4)) * 5
    x[0, 1, 2] = -np.inf
    ref = torch.softmax(torch.tensor(x) / temperature, dim=axis).numpy()
    np.testing.assert_allclose(softmax(x, axis, temperature=temperature), ref, atol=1e-15)


def test_causal_mask_matches_torch_tril_and_the_models_own_mask():
    assert causal_mask(4).tolist() == torch.ones(4, 4).tril().bool().tolist()
    assert causal_mask(2, 5, q_offset=3).tolist() == [[True] * 4 + [False], [True] * 5]
    tr = run_with_trace(Transformer(ModelConfig(n_layers=1, vocab_size=20)).eval(), [3, 1, 4, 1, 5])
    hidden = np.isneginf(tr["attn_scores", 0])  # (heads, 5, 5): what the model set to -inf
    assert (hidden == ~causal_mask(5)[None]).all()


def test_layer_norm_golden_and_against_torch():
    s = layer_norm([[1.0, 2.0, 3.0, 4.0]], eps=0.0)
    assert s.mean.tolist() == [2.5] and s.sigma[0] == pytest.approx(math.sqrt(1.25))
    np.testing.assert_allclose(s.normalized, [[-1.3416408, -0.4472136, 0.4472136, 1.3416408]],
                               atol=1e-7)
    rng = np.random.default_rng(1)
    x, gamma, beta = rng.normal(size=(2, 6, 16)) * 3 + 1, rng.normal(size=16), rng.normal(size=16)
    ours = layer_norm(x, gamma, beta, eps=1e-5)
    ref = F.layer_norm(torch.tensor(x), (16,), torch.tensor(gamma), torch.tensor(beta), 1e-5)
    np.testing.assert_allclose(ours.output, ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.sigma, np.sqrt(x.var(-1) + 1e-5), atol=1e-12)
    plain = layer_norm(x)  # no γ, β: the output is the normalised vector itself
    np.testing.assert_array_equal(plain.output, plain.normalized)


def test_attention_flying_arrows_by_hand():
    # q1 = [0, 1]; k1 = [1, 1], k2 = [0, -1]: scores 1 and -1, ÷√2 -> ±0.70711,
    # softmax 1/(1 + e^-1.41421) = 0.80443; output 0.80443·[1, 0] + 0.19557·[-1, 1]
    s = attention([[0.0, 1.0]], [[1.0, 1.0], [0.0, -1.0]], [[1.0, 0.0], [-1.0, 1.0]])
    assert s.scores.tolist() == [[1.0, -1.0]]
    np.testing.assert_allclose(s.scaled, [[1 / math.sqrt(2), -1 / math.sqrt(2)]], atol=1e-15)
    np.testing.assert_allclose(s.weights, [[0.8044297, 0.1955703]], atol=1e-7)
    np.testing.assert_allclose(s.output, [[0.6088594, 0.1955703]], atol=1e-7)
    np.testing.assert_array_equal(s.masked, s.scaled)  # no mask: nothing hidden


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [False, True])
def test_attention_matches_torch_sdpa_with_heads_as_leading_axes(causal, scale):
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(2, 3, 6, 4)) for _ in range(3))  # (batch, heads, n, d)
    s = attention(q, k, v, causal_mask(6) if causal else None, scale)
    ref = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=causal,
                                         scale=None if scale else 1.0)
    np.testing.assert_allclose(s.output, ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(s.weights.sum(-1), 1.0, atol=1e-12)
    if causal:
        assert np.isneginf(s.masked[..., 0, 1:]).all() and (s.weights[..., 0, 1:] == 0).all()


def test_attention_temperature_bias_and_a_query_that_sees_nothing():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    bias = -np.abs(np.arange(3)[:, None] - np.arange(5)[None, :])  # an ALiBi-like penalty
    mask = np.ones((3, 5), bool)
    mask[1] = False  # query 1 may see no key
    s = attention(q, k, v, mask, temperature=0.5, bias=bias)
    np.testing.assert_allclose(s.scaled, q @ k.T / 2.0 + bias, atol=1e-15)
    expected = torch.softmax(torch.tensor(s.scaled[[0, 2]]) / 0.5, dim=-1).numpy()
    np.testing.assert_allclose(s.weights[[0, 2]], expected, atol=1e-15)
    assert (s.weights[1] == 0).all() and (s.output[1] == 0).all()
    with pytest.raises(ValueError, match="same size"):
        attention(q, k[:, :3], v)
