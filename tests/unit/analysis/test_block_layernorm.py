"""Lesson 9 analysis: LayerNorm statistics and the residual stream, against torch's own LayerNorm."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis import layernorm as lna
from tfviz.config import preset
from tfviz.experiments.wiring import wiring_variants
from tfviz.model import Transformer
from tfviz.trace import run_with_trace
from tfviz.weights import export_weights

TEXT = "the cat sat on the mat."
IDS = list(range(10, 22))


@pytest.fixture(scope="module")
def gpt():
    b = tfviz.load("gpt-tiny")
    return b, b.trace(TEXT)


def _torch_ln(x, ln_module, eps):
    return F.layer_norm(torch.as_tensor(x), (x.shape[-1],), ln_module.weight.detach(),
                        ln_module.bias.detach(), eps).numpy()


def test_normalize_golden_and_against_torch():
    mean, sigma, normed = lna.normalize(np.array([[1.0, 2.0, 3.0, 4.0]]), eps=0.0)
    assert mean[0] == 2.5 and sigma[0] == pytest.approx(np.sqrt(1.25))
    np.testing.assert_allclose(normed[0], [-1.3416408, -0.4472136, 0.4472136, 1.3416408], atol=1e-6)
    x = np.random.default_rng(0).normal(size=(5, 16)) * 3 + 1
    _, _, normed = lna.normalize(x, eps=1e-5)
    np.testing.assert_allclose(normed, F.layer_norm(torch.tensor(x), (16,), eps=1e-5).numpy(), atol=1e-10)


def test_post_ln_input_goes_through_torch_layernorm_to_the_stream(gpt):
    b, tr = gpt
    for layer in range(b.config.n_layers):
        block = b.model.blocks[layer]
        x1 = lna.ln_input(tr, layer, "ln1")
        np.testing.assert_allclose(x1, tr[f"blocks.{layer}.hook_resid_pre"] + tr[f"blocks.{layer}.hook_attn_out"])
        np.testing.assert_allclose(_torch_ln(x1, block.ln1, 1e-5), tr[f"blocks.{layer}.hook_resid_mid"], atol=1e-5)
        x2 = lna.ln_input(tr, layer, "ln2")
        np.testing.assert_allclose(_torch_ln(x2, block.ln2, 1e-5), tr[f"blocks.{layer}.hook_resid_post"], atol=1e-5)


def test_encoder_decoder_norms_include_cross_and_ln2_follows_it():
    b = tfviz.load("reverse-encdec")
    tr = b.trace("abcde")
    assert lna.norms_of(tr, 0) == ["ln1", "ln_cross", "ln2"]
    block = b.model.blocks[1]
    x = lna.ln_input(tr, 1, "ln2")
    np.testing.assert_allclose(x, tr["blocks.1.hook_resid_mid_cross"] + tr["blocks.1.hook_mlp_out"])
    np.testing.assert_allclose(_torch_ln(x, block.ln2, 1e-5), tr["blocks.1.hook_resid_post"], atol=1e-5)
    xc = lna.ln_input(tr, 1, "ln_cross")
    np.testing.assert_allclose(_torch_ln(xc, block.ln_cross, 1e-5), tr["blocks.1.hook_resid_mid_cross"], atol=1e-5)


def test_pre_ln_input_is_the_stream_itself():
    cfg = preset("gpt-tiny").replace(norm="pre", final_norm=True, vocab_size=64)
    model = Transformer(cfg).eval()
    tr = run_with_trace(model, IDS)
    np.testing.assert_array_equal(lna.ln_input(tr, 1, "ln1"), tr["blocks.1.hook_resid_pre"])
    np.testing.assert_array_equal(lna.ln_input(tr, 1, "ln2"), tr["blocks.1.hook_resid_mid"])
    # the model's float32 mean (values up to ~3) against float64: a float32 tolerance
    np.testing.assert_allclose(tr["blocks.1.ln2.hook_mean"],
                               tr["blocks.1.hook_resid_mid"].astype(np.float64).mean(-1), atol=1e-5)
    params = lna.gamma_beta(export_weights(model))
    every = lna.every_norm(tr, params)
    j = every.norms.index("ln2")
    ref = _torch_ln(tr["blocks.1.hook_resid_mid"], model.blocks[1].ln2, cfg.ln_eps)[3]
    # float64 by hand against torch's float32 LayerNorm: a float32 tolerance
    np.testing.assert_allclose(every.vectors[1, j, 3, 2], ref, atol=1e-5)
    np.testing.assert_allclose(every.vectors[1, j, 3, 2],
                               lna.ln_output(tr, 1, "ln2", *params["L1 ln2"])[3], atol=1e-5)


def test_token_stats_before_and_after(gpt):
    b, tr = gpt
    s = lna.token_stats(tr, 1, "ln2")
    x = lna.ln_input(tr, 1, "ln2")
    np.testing.assert_allclose(s.mean_before, x.mean(-1), atol=1e-5)
    np.testing.assert_allclose(s.std_before, np.sqrt(x.var(-1) + 1e-5), atol=1e-5)
    np.testing.assert_allclose(s.mean_after, 0.0, atol=1e-5)
    np.testing.assert_allclose(s.std_after, 1.0, atol=1e-3)
    rows = lna.stats_table(tr)
    assert [(r["layer"], r["norm"]) for r in rows] == [(i, n) for i in range(3) for n in ("ln1", "ln2")]
    assert rows[3]["mean μ before"] == pytest.approx(float(s.mean_before.mean()), abs=1e-4)


def test_one_tokens_steps_match_model_and_hand(gpt):
    b, tr = gpt
    every = lna.every_norm(tr, lna.gamma_beta(b.weights()))
    j = every.norms.index("ln1")
    # the same float32 sum the norm reads, then float64 on both sides (as every_norm does)
    x = (tr["blocks.0.hook_resid_pre"][4] + tr["blocks.0.hook_attn_out"][4]).astype(np.float64)
    assert every.mean[0, j, 4] == pytest.approx(float(np.mean(x)), abs=1e-6)
    assert every.sigma[0, j, 4] == pytest.approx(float(np.sqrt(np.var(x) + 1e-5)), abs=1e-6)
    steps = every.steps[0, j, 4]  # (k, 7): the first k dimensions, one column a step
    k = steps.shape[0]
    assert every.columns == ("x", "x − μ", "(x − μ)/σ", "γ", "β", "by hand", "model") and k >= 4
    np.testing.assert_allclose(steps[:, 1], x[:k] - np.mean(x), atol=1e-6)
    # post-LN: the model's own output is the stream after the add
    np.testing.assert_allclose(steps[:, 6], tr["blocks.0.hook_resid_mid"][4][:k])
    assert np.abs(steps[:, 5] - steps[:, 6]).max() < 1e-5  # by hand (float64) against float32


def test_gamma_beta_are_copies_of_the_parameters(gpt):
    b, _ = gpt
    params = lna.gamma_beta(b.weights())
    assert list(params) == [f"L{i} {n}" for i in range(3) for n in ("ln1", "ln2")]
    g, be = params["L2 ln2"]
    np.testing.assert_array_equal(g, b.model.blocks[2].ln2.weight.detach().numpy())
    g[:] = 123.0  # editing the copy must not reach the shared model
    assert float(b.model.blocks[2].ln2.weight.detach()[0]) != 123.0


def test_residual_norms_values_and_post_ln_size(gpt):
    b, tr = gpt
    stages = lna.residual_norms(tr)
    assert [s for s, _ in stages] == ["embed", "L0 attn", "L0 ffn", "L1 attn", "L1 ffn", "L2 attn", "L2 ffn"]
    assert stages[0][1] == pytest.approx(float(np.linalg.norm(tr["blocks.0.hook_resid_pre"], axis=-1).mean()))
    assert stages[4][1] == pytest.approx(float(np.linalg.norm(tr["blocks.1.hook_resid_post"], axis=-1).mean()))
    if not b.trained:  # gamma = 1, beta = 0: a normalised vector has length sqrt(d)
        for _, size in stages[1:]:
            assert size == pytest.approx(np.sqrt(64), rel=1e-4)


def test_wiring_variants_are_fresh_and_leave_the_bundle_alone():
    b = tfviz.load("moe-tiny")
    before = {k: v.clone() for k, v in b.model.state_dict().items()}
    variants = wiring_variants(b)
    assert set(variants) == {"fresh post-LN", "fresh pre-LN"}
    pre, post = variants["fresh pre-LN"], variants["fresh post-LN"]
    assert pre.config.norm == "pre" and pre.config.final_norm and post.config.norm == "post"
    assert pre.model is not b.model and b.config.norm == "post"
    torch.testing.assert_close(pre.model.blocks[0].attn.W_q.weight, post.model.blocks[0].attn.W_q.weight)
    for k, v in b.model.state_dict().items():
        torch.testing.assert_close(v, before[k])
    tr = pre.trace(TEXT)
    stages = lna.residual_norms(tr)
    assert len(stages) == 1 + 2 * b.config.n_layers
    assert stages[1][1] != pytest.approx(np.sqrt(64), rel=1e-3)  # pre-LN does not renormalise the stream
