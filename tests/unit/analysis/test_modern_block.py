"""Lessons 5, 9, 10, 12 and 14's numbers on the modern block (llama-tiny: RMSNorm before each
sublayer and after the last block, SwiGLU, RoPE in halves, 4 query heads over 2 K/V heads, no
biases, its own unembedding), each against an independent reference: torch's own functions
(F.rms_norm, F.layer_norm, F.silu) and a forward pass written here in torch from the model's
parameters, which shares no code with tfviz's model.

The model computes in float32; the lessons' hand calculations are float64, and the forward
written here is float64 too, so the two are compared with a float32 tolerance on values of
size ~1-10 (a few ulps of the values' size, summed over three blocks).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis import attention_matrix as atm
from tfviz.analysis import decoding as dec
from tfviz.analysis import ffn as fa
from tfviz.analysis import forward as fw
from tfviz.analysis import layernorm as lna

TEXT = "The animal didn't cross the street because it was too tired."
F32 = dict(rtol=1e-5, atol=2e-5)  # float32 model against float64 by hand


@pytest.fixture(scope="module")
def llama():
    bundle = tfviz.load("llama-tiny")
    return bundle, bundle.trace(TEXT)


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


def _params(bundle) -> dict[str, torch.Tensor]:
    """The model's own parameters (not tfviz.weights' export), in float64."""
    return {k: v.detach().double() for k, v in bundle.model.state_dict().items()}


# ----- lessons 5 and 14: what crashed on an RMSNorm (no β) ------------------------------------

def test_attention_input_and_the_lm_head_of_an_rmsnorm_model(llama):
    bundle, tr = llama
    p, eps = _params(bundle), bundle.config.ln_eps
    x = _t(tr["blocks.1.hook_resid_pre"])
    want = F.rms_norm(x, (x.shape[-1],), p["blocks.1.ln1.weight"], eps).numpy()
    np.testing.assert_allclose(atm.attention_input(tr, 1, bundle.weights()), want, **F32)
    forms, error = atm.matrix_forms(tr, bundle.weights())
    assert forms["Q"].shape == (3, 4, len(tr.tokens), 16) and error < 1e-4  # Q, K, V before RoPE
    reading = dec.lm_head(tr, bundle.weights(), bundle.token_strings)
    assert reading.hidden_name == "ln_final (with γ)" and not reading.tied
    last = _t(tr["blocks.2.hook_resid_post"])
    logits = F.rms_norm(last, (64,), p["ln_final.weight"], eps) @ p["unembed.weight"].T
    np.testing.assert_allclose(reading.recomputed, logits.numpy(), **F32)
    assert reading.gap < 1e-4


# ----- lesson 9: RMSNorm by hand, and next to LayerNorm ---------------------------------------

def test_every_rmsnorm_is_torchs_rms_norm(llama):
    bundle, tr = llama
    p, eps, d = _params(bundle), bundle.config.ln_eps, bundle.config.d_model
    every = lna.every_norm(tr, lna.gamma_beta(bundle.weights()))
    assert every.kind == "rmsnorm" and every.norms == ("ln1", "ln2")
    assert every.columns == lna.RMS_STEP_COLUMNS and every.steps.shape[-1] == 6
    assert all(beta is None for _, beta in lna.gamma_beta(bundle.weights()).values())
    for layer in range(3):
        for j, (norm, hook) in enumerate((("ln1", "hook_resid_pre"), ("ln2", "hook_resid_mid"))):
            x = _t(tr[f"blocks.{layer}.{hook}"])  # pre-norm: the stream itself goes in
            gamma = p[f"blocks.{layer}.{norm}.weight"]
            rms = torch.sqrt((x * x).mean(-1) + eps)
            np.testing.assert_allclose(every.sigma[layer, j], rms.numpy(), rtol=1e-12)
            np.testing.assert_allclose(every.trace_sigma[layer, j], tr[f"blocks.{layer}.{norm}.hook_scale"])
            np.testing.assert_allclose(every.sigma[layer, j], every.trace_sigma[layer, j], rtol=1e-5)
            np.testing.assert_allclose(every.mean[layer, j], x.mean(-1).numpy(), rtol=1e-12)
            x_, normed, output = every.vectors[layer, j].transpose(1, 0, 2)  # (T, d) each
            np.testing.assert_allclose(normed, F.rms_norm(x, (d,), eps=eps).numpy(), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(output, F.rms_norm(x, (d,), gamma, eps).numpy(), rtol=1e-10, atol=1e-12)
            # the step table: x, x², x / rms, γ, by hand, the model's own (its output rebuilt
            # from hook_normalized · γ)
            k = every.steps.shape[3]
            steps = every.steps[layer, j]  # (T, k, 6)
            np.testing.assert_allclose(steps[..., 1], (x[:, :k] ** 2).numpy(), rtol=1e-12)
            np.testing.assert_allclose(steps[..., 3], np.broadcast_to(gamma[:k].numpy(), steps[..., 3].shape))
            np.testing.assert_allclose(steps[..., 5], steps[..., 4], **F32)
            # statistics: rms 1 after the norm, but the mean is not taken away
            mu_before, rms_before, mu_after, rms_after = every.stats[layer, j]
            np.testing.assert_allclose(rms_after, 1.0, atol=1e-3)  # ε keeps it a hair under 1
            np.testing.assert_allclose(mu_after, (x.mean(-1) / rms).numpy(), atol=1e-6)
    assert every.max_error < 1e-4
    table = lna.stats_table(tr)
    assert list(table[0]) == ["layer", "norm", "mean μ before", "rms before", "mean after", "rms after"]


@pytest.mark.parametrize("model", ["llama-tiny", "gpt-tiny"])
def test_the_same_token_through_both_norms(model):
    """Lesson 9's side-by-side: LayerNorm's (x − μ)/σ is torch's layer_norm, RMSNorm's x / rms
    torch's rms_norm, on the norm's real input; rms² = σ² + μ²; and the model's own hook_scale
    is the scale of the norm it uses (σ for gpt-tiny's LayerNorm, rms for llama-tiny's)."""
    bundle = tfviz.load(model)
    tr, eps, d = bundle.trace(TEXT), bundle.config.ln_eps, bundle.config.d_model
    pair = lna.every_pair(tr, k=16)
    assert pair.numbers.shape == (3, 2, len(tr.tokens), 4) and pair.vectors.shape == (3, 2, len(tr.tokens), 3, 16)
    for layer in range(3):
        for j, norm in enumerate(pair.norms):
            x = _t(lna.ln_input(tr, layer, norm))
            mu, sigma, rms, scale = pair.numbers[layer, j].T
            np.testing.assert_allclose(mu, x.mean(-1).numpy(), rtol=1e-12)
            np.testing.assert_allclose(sigma, torch.sqrt(x.var(-1, unbiased=False) + eps).numpy(), rtol=1e-12)
            np.testing.assert_allclose(rms, torch.sqrt((x * x).mean(-1) + eps).numpy(), rtol=1e-12)
            np.testing.assert_allclose(rms ** 2, sigma ** 2 + mu ** 2, rtol=1e-12)
            own = rms if model == "llama-tiny" else sigma
            np.testing.assert_allclose(scale, own, rtol=1e-5)
            x16, ln, rn = pair.vectors[layer, j].transpose(1, 0, 2)
            np.testing.assert_allclose(ln, F.layer_norm(x, (d,), eps=eps).numpy()[:, :16], atol=1e-10)
            np.testing.assert_allclose(rn, F.rms_norm(x, (d,), eps=eps).numpy()[:, :16], atol=1e-10)
    assert pair.own_error < 1e-4 and pair.identity_gap < 1e-10


def test_norm_pair_worked_by_hand():
    """x = (1, 2, 3, 4), ε = 0: μ = 2.5, σ = √1.25, rms = √7.5, and 7.5 = 1.25 + 6.25."""
    p = lna.norm_pair(np.array([[1.0, 2.0, 3.0, 4.0]]), eps=0.0)
    assert (p.mean[0], p.sigma[0] ** 2, p.rms[0] ** 2) == pytest.approx((2.5, 1.25, 7.5))
    np.testing.assert_allclose(p.rms_normed[0], np.array([1, 2, 3, 4]) / np.sqrt(7.5))
    np.testing.assert_allclose(p.layer_normed[0], (np.array([1, 2, 3, 4]) - 2.5) / np.sqrt(1.25))


# ----- lesson 10: SwiGLU's gate, up and product, neuron by neuron ----------------------------

def test_swiglu_neuron_steps_are_torchs(llama):
    """Each shown neuron's gate and up value are the model's hooks (mlp.hook_pre,
    mlp.hook_pre_linear), SiLU(gate) is torch's F.silu, the product is mlp.hook_post, and the
    way down (all d_ff products times W_out) is the block's hook_mlp_out."""
    bundle, tr = llama
    p = _params(bundle)
    steps = fa.neuron_steps(tr, bundle.weights(), m=12, k=16)
    assert steps.columns == ("gate = x·W_gate", "SiLU(gate)", "up = x·W_in", "SiLU(gate) × up")
    assert steps.values.shape == (3, len(tr.tokens), 12, 4) and steps.d_ff == 176
    for layer in range(3):
        gate = _t(tr[f"blocks.{layer}.mlp.hook_pre"])  # (T, d_ff)
        up = _t(tr[f"blocks.{layer}.mlp.hook_pre_linear"])
        post = tr[f"blocks.{layer}.mlp.hook_post"]
        # the hooks are the model's x W_gate and x W_in, from its input, RMSNorm'd
        x = F.rms_norm(_t(tr[f"blocks.{layer}.hook_resid_mid"]), (64,), p[f"blocks.{layer}.ln2.weight"],
                       bundle.config.ln_eps)
        np.testing.assert_allclose(gate.numpy(), (x @ p[f"blocks.{layer}.mlp.W_gate.weight"].T).numpy(), **F32)
        np.testing.assert_allclose(up.numpy(), (x @ p[f"blocks.{layer}.mlp.W_in.weight"].T).numpy(), **F32)
        for t in range(len(tr.tokens)):
            ids = steps.ids[layer, t]
            assert list(ids) == list(np.argsort(-np.abs(post[t]), kind="stable")[:12])
            g, act, u, h = steps.values[layer, t].T
            np.testing.assert_array_equal(g, gate[t, ids].numpy())
            np.testing.assert_allclose(act, F.silu(gate[t, ids]).numpy(), rtol=1e-12, atol=1e-15)
            np.testing.assert_array_equal(u, up[t, ids].numpy())
            np.testing.assert_allclose(h, post[t, ids], **F32)
        down = _t(post) @ p[f"blocks.{layer}.mlp.W_out.weight"].T  # (T, d)
        np.testing.assert_allclose(steps.output[layer], down.numpy()[:, :16], rtol=1e-12)
        np.testing.assert_allclose(steps.model_output[layer], tr[f"blocks.{layer}.hook_mlp_out"][:, :16])
    np.testing.assert_allclose(steps.share, np.clip(steps.share, 0, 1))
    assert steps.hidden_error < 1e-4 and steps.output_error < 1e-4


@pytest.mark.parametrize("model, act", [("gpt-tiny", torch.relu), ("bert-tiny", F.gelu)])
def test_plain_neuron_steps_are_torchs(model, act):
    bundle = tfviz.load(model)
    tr = bundle.trace(TEXT)
    steps = fa.neuron_steps(tr, bundle.weights(), m=5)
    assert len(steps.columns) == 2 and steps.values.shape[-1] == 2
    pre = _t(tr["blocks.1.mlp.hook_pre"])
    for t in range(len(tr.tokens)):
        ids = steps.ids[1, t]
        np.testing.assert_allclose(steps.values[1, t, :, 1], act(pre[t, ids]).numpy(), rtol=1e-12, atol=1e-15)
    assert steps.hidden_error < 1e-5 and steps.output_error < 1e-4


def test_step_values_worked_by_hand():
    """gate 0 passes nothing, however large its up value; gate 2 passes 2σ(2) = 1.7616 of it."""
    v = fa.step_values("swiglu", np.array([[0.0, 2.0, -3.0]]), np.array([[5.0, 3.0, 4.0]]))[0]
    assert v[0].tolist() == [0.0, 0.0, 5.0, 0.0]
    assert v[1] == pytest.approx([2.0, 1.761594, 3.0, 5.284782], abs=1e-6)
    assert v[2, 3] == pytest.approx(-3 / (1 + np.exp(3)) * 4, abs=1e-12)  # a closed gate, negative
    assert fa.step_values("relu", np.array([[-1.0, 2.0]])).tolist() == [[[-1.0, 0.0], [2.0, 2.0]]]


def test_activation_curves_are_torchs():
    c = fa.activation_curves()
    u = _t(c["u"])
    np.testing.assert_allclose(c["SiLU"], F.silu(u).numpy(), atol=1e-15)
    np.testing.assert_allclose(c["GELU"], F.gelu(u).numpy(), atol=1e-15)
    np.testing.assert_allclose(c["ReLU"], torch.relu(u).numpy())
    assert fa.curve_name("swiglu") == "SiLU" and fa.curve_name("gelu_tanh") == "GELU"


# ----- lesson 12: the forward walk of the modern block ----------------------------------------

def _rope(x: torch.Tensor, base: float) -> torch.Tensor:
    """Llama's rotate_half RoPE, written out: x (T, H, dh); position t turns the pair
    (x_i, x_{i + dh/2}) by t · base^(−2i/dh)."""
    T, _, dh = x.shape
    inv = base ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)  # (dh/2,)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * inv[None]  # (T, dh/2)
    cos, sin = torch.cat([angle.cos()] * 2, -1)[:, None], torch.cat([angle.sin()] * 2, -1)[:, None]
    half = torch.cat([-x[..., dh // 2:], x[..., :dh // 2]], -1)
    return x * cos + half * sin


def _forward(bundle, ids: list[int]) -> dict[str, torch.Tensor]:
    """llama-tiny's forward pass in float64, from its parameters: every stage the walk shows."""
    p, cfg = _params(bundle), bundle.config
    H, Hkv, dh, d, eps = cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.d_model, cfg.ln_eps
    T = len(ids)
    x = p["embed.weight"][ids]  # (T, d)
    out = {"embed": x}
    hidden = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for i in range(cfg.n_layers):
        b = f"blocks.{i}."
        h = F.rms_norm(x, (d,), p[b + "ln1.weight"], eps)
        out[f"{i} ln1"] = F.rms_norm(x, (d,), eps=eps)
        q = _rope((h @ p[b + "attn.W_q.weight"].T).view(T, H, dh), cfg.pos_base)
        k = _rope((h @ p[b + "attn.W_k.weight"].T).view(T, Hkv, dh), cfg.pos_base)
        v = (h @ p[b + "attn.W_v.weight"].T).view(T, Hkv, dh)
        k, v = k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1)  # GQA
        scores = torch.einsum("qhd,khd->hqk", q, k) / dh ** 0.5
        pattern = torch.softmax(scores.masked_fill(hidden, float("-inf")), -1)  # (H, T, T)
        z = torch.einsum("hqk,khd->qhd", pattern, v).reshape(T, H * dh)
        x = x + z @ p[b + "attn.W_o.weight"].T
        out.update({f"{i} rot_q": q, f"{i} pattern": pattern, f"{i} mid": x})
        out[f"{i} ln2"] = F.rms_norm(x, (d,), eps=eps)
        h = F.rms_norm(x, (d,), p[b + "ln2.weight"], eps)
        product = F.silu(h @ p[b + "mlp.W_gate.weight"].T) * (h @ p[b + "mlp.W_in.weight"].T)
        x = x + product @ p[b + "mlp.W_out.weight"].T
        out.update({f"{i} product": product, f"{i} post": x})
    out["final"] = F.rms_norm(x, (d,), eps=eps)
    out["logits"] = F.rms_norm(x, (d,), p["ln_final.weight"], eps) @ p["unembed.weight"].T
    return out


def test_the_modern_walk_is_an_independent_forward_pass(llama):
    bundle, tr = llama
    ref = _forward(bundle, tr.ids)
    np.testing.assert_allclose(tr.logits, ref["logits"].numpy(), rtol=1e-4, atol=1e-4)
    T = len(tr.tokens)
    for head in range(4):
        steps = fw.forward_steps(tr, head=head, token_strings=bundle.token_strings)
        by_title = {s.title: s for s in steps}
        titles = [s.title for s in steps]
        assert titles[:2] == ["Tokens", "Token embeddings"]  # RoPE: nothing added to the embeddings
        assert "+ positions" not in titles and titles[-4] == "Final RMSNorm"
        assert len(steps) == 2 + 7 * 3 + 4
        kv = head // 2
        for i in range(3):
            block = titles[2 + 7 * i: 2 + 7 * (i + 1)]
            assert block == [f"Block {i} · RMSNorm (ln1)", f"Block {i} · q and k turned by RoPE (head {head})",
                             f"Block {i} · self-attention (head {head}, K/V head {kv})",
                             f"Block {i} · add (attention)", f"Block {i} · RMSNorm (ln2)",
                             f"Block {i} · SwiGLU feed-forward", f"Block {i} · add (FFN)"]
            shown = [by_title[t].values for t in block]
            np.testing.assert_allclose(shown[0], ref[f"{i} ln1"].numpy(), **F32)
            np.testing.assert_allclose(shown[1], ref[f"{i} rot_q"][:, head].numpy(), **F32)
            np.testing.assert_allclose(shown[2], ref[f"{i} pattern"][head].numpy(), atol=1e-5)
            np.testing.assert_allclose(shown[3], ref[f"{i} mid"].numpy(), **F32)
            np.testing.assert_allclose(shown[4], ref[f"{i} ln2"].numpy(), **F32)
            np.testing.assert_allclose(shown[5], ref[f"{i} product"].numpy(), **F32)
            np.testing.assert_allclose(shown[6], ref[f"{i} post"].numpy(), **F32)
            assert by_title[block[2]].shape == f"(4 heads, T={T}, T={T})"
            assert f"head {head} reads K/V head {kv}" in by_title[block[2]].explanation
        np.testing.assert_allclose(by_title["Final RMSNorm"].values, ref["final"].numpy(), **F32)
        logits = by_title["Logits"]
        best = np.argsort(-tr.logits[-1], kind="stable")[:8]
        np.testing.assert_allclose(logits.values, ref["logits"].numpy()[:, best], rtol=1e-4, atol=1e-4)
        assert logits.formula == r"\text{logits} = x\,W_U"  # llama-tiny's unembedding is its own


def test_the_parameter_groups_name_the_models_norm(llama):
    bundle, _ = llama
    groups = fw.grouped_params(bundle.config)
    assert "RMSNorm" in groups and "LayerNorm" not in groups
    assert groups["RMSNorm"] == 3 * 2 * 64 + 64  # γ only: two norms a block and the final one
    assert sum(groups.values()) == fw.model_param_count(bundle.weights())
    assert "LayerNorm" in fw.grouped_params(tfviz.load("gpt-tiny").config)
