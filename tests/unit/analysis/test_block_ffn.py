"""Lesson 10 analysis: neuron activations, and attention outputs as convex mixes of values."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis import ffn as fa

TEXT = "the animal didn't cross the street"


@pytest.fixture(scope="module")
def gpt():
    b = tfviz.load("gpt-tiny")
    return b, b.trace(TEXT)


def test_activation_info_names_the_models_nonlinearity():
    assert fa.activation_info(tfviz.load("gpt-tiny").config)[0] == "ReLU"
    assert fa.activation_info(tfviz.load("bert-tiny").config)[0] == "GELU"


def test_neuron_acts_are_the_activation_of_the_pre_activations(gpt):
    _, tr = gpt
    np.testing.assert_allclose(fa.neuron_acts(tr, 1), np.maximum(tr["blocks.1.mlp.hook_pre"], 0))
    bert = tfviz.load("bert-tiny").trace(TEXT)
    ref = F.gelu(torch.as_tensor(bert["blocks.0.mlp.hook_pre"])).numpy()
    np.testing.assert_allclose(fa.neuron_acts(bert, 0), ref, atol=1e-6)  # torch's GELU, as the model's
    assert fa.has_dense_ffn(tr) and not fa.has_dense_ffn(tfviz.load("moe-tiny").trace(TEXT))


def test_neuron_helpers_golden():
    acts = np.array([[0.0, 5.0, 1.0, -0.5], [2.0, 0.0, 0.0, 3.0]])
    assert fa.top_neurons(acts, 3).tolist() == [1, 3, 0]
    np.testing.assert_allclose(fa.fraction_active(acts), [0.5, 0.5])
    assert fa.top_per_token(acts, 2) == [[(1, 5.0), (2, 1.0)], [(3, 3.0), (0, 2.0)]]
    rows = fa.top_table(["a", "b"], acts, 2)
    assert rows[0] == {"token": "0 a", "active": "50%", "strongest neurons": "n1 (5.00), n2 (1.00)"}


def test_top_neurons_on_the_model_are_the_largest_peaks(gpt):
    _, tr = gpt
    acts = fa.neuron_acts(tr, 0)
    top = fa.top_neurons(acts, 5)
    peaks = acts.max(0)
    assert sorted(peaks[top].tolist(), reverse=True) == peaks[top].tolist()
    assert peaks[top].min() >= np.sort(peaks)[-5]


def test_mixing_golden_and_a_mix_that_leaves_the_box():
    mix = fa.mixing(np.array([0.25, 0.75]), np.array([[0.0, 4.0], [4.0, 0.0]]))
    assert mix.z.tolist() == [3.0, 1.0] and mix.inside and mix.weight_sum == 1.0
    assert mix.low.tolist() == [0.0, 0.0] and mix.high.tolist() == [4.0, 4.0]
    # Negative weights (impossible after a softmax) can leave the range: the check notices.
    assert not fa.mixing(np.array([-1.0, 2.0]), np.array([[0.0, 4.0], [4.0, 0.0]])).inside


def test_attention_output_is_a_convex_mix_of_the_values(gpt):
    _, tr = gpt
    mix = fa.attention_mixing(tr, 1, 2, 5)
    pattern = tr["blocks.1.attn.hook_pattern"][2, 5]
    v = tr["blocks.1.attn.hook_v"][:, 2, :]
    np.testing.assert_allclose(mix.weights, pattern)
    np.testing.assert_allclose(mix.z, pattern.astype(np.float64) @ v, atol=1e-12)  # float64, as mixing
    np.testing.assert_allclose(mix.model_z, tr["blocks.1.attn.hook_z"][5, 2])
    assert mix.model_gap < 1e-5 and mix.inside and mix.min_weight >= 0
    assert mix.weight_sum == pytest.approx(1.0, abs=1e-5)  # a float32 softmax row
    # causal: the query at 5 only sees keys 0..5, so the range is over those values
    np.testing.assert_allclose(mix.low, v[:6].min(0))


@pytest.mark.parametrize("name", ["gpt-tiny", "bert-tiny", "reverse-encdec"])
def test_every_head_and_token_passes_the_convexity_check(name):
    tr = tfviz.load(name).trace(TEXT)
    check = fa.mixing_views(tr).summary()
    assert check["triples"] == tr.config.n_layers * tr.config.n_heads * len(tr.tokens)
    assert check["inside"] == check["triples"]
    assert check["min weight"] >= 0 and check["largest |sum − 1|"] < 1e-5  # float32 softmax rows
    layer, head, query = tr.config.n_layers - 1, 0, len(tr.tokens) - 1  # one mix, on its own
    assert fa.attention_mixing(tr, layer, head, query).inside
