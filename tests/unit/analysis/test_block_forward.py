"""Lesson 12 analysis: the forward walk as data, and the parameter count by part."""
import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import forward as fw
from tfviz.config import PRESET_NAMES, preset
from tfviz.params import count_parameters
from tfviz.model import Transformer

TEXT = "the cat sat."


@pytest.fixture(scope="module")
def gpt():
    b = tfviz.load("gpt-tiny")
    return b, b.trace(TEXT)


def test_softmax_matches_torch():
    x = np.random.default_rng(0).normal(size=(3, 7)) * 20
    np.testing.assert_allclose(fw.softmax(x), torch.softmax(torch.tensor(x), -1).numpy(), atol=1e-12)


def test_gpt_steps_in_order_with_the_traces_numbers(gpt):
    b, tr = gpt
    steps = fw.forward_steps(tr, head=2, token_strings=b.token_strings)
    titles = [s.title for s in steps]
    assert len(steps) == 3 + 4 * b.config.n_layers + 3
    assert titles[:4] == ["Tokens", "Token embeddings", "+ positions", "Block 0 · self-attention (head 2)"]
    T = len(tr.tokens)
    assert titles[-3:] == ["Logits", "Softmax", f"Top-5 prediction at {T - 1} {tr.tokens[-1]}"]
    # A step shows the trace's own array (no arithmetic), so it is compared bit for bit.
    np.testing.assert_array_equal(steps[0].values[0], tr.ids)
    assert steps[0].cols == tuple(f"{i} {t}" for i, t in enumerate(tr.tokens))
    np.testing.assert_array_equal(steps[1].values, tr["hook_embed"])
    # one float32 addition of the same two arrays: correctly rounded, the same on any CPU
    np.testing.assert_allclose(steps[2].values, tr["hook_embed"] + tr["hook_pos_embed"], atol=1e-6)
    np.testing.assert_array_equal(steps[3].values, tr["pattern", 0][2])
    np.testing.assert_array_equal(steps[4].values, tr["blocks.0.hook_resid_mid"])
    np.testing.assert_array_equal(steps[5].values, tr["blocks.0.mlp.hook_post"])
    np.testing.assert_array_equal(steps[6].values, tr["blocks.0.hook_resid_post"])
    assert steps[3].shape == f"(4 heads, T={T}, T={T})" and steps[1].shape == f"(T={T}, d=64)"
    for s in steps:
        assert s.values.ndim == 2 and s.formula and s.explanation
        assert s.values.shape[0] == max(1, len(s.rows)) and s.values.shape[1] == len(s.cols)


def test_output_steps_are_the_models_probabilities(gpt):
    b, tr = gpt
    steps = fw.forward_steps(tr, token_strings=b.token_strings, top=5)
    probs = torch.softmax(torch.tensor(tr.logits, dtype=torch.float64), -1)[-1]
    top_p, top_i = probs.topk(5)
    last = steps[-1]
    assert last.kind == "bars"
    np.testing.assert_allclose(last.values[0], top_p.numpy(), atol=1e-9)  # float64 both
    assert last.cols == tuple(b.token_strings(top_i.tolist()))
    logits = steps[-3]
    best = np.argsort(-tr.logits[-1])[:8]
    np.testing.assert_allclose(logits.values, tr.logits[:, best], atol=1e-6)  # the trace's own
    assert logits.cols[0] == f"{b.token_strings([best[0]])[0]} ({best[0]})"


@pytest.mark.parametrize("name,n_steps", [("moe-tiny", 3 + 4 * 2 + 3), ("bert-tiny", 3 + 4 * 2 + 3),
                                          ("reverse-encdec", 3 + 4 * 2 + 3 + 6 * 2 + 3)])
def test_every_model_walks(name, n_steps):
    b = tfviz.load(name)
    tr = b.trace("abcab")
    steps = fw.forward_steps(tr, head=1, token_strings=b.token_strings)
    assert len(steps) == n_steps
    titles = [s.title for s in steps]
    if name == "moe-tiny":
        i = titles.index("Block 1 · experts (MoE)")
        np.testing.assert_array_equal(steps[i].values, tr["blocks.1.mlp.hook_gate_probs"])
    if name == "reverse-encdec":
        assert titles[0] == "Source tokens" and "Target tokens" in titles
        i = titles.index("Decoder 0 · cross-attention (head 1)")
        np.testing.assert_array_equal(steps[i].values, tr["blocks.0.cross_attn.hook_pattern"][1])
        np.testing.assert_array_equal(steps[titles.index("Encoder 1 · add & norm (FFN)")].values,
                                      tr["enc_blocks.1.hook_resid_post"])
    if name == "bert-tiny":
        assert "[MASK]" in steps[-1].explanation
        assert "+ M" not in steps[3].formula  # bidirectional: no causal mask


def test_pre_ln_model_gets_a_final_norm_step():
    model = Transformer(preset("gpt-tiny").replace(norm="pre", final_norm=True, n_layers=1)).eval()
    from tfviz.trace import run_with_trace
    tr = run_with_trace(model, [5, 6, 7], tokens=["a", "b", "c"])
    steps = fw.forward_steps(tr)
    assert "Final LayerNorm" in [s.title for s in steps]
    assert r"\mathrm{LN}(x)" in steps[4].formula and r"x + \mathrm{SelfAttn}" in steps[4].formula


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_parameter_count_equals_the_model(name):
    b = tfviz.load(name)
    assert fw.param_total(b.config) == count_parameters(b.config).total
    assert fw.param_total(b.config) == sum(p.numel() for p in b.model.parameters())
    assert fw.model_param_count(b.weights()) == fw.param_total(b.config)
    groups = fw.grouped_params(b.config)
    assert sum(groups.values()) == fw.param_total(b.config)
    # Independent split by the model's own parameter names
    named = dict(b.model.named_parameters())
    def total(pred):
        return sum(p.numel() for n, p in named.items() if pred(n))
    assert groups["attention"] == total(lambda n: ".attn." in n or ".cross_attn." in n)
    assert groups["FFN / experts"] == total(lambda n: ".mlp." in n)
    assert groups["LayerNorm"] == total(lambda n: ".ln" in n)
    assert groups["embeddings"] == total(lambda n: n.startswith("embed."))
    assert groups["positions"] == 0 and groups["head"] == 0  # sinusoidal, tied


def test_grouped_params_for_untied_learned_positions():
    cfg = preset("gpt-tiny").replace(positional="learned", tie_embeddings=False)
    groups = fw.grouped_params(cfg)
    assert groups["positions"] == cfg.max_seq_len * cfg.d_model
    assert groups["head"] == cfg.d_model * cfg.vocab_size
    assert sum(groups.values()) == sum(p.numel() for p in Transformer(cfg).parameters())
