"""Bundle.weights(): every parameter once, read-only, and enough to rebuild the model's trace.

The rebuild uses only the exported numpy arrays and the numpy reference (tfviz.reference); the
trace comes from the torch model. Agreement to float32 round-off shows the export is complete
and laid out as documented (W_Q[l, h] is (d_model, d_head), x W_Q[l, h] + b_Q[l, h] is head h's q).
"""
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.reference import attention, causal_mask, layer_norm
from tfviz.trace import run_with_trace
from tfviz.weights import export_weights

TEXT = "the animal didn't cross the street because it was too tired"
PRESETS = ["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec"]
ATOL = 1e-4  # float32 model against a float64 rebuild, through a few layers


FRESH = {  # small untrained models with other wirings, built for these tests only
    "pre-LN, grouped-query, learned, untied": dict(norm="pre", final_norm=True, n_kv_heads=2,
                                                   positional="learned", tie_embeddings=False),
    "no biases, rope": dict(bias=False, positional="rope"),
}


@pytest.fixture(scope="module")
def models():
    """name -> (model, exported weights, trace of a sentence)."""
    out = {}
    for name in PRESETS:
        b = tfviz.load(name)
        out[name] = (b.model, b.weights(), b.trace(TEXT if name != "reverse-encdec" else "abcdef"))
    for name, changes in FRESH.items():
        model = Transformer(preset("gpt-tiny").replace(vocab_size=300, **changes)).eval()
        out[name] = (model, export_weights(model), run_with_trace(model, [9, 40, 17, 3, 250, 61, 8]))
    return out


@pytest.mark.parametrize("name", PRESETS + list(FRESH))
def test_every_parameter_once_and_nothing_invented(models, name):
    model, W, _ = models[name]
    assert sum(a.size for a in W.values()) == sum(p.numel() for p in model.parameters())
    assert all(a.dtype == np.float32 and a.flags.c_contiguous for a in W.values())
    cfg = model.cfg
    L, H, Hkv, d, dh = cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_model, cfg.d_head
    assert W["W_Q"].shape == (L, H, d, dh) and W["W_K"].shape == (L, Hkv, d, dh)
    assert W["W_O"].shape == (L, H, dh, d) and W["ln1.w"].shape == (L, d)
    assert ("b_Q" in W) == cfg.bias and ("W_pos" in W) == (cfg.positional == "learned")
    assert ("W_U" in W) == (not cfg.tie_embeddings) and ("ln_final.w" in W) == cfg.final_norm
    assert ("W_gate" in W) == cfg.is_moe and ("W_in" in W) == (not cfg.is_moe)
    assert ("cross.W_Q" in W) == ("enc.W_Q" in W) == (cfg.arch == "encoder-decoder")
    np.testing.assert_array_equal(W["W_E"], model.embed.weight.detach().numpy())
    np.testing.assert_array_equal(W["ln2.b"][-1], model.blocks[-1].ln2.bias.detach().numpy())
    attn = model.blocks[-1].attn  # torch keeps (out, in): head h's rows h·d_head … (h+1)·d_head
    np.testing.assert_array_equal(W["W_Q"][-1, 1], attn.W_q.weight.detach().numpy()[dh:2 * dh].T)
    np.testing.assert_array_equal(W["W_O"][-1, 1], attn.W_o.weight.detach().numpy()[:, dh:2 * dh].T)


def test_read_only_built_once_and_detached_from_the_model():
    b = tfviz.load("gpt-tiny")
    W = b.weights()
    assert b.weights() is W  # computed once per bundle
    with pytest.raises(ValueError):
        W["W_Q"][0, 0, 0, 0] = 1.0
    with pytest.raises(TypeError):
        W["W_Q"] = np.zeros(1)
    before = float(W["b_O"][0, 0])
    with torch.no_grad():  # even a model changed afterwards does not reach the export
        b.model.blocks[0].attn.W_o.bias.add_(1.0)
    try:
        assert float(W["b_O"][0, 0]) == before
    finally:
        with torch.no_grad():
            b.model.blocks[0].attn.W_o.bias.sub_(1.0)


def _act(name, x):
    if name == "relu":
        return np.maximum(x, 0.0)
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))  # exact GELU, like torch's


def _self_attention(W, p, tr, x, layer, causal, prefix=""):
    """Rebuild one attention sublayer's q, k, v, pattern, z and output; compare with the trace."""
    H, Hkv = W[prefix + "W_Q"].shape[1], W[prefix + "W_K"].shape[1]
    bias = (lambda n: W[prefix + n][layer]) if prefix + "b_Q" in W else (lambda n: 0.0)
    q = np.einsum("td,hde->the", x, W[prefix + "W_Q"][layer]) + bias("b_Q")  # (T, H, dh)
    k = np.einsum("td,hde->the", x, W[prefix + "W_K"][layer]) + bias("b_K")  # (T, Hkv, dh)
    v = np.einsum("td,hde->the", x, W[prefix + "W_V"][layer]) + bias("b_V")
    for name, ours in (("q", q), ("k", k), ("v", v)):
        np.testing.assert_allclose(ours, tr[f"{p}attn.hook_{name}"], atol=ATOL)
    group = H // Hkv
    kh = np.repeat(k, group, axis=1).transpose(1, 0, 2)  # (H, T, dh): each query head's keys
    vh = np.repeat(v, group, axis=1).transpose(1, 0, 2)
    steps = attention(q.transpose(1, 0, 2), kh, vh, causal_mask(len(x)) if causal else None)
    np.testing.assert_allclose(steps.weights, tr[f"{p}attn.hook_pattern"], atol=ATOL)
    z = steps.output.transpose(1, 0, 2)  # (T, H, dh)
    np.testing.assert_allclose(z, tr[f"{p}attn.hook_z"], atol=ATOL)
    out = np.einsum("the,hed->td", z, W[prefix + "W_O"][layer]) + bias("b_O")  # (T, d)
    np.testing.assert_allclose(out, tr[f"{p}hook_attn_out"], atol=ATOL)
    return out


def _feed_forward(W, cfg, p, tr, x, layer, prefix=""):
    if cfg.is_moe:  # the router's gates and the chosen experts' weighted sum
        np.testing.assert_allclose(x @ W["W_gate"][layer], tr[p + "mlp.hook_router_logits"], atol=ATOL)
        out = np.zeros_like(x)
        for t, (experts, gates) in enumerate(zip(tr[p + "mlp.hook_expert_indices"],
                                                 tr[p + "mlp.hook_expert_weights"])):
            for e, g in zip(experts, gates):
                hidden = _act(cfg.activation, x[t] @ W["experts.W_in"][layer, e] + W["experts.b_in"][layer, e])
                out[t] += g * (hidden @ W["experts.W_out"][layer, e] + W["experts.b_out"][layer, e])
    else:
        bias = (lambda n: W[prefix + n][layer]) if prefix + "b_in" in W else (lambda n: 0.0)
        pre = x @ W[prefix + "W_in"][layer] + bias("b_in")  # (T, d_ff)
        np.testing.assert_allclose(pre, tr[p + "mlp.hook_pre"], atol=ATOL)
        out = _act(cfg.activation, pre) @ W[prefix + "W_out"][layer] + bias("b_out")
    np.testing.assert_allclose(out, tr[p + "hook_mlp_out"], atol=ATOL)
    return out


def _ln(W, name, layer, x, eps):
    return layer_norm(x, W[name + ".w"][layer], W[name + ".b"][layer], eps).output


def _block(W, cfg, tr, layer, causal, enc=False, memory=None):
    """One block rebuilt from the weights; every hook it passes is compared with the trace."""
    p, prefix = (f"enc_blocks.{layer}.", "enc.") if enc else (f"blocks.{layer}.", "")
    x = tr[p + "hook_resid_pre"].astype(np.float64)
    eps, pre = cfg.ln_eps, cfg.norm == "pre"
    a_in = _ln(W, prefix + "ln1", layer, x, eps) if pre else x
    a = _self_attention(W, p, tr, a_in, layer, causal, prefix)
    x = x + a if pre else _ln(W, prefix + "ln1", layer, x + a, eps)
    np.testing.assert_allclose(x, tr[p + "hook_resid_mid"], atol=ATOL)
    if memory is not None:  # cross-attention: queries from the decoder, keys and values from memory
        qx = _ln(W, "ln_cross", layer, x, eps) if pre else x
        q = np.einsum("td,hde->the", qx, W["cross.W_Q"][layer]) + W["cross.b_Q"][layer]
        k = np.einsum("sd,hde->she", memory, W["cross.W_K"][layer]) + W["cross.b_K"][layer]
        v = np.einsum("sd,hde->she", memory, W["cross.W_V"][layer]) + W["cross.b_V"][layer]
        steps = attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2))
        np.testing.assert_allclose(steps.weights, tr[p + "cross_attn.hook_pattern"], atol=ATOL)
        c = np.einsum("hte,hed->td", steps.output, W["cross.W_O"][layer]) + W["cross.b_O"][layer]
        x = x + c if pre else _ln(W, "ln_cross", layer, x + c, eps)
        np.testing.assert_allclose(x, tr[p + "hook_resid_mid_cross"], atol=ATOL)
    f = _feed_forward(W, cfg, p, tr, _ln(W, prefix + "ln2", layer, x, eps) if pre else x, layer, prefix)
    y = x + f if pre else _ln(W, prefix + "ln2", layer, x + f, eps)
    np.testing.assert_allclose(y, tr[p + "hook_resid_post"], atol=ATOL)
    return y


@pytest.mark.parametrize("name", PRESETS + ["pre-LN, grouped-query, learned, untied"])
def test_weights_and_the_reference_rebuild_the_trace(models, name):
    model, W, tr = models[name]
    cfg = model.cfg
    memory = None
    if cfg.arch == "encoder-decoder":
        np.testing.assert_allclose(W["W_E"][tr.enc_ids], tr["hook_enc_embed"], atol=0)  # a look-up
        for layer in range(cfg.enc_layers):
            memory = _block(W, cfg, tr, layer, causal=False, enc=True)
    np.testing.assert_array_equal(W["W_E"][tr.ids], tr["hook_embed"])  # a row look-up: exact
    if cfg.positional == "learned":
        np.testing.assert_array_equal(W["W_pos"][:len(tr.ids)], tr["hook_pos_embed"])
    for layer in range(cfg.n_layers):
        x = _block(W, cfg, tr, layer, causal=cfg.causal, memory=memory)
    if cfg.final_norm:
        x = layer_norm(x, W["ln_final.w"], W["ln_final.b"], cfg.ln_eps).output
    logits = x @ (W["W_E"].T if cfg.tie_embeddings else W["W_U"])  # (T, vocab)
    np.testing.assert_allclose(logits, tr.logits, atol=10 * ATOL)
