"""The modern decoder block's parts (RMSNorm, SwiGLU/GeGLU, RoPE's two pairings, partial rotary,
scaled frequencies, QK-norm, q/k/v-only biases) against the float64 reference
(tfviz.reference) and torch's own functions, on small inputs.

The model computes in float32 and the reference in float64, so they are compared with a
float32 tolerance (a few ulps of the values' size); torch's own float32 functions, where the
model does the same operations, are compared bit for bit or nearly.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig, RopeScaling
from tfviz.model import Transformer
from tfviz.model.attention import Attention, AttnContext
from tfviz.model.ffn import MLP
from tfviz.model.hooks import name_hook_points, recording
from tfviz.model.norm import RMSNorm
from tfviz.model.positional import apply_rope, rope_angles, rope_inv_freq
from tfviz.params import count_parameters
from tfviz.reference import gated_ffn, gelu, rms_norm, rope, silu
from tfviz.reference import rope_inv_freq as reference_inv_freq
from tfviz.trace import run_with_trace
from tfviz.weights import export_weights

F32 = dict(rtol=1e-5, atol=1e-6)  # float32 against float64, values of size ~1: a few ulps, summed

#: A Llama-shaped config with every new switch on: RMSNorm, SwiGLU, RoPE in halves with llama3
#: scaling, GQA 4/2, a head size of its own, QK-norm, biases on q, k and v only.
MODERN = ModelConfig(vocab_size=50, d_model=24, n_heads=4, n_kv_heads=2, head_dim=8, n_layers=2,
                     d_ff=40, max_seq_len=64, positional="rope", rope_pairs="halves",
                     rope_scaling=RopeScaling("llama3", 8.0, 1.0, 4.0, 16), pos_base=500.0,
                     norm="pre", final_norm=True, norm_type="rmsnorm", ln_eps=1e-6,
                     activation="swiglu", bias=False, qkv_bias=True, qk_norm=True,
                     tie_embeddings=False, init_seed=3)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_rms_norm_matches_torch_and_the_reference():
    x = rng().normal(size=(2, 5, 16)) * 3 + 0.5
    gamma = rng(1).normal(size=16)
    norm = RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(gamma))
    xt = torch.tensor(x, dtype=torch.float32)
    ours = norm(xt).detach()
    theirs = F.rms_norm(xt, (16,), norm.weight.detach(), eps=1e-6)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    ref = rms_norm(x, gamma, eps=1e-6)
    np.testing.assert_allclose(ours.numpy(), ref.output, **F32)
    # The reference against float64 torch: the same formula, to float64's precision
    np.testing.assert_allclose(ref.output, F.rms_norm(torch.tensor(x), (16,), torch.tensor(gamma),
                                                      eps=1e-6).numpy(), atol=1e-12)
    assert not np.allclose(ref.normalized.mean(-1), 0)  # unlike LayerNorm, the mean stays


def test_rms_norm_hooks_give_the_rms_it_divides_by():
    cfg = MODERN.replace(qk_norm=False)
    ids = [3, 1, 4, 1, 5, 9]
    tr = run_with_trace(Transformer(cfg).eval(), ids)
    assert "blocks.0.ln1.hook_mean" not in tr  # RMSNorm takes no mean away
    x = tr["blocks.1.hook_resid_pre"]
    ref = rms_norm(x, eps=cfg.ln_eps)
    np.testing.assert_allclose(tr["blocks.1.ln1.hook_scale"], ref.rms, rtol=1e-5)
    np.testing.assert_allclose(tr["blocks.1.ln1.hook_normalized"], ref.normalized, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation, act", [("swiglu", F.silu), ("geglu", F.gelu)])
def test_gated_ffn_matches_torch_and_the_reference(activation, act):
    cfg = ModelConfig(d_model=6, n_heads=2, d_ff=10, activation=activation, bias=False)
    mlp = MLP(cfg)
    with torch.no_grad():
        for p in mlp.parameters():
            p.copy_(torch.randn_like(p))
    x = torch.randn(2, 3, 6)
    out = mlp(x).detach()
    by_hand = mlp.W_out(act(mlp.W_gate(x)) * mlp.W_in(x)).detach()  # torch's own SiLU / GELU
    torch.testing.assert_close(out, by_hand, rtol=0, atol=0)
    W = {k: p.detach().double().numpy().T for k, p in (("gate", mlp.W_gate.weight),
                                                        ("in", mlp.W_in.weight), ("out", mlp.W_out.weight))}
    ref = gated_ffn(x.double().numpy(), W["gate"], W["in"], W["out"], activation)
    np.testing.assert_allclose(out.numpy(), ref.output, rtol=1e-5, atol=1e-5)


def test_reference_activations_match_torch():
    x = np.linspace(-6, 6, 41)
    np.testing.assert_allclose(silu(x), F.silu(torch.tensor(x)).numpy(), atol=1e-14)
    np.testing.assert_allclose(gelu(x), F.gelu(torch.tensor(x)).numpy(), atol=1e-14)


def test_gated_hooks_are_transformerlens_names():
    cfg = MODERN
    tr = run_with_trace(Transformer(cfg).eval(), [1, 2, 3, 4])
    pre, lin, post = (tr[f"blocks.0.mlp.hook_{n}"] for n in ("pre", "pre_linear", "post"))
    assert pre.shape == lin.shape == post.shape == (4, cfg.d_ff)
    np.testing.assert_allclose(post, silu(pre) * lin, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pairs", ["adjacent", "halves"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_rope_matches_the_reference(pairs, rotary_dim):
    dh = 8
    r = rotary_dim or dh
    x = torch.randn(2, 5, 3, dh)  # (B, T, H, dh)
    positions = torch.arange(7, 12)
    cos, sin = rope_angles(positions, r, 100.0)
    ours = apply_rope(x, cos, sin, pairs)
    ref = rope(x.double().numpy().transpose(0, 2, 1, 3), positions.numpy(),
               rope_inv_freq(r, 100.0).double().numpy(), pairs).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-5, atol=1e-5)
    if rotary_dim:  # the dimensions past rotary_dim pass as they are
        assert torch.equal(ours[..., r:], x[..., r:])


def test_halves_is_adjacent_on_permuted_dimensions():
    """Llama's rotate_half pairs (i, i + d/2) where the RoFormer paper pairs (2i, 2i + 1):
    the same rotation once a head's dimensions are reordered, so scores agree."""
    x = torch.randn(1, 4, 2, 8)
    cos, sin = rope_angles(torch.arange(4), 8)
    order = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # halves layout -> adjacent layout
    torch.testing.assert_close(apply_rope(x, cos, sin, "halves")[..., order],
                               apply_rope(x[..., order], cos, sin, "adjacent"), rtol=0, atol=0)


def test_halves_matches_transformers_apply_rotary_pos_emb():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    q, k = torch.randn(1, 3, 6, 16), torch.randn(1, 3, 6, 16)  # theirs: (B, H, T, dh)
    cos, sin = rope_angles(torch.arange(6), 16, 10000.0)
    full_cos, full_sin = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]  # (1, T, dh)
    q_t, k_t = llama.apply_rotary_pos_emb(q, k, full_cos, full_sin)
    torch.testing.assert_close(apply_rope(q.transpose(1, 2), cos, sin, "halves").transpose(1, 2), q_t,
                               rtol=0, atol=0)
    torch.testing.assert_close(apply_rope(k.transpose(1, 2), cos, sin, "halves").transpose(1, 2), k_t,
                               rtol=0, atol=0)


@pytest.mark.parametrize("scaling", [RopeScaling("linear", 4.0),
                                     RopeScaling("llama3", 8.0, 1.0, 4.0, 64),
                                     RopeScaling("llama3", 32.0, 1.0, 4.0, 8192)])
@pytest.mark.parametrize("dim, base", [(16, 10000.0), (64, 500000.0)])
def test_scaled_frequencies_match_the_reference_and_transformers(scaling, dim, base):
    ours = rope_inv_freq(dim, base, scaling)
    np.testing.assert_allclose(ours.numpy(), reference_inv_freq(dim, base, scaling), rtol=1e-6)
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import LlamaConfig

    params = {"rope_type": scaling.kind, "factor": scaling.factor, "rope_theta": base}
    if scaling.kind == "llama3":
        params.update(low_freq_factor=scaling.low_freq_factor, high_freq_factor=scaling.high_freq_factor,
                      original_max_position_embeddings=scaling.original_max_position_embeddings)
    config = LlamaConfig(hidden_size=dim * 2, num_attention_heads=2, max_position_embeddings=131072,
                         rope_parameters=params)
    theirs, _ = rope_utils.ROPE_INIT_FUNCTIONS[scaling.kind](config)
    assert torch.equal(ours, theirs)  # the same float32 operations in the same order
    if scaling.kind == "llama3":  # the fast pairs are kept, the slowest divided by factor
        plain = rope_inv_freq(dim, base)
        assert ours[0] == pytest.approx(float(plain[0]), rel=1e-6)
        if 2 * np.pi / float(plain[-1]) > scaling.original_max_position_embeddings:
            assert ours[-1] == pytest.approx(float(plain[-1]) / scaling.factor, rel=1e-6)


@pytest.mark.parametrize("dim, base", [(16, 10000.0), (64, 500000.0), (128, 1e6)])
def test_plain_frequencies_in_transformers_order_are_theirs_to_the_bit(dim, base):
    """A checkpoint's RoPE (rope_pairs="halves") takes transformers' float32 order, 1 / base^(2i/d);
    our own models keep the base^(-2i/d) they were trained with. The two differ by an ulp in a
    few entries, so each agrees with the reference to float32's precision."""
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig

    config = LlamaConfig(hidden_size=dim * 2, num_attention_heads=2,
                         rope_parameters={"rope_type": "default", "rope_theta": base})
    theirs, _ = llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    ours = rope_inv_freq(dim, base, transformers_order=True)
    assert torch.equal(ours, theirs)
    for freqs in (ours, rope_inv_freq(dim, base)):
        np.testing.assert_allclose(freqs.numpy(), reference_inv_freq(dim, base), rtol=3e-7)
    cfg = MODERN.replace(rope_scaling=None)  # a "halves" model asks for transformers' order
    model = Transformer(cfg).eval()
    tr = run_with_trace(model, [1, 2, 3])
    cos, sin = rope_angles(torch.arange(3), cfg.d_head, cfg.pos_base, transformers_order=True)
    with torch.no_grad():
        q = model.blocks[0].attn.q_norm(torch.tensor(tr["blocks.0.attn.hook_q"])[None])  # (1, T, H, dh)
    assert torch.equal(apply_rope(q, cos, sin, "halves")[0], torch.tensor(tr["blocks.0.attn.hook_rot_q"]))


def test_qk_norm_and_rope_in_attention_match_the_reference():
    """q -> RMSNorm per head (its own gamma) -> RoPE (halves) -> scores, as Qwen3 computes."""
    cfg = MODERN
    attn = Attention(cfg)
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn_like(p))
    x = torch.randn(1, 5, cfg.d_model)
    rope_qk = rope_angles(torch.arange(5), cfg.rope_dim, cfg.pos_base, cfg.rope_scaling)
    name_hook_points(attn)
    with recording(lambda n: True) as store:
        out, _ = attn(x, AttnContext(allowed=None, scale=True, rope_q=rope_qk, rope_k=rope_qk))
    q = store["hook_q"].double().numpy()[0].transpose(1, 0, 2)  # (H, T, dh)
    gamma = attn.q_norm.weight.detach().double().numpy()
    inv_freq = rope_inv_freq(cfg.rope_dim, cfg.pos_base, cfg.rope_scaling).double().numpy()
    expected = rope(rms_norm(q, gamma, cfg.ln_eps).output, np.arange(5), inv_freq, "halves")
    np.testing.assert_allclose(store["hook_rot_q"][0].numpy().transpose(1, 0, 2), expected,
                               rtol=1e-5, atol=1e-5)
    assert store["q_norm.hook_scale"].shape == (1, 5, cfg.n_heads)
    assert store["k_norm.hook_scale"].shape == (1, 5, cfg.kv_heads)


def test_qkv_bias_without_other_biases():
    model = Transformer(MODERN)
    attn, mlp = model.blocks[0].attn, model.blocks[0].mlp
    assert all(lin.bias is not None for lin in (attn.W_q, attn.W_k, attn.W_v))
    assert attn.W_o.bias is None and all(lin.bias is None for lin in (mlp.W_gate, mlp.W_in, mlp.W_out))
    assert model.ln_final.weight.shape == (24,) and not hasattr(model.ln_final, "bias")


def test_kv_cache_steps_equal_one_full_pass():
    """Token by token with the cache gives the logits of one pass over the whole text: RoPE of
    the new position, QK-norm and GQA all line up with the cached keys."""
    for cfg in (MODERN, MODERN.replace(rotary_dim=4, rope_scaling=RopeScaling("linear", 2.0))):
        model = Transformer(cfg).eval()
        ids = torch.tensor([[5, 7, 11, 2, 3, 9, 1]])
        with torch.no_grad():
            full = model(ids)
            logits, cache = model.step(ids[:, :3])
            steps = [logits]
            for t in range(3, ids.shape[1]):
                logits, cache = model.step(ids[:, t:t + 1], cache)
                steps.append(logits)
        torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5)


def test_parameters_count_and_export_cover_the_new_parts():
    model = Transformer(MODERN)
    n = sum(p.numel() for p in model.parameters())
    assert count_parameters(MODERN).total == n
    W = export_weights(model)
    assert sum(a.size for a in W.values()) == n  # each parameter once, nothing invented
    L, d, f, dh = MODERN.n_layers, MODERN.d_model, MODERN.d_ff, MODERN.d_head
    assert W["W_gate"].shape == W["W_in"].shape == (L, d, f) and W["W_out"].shape == (L, f, d)
    assert W["q_norm.w"].shape == W["k_norm.w"].shape == (L, dh)
    assert "ln1.b" not in W and "ln_final.b" not in W and "b_O" not in W and W["b_K"].shape == (L, 2, dh)


def test_config_checks_and_round_trip():
    with pytest.raises(ValueError, match="rotary_dim"):
        ModelConfig(positional="rope", rotary_dim=3)
    with pytest.raises(ValueError, match="for RoPE models"):
        ModelConfig(rope_scaling=RopeScaling("linear", 2.0))
    with pytest.raises(ValueError, match="norm_type"):
        ModelConfig(norm_type="batchnorm")
    with pytest.raises(ValueError, match="high_freq_factor"):
        RopeScaling("llama3", 8.0, low_freq_factor=4.0, high_freq_factor=1.0)
    assert ModelConfig.from_dict(json.loads(json.dumps(MODERN.to_dict()))) == MODERN
    plain = ModelConfig()  # every new switch off by default: the models of before
    assert (plain.norm_type, plain.rope_pairs, plain.rotary_dim, plain.rope_scaling, plain.qkv_bias,
            plain.qk_norm, plain.gated, plain.has_qkv_bias) == ("layernorm", "adjacent", None, None, None,
                                                                False, False, True)
