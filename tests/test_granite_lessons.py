"""What the lessons say and compute about a mixture of experts with Granite's multipliers, checked
against transformers' own GraniteMoe on a random folder, and against our own experts' torch
modules on mixtral-tiny.

A GraniteMoe multiplies its embeddings by ``embedding_multiplier`` before block 0, its scores by
``attention_multiplier`` in place of 1/√d_k, each sublayer's output by ``residual_multiplier``
before the add, and divides its logits by ``logits_scaling``. Each number a lesson states or
shows for these is compared here with transformers' forward pass (its hidden states, its
attention module's ``scaling``, its experts' fused ``gate_up_proj``, its logits), caught by
hooks on its own modules. Tolerances: llama_folders' ``assert_matches`` (float32 on two code
paths) where the two sides compute; exact where a page shows a trace's own array.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import ffn as fa
from tfviz.analysis import forward as fw
from tfviz.analysis import heads as hd

pytest.importorskip("transformers")

from tests.support.llama_folders import TEXT, assert_matches  # noqa: E402
from tests.support.moe_folders import make_moe_checkpoint  # noqa: E402

MULTIPLIERS = dict(embedding_multiplier=12.0, attention_multiplier=0.125, residual_multiplier=0.22,
                   logits_scaling=6.0)


@pytest.fixture(scope="module")
def granite(tmp_path_factory):
    """A random GraniteMoe folder (top-2 of 5, 4 query heads over 1 K/V head of 8, tied, the
    multipliers of granite-3.1-1b-a400m scaled to its head size), our bundle of it, and
    transformers' forward pass on TEXT: hidden states, logits, each layer's attention scaling,
    the input of each layer's experts and the router's choices."""
    import transformers

    folder = tmp_path_factory.mktemp("granite-lessons")
    make_moe_checkpoint(folder, "granitemoe", experts=5, top_k=2, heads=4, kv_heads=1,
                        tie_word_embeddings=True, **MULTIPLIERS)
    bundle = tfviz.load(folder)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                               dtype=torch.float32).eval()
    layers = theirs.model.layers
    moe_in, routed = [None] * len(layers), [None] * len(layers)
    handles = [layer.block_sparse_moe.register_forward_pre_hook(
        lambda module, args, i=i: moe_in.__setitem__(i, args[0][0].numpy().copy())) for i, layer in enumerate(layers)]
    handles += [layer.block_sparse_moe.router.register_forward_hook(
        lambda module, args, out, i=i: routed.__setitem__(i, (out[1].numpy(), out[2].numpy())))
        for i, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            out = theirs(torch.tensor([bundle.encode(TEXT)]), output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    ref = {"hidden": [h[0].numpy() for h in out.hidden_states], "logits": out.logits[0].numpy(),
           "scaling": [layer.self_attn.scaling for layer in layers], "moe_in": moe_in, "routed": routed,
           "gate_up": [layer.block_sparse_moe.experts.gate_up_proj.detach().numpy() for layer in layers],
           "config": theirs.config}
    return bundle, bundle.trace(TEXT), ref


def test_the_facts_are_transformers_numbers(granite):
    """facts' multipliers are the config transformers reads, and the divisor lesson 6 states is
    1 / the scaling transformers' attention multiplies by, and the trace's own scores' ratio."""
    bundle, tr, ref = granite
    f, c = bundle.facts, ref["config"]
    assert (f.embedding_multiplier, f.attention_multiplier, f.residual_multiplier, f.logits_scaling) == (
        c.embedding_multiplier, c.attention_multiplier, c.residual_multiplier, c.logits_scaling)
    assert f.d_head == bundle.config.d_head == c.hidden_size // c.num_attention_heads == 8
    assert all(s == 0.125 for s in ref["scaling"]) and f.score_divisor == 1 / ref["scaling"][0] == 8.0
    raw, scaled = tr["blocks.0.attn.hook_scores_raw"], tr["blocks.0.attn.hook_attn_scores_unmasked"]
    # ÷ 8 here and × 0.125 in the model are both exact in float32 (a power of two): equal by
    # construction, whatever the CPU; the tolerance only allows for a divisor that is not
    np.testing.assert_allclose(raw / f.score_divisor, scaled, rtol=1e-6, atol=1e-7)
    assert f.score_scale == ("multiplies every score by its attention_multiplier 0.125 instead of dividing "
                             "by √d_k = √8 ≈ 2.83: a division by 8, d_k itself")
    assert f.scaled_tex() == r"0.125\,QK^\top"
    # a model without Granite's multiplier divides by √d_k: mixtral-tiny's heads of 16
    m = tfviz.load("mixtral-tiny").facts
    assert (m.d_head, m.score_divisor, m.score_scale) == (16, 4.0, "divides every score by √d_k = √16 = 4")
    assert m.scaled_tex() == r"\frac{QK^\top}{\sqrt{d_k}}"


def test_the_forward_walk_shows_each_multiplier_where_transformers_applies_it(granite):
    """Lesson 12 on the Granite: the embeddings times 12 are transformers' first hidden state,
    each add is resid + 0.22 · (the sublayer by hand), the scores' factor is transformers'
    scaling, and the logits step shows transformers' logits (divided by 6)."""
    bundle, tr, ref = granite
    steps = fw.forward_steps(tr, token_strings=bundle.token_strings)
    by_title = {s.title: s for s in steps}
    titles = [s.title for s in steps]
    assert titles[:3] == ["Tokens", "Token embeddings", "× embedding multiplier"]
    multiplied = by_title["× embedding multiplier"]
    assert multiplied.formula == r"x_t \leftarrow 12\,x_t"
    np.testing.assert_array_equal(by_title["Token embeddings"].values, tr["hook_embed"])
    assert_matches(multiplied.values, ref["hidden"][0], "the embeddings times 12")
    assert_matches(multiplied.values, 12.0 * tr["hook_embed"].astype(np.float64), "12 x_t")
    weights = bundle.weights()
    for i in range(bundle.config.n_layers):
        attn = by_title[f"Block {i} · self-attention (head 0, K/V head 0)"]
        assert f"{ref['scaling'][i]:g}" + r"\,R(q)\,R(k)^\top" in attn.formula and r"\sqrt" not in attn.formula
        add = by_title[f"Block {i} · add (attention)"]
        assert add.formula == r"x \leftarrow x + 0.22\,\mathrm{Attn}\big(\mathrm{RMS}(x)\big)"
        W_O, _ = hd.output_weights(weights, i)
        z = tr["z", i].reshape(len(tr.tokens), -1).astype(np.float64)  # (T, H·d_head)
        assert_matches(add.values, tr[f"blocks.{i}.hook_resid_pre"] + 0.22 * z @ W_O, f"block {i}'s attention add")
        moe = by_title[f"Block {i} · add (MoE)"]
        assert moe.formula == r"x \leftarrow x + 0.22\,\mathrm{MoE}\big(\mathrm{RMS}(x)\big)"
        if i + 1 < bundle.config.n_layers:  # transformers' last hidden state is after the final norm
            assert_matches(moe.values, ref["hidden"][i + 1], f"block {i}'s output")
        experts = by_title[f"Block {i} · experts (MoE)"]
        assert r"\mathrm{top}_{2}(W_r \hat{x})" in experts.formula and r"\mathrm{softmax}_{\mathcal{T}}" in experts.formula
    logits = by_title["Logits"]
    assert logits.formula == r"\text{logits} = \big(x\,E^\top\big)\,/\,6"
    best = np.argsort(-tr.logits[-1].astype(np.float64), kind="stable")[:8]
    assert_matches(logits.values, ref["logits"][:, best], "the logits shown")


def test_the_heads_shares_meet_the_attention_output_before_its_multiplier(granite):
    """Lesson 7's check on the Granite: Σ_h z_h W^O_h equals hook_attn_out / 0.22 (it was 8.3
    off when the multiplier was forgotten)."""
    bundle, tr, _ = granite
    _, gap = hd.share_lengths(tr, bundle.weights())
    assert gap < 1e-5


def test_the_cached_row_uses_the_models_own_scale(granite):
    """Lesson 16's attention row of the newest token, rebuilt from the cache, meets the full
    run's pattern on the Granite (0.67 off when it divided by √d_head)."""
    from tfviz.experiments.kv_cache import side_by_side

    bundle, _, _ = granite
    side = side_by_side(bundle, bundle.encode("the cat sat on"), 4, repeats=1)
    assert max(s.row_gap for s in side.steps) < 1e-5


def test_linformers_full_map_is_the_models_own_attention(granite):
    """Lesson 17's Linformer at k = n (no pooling) is the model's own attention without the mask:
    the turned q and k, times the model's scale, as its hook_attn_scores_unmasked."""
    from tfviz.experiments.long_sequences import linformer_layers

    bundle, tr, _ = granite
    cfg, n = bundle.config, len(tr.tokens)
    layers = range(cfg.n_layers)
    got = linformer_layers([tr[f"blocks.{i}.attn.hook_rot_q"] for i in layers],
                           [tr[f"blocks.{i}.attn.hook_rot_k"] for i in layers],
                           [tr[f"blocks.{i}.attn.hook_v"] for i in layers], n, cfg.score_scale)
    for i in layers:
        own = torch.softmax(torch.tensor(tr[f"blocks.{i}.attn.hook_attn_scores_unmasked"], dtype=torch.float64), -1)
        np.testing.assert_allclose(got.maps[i], own.numpy(), atol=1e-5)


def test_an_experts_gate_and_up_are_transformers(granite):
    """Lesson 10 on the Granite: each token's first-choice expert, its gate and up for the
    neurons shown, from transformers' own experts (the fused gate_up_proj, gate rows first) on
    the input transformers' experts read; the chosen expert and its weight from transformers'
    router; and the mixed output by hand meets the model's hook_mlp_out."""
    bundle, tr, ref = granite
    ex = fa.expert_steps(tr, bundle.weights())
    d_ff = bundle.config.d_ff
    assert ex.steps.columns == ("gate = x·W_gate", "SiLU(gate)", "up = x·W_in", "SiLU(gate) × up")
    assert ex.steps.output_error < 1e-5 and math.isnan(ex.steps.hidden_error)
    for i in range(bundle.config.n_layers):
        weights, indices = ref["routed"][i]
        np.testing.assert_array_equal(ex.experts[i], indices[:, 0])
        assert_matches(ex.weights[i], weights[:, 0], f"layer {i}'s first weights")
        x = ref["moe_in"][i].astype(np.float64)  # (T, d): what transformers' experts read
        for t, e in enumerate(indices[:, 0]):
            gate_up = x[t] @ ref["gate_up"][i][e].T.astype(np.float64)  # (2 d_ff,)
            gate, up = gate_up[:d_ff], gate_up[d_ff:]
            shown = ex.steps.ids[i, t]
            assert_matches(ex.steps.values[i, t, :, 0], gate[shown], f"layer {i}, token {t}: gate")
            assert_matches(ex.steps.values[i, t, :, 2], up[shown], f"layer {i}, token {t}: up")
            silu = gate / (1 + np.exp(-gate))
            assert_matches(ex.steps.values[i, t, :, 3], (silu * up)[shown], f"layer {i}, token {t}: product")


def test_an_experts_neurons_are_our_own_experts_modules():
    """On mixtral-tiny (SwiGLU experts, top-2 renormalised) and moe-tiny (post-LN ReLU experts
    with biases and a capacity): each token's first expert's products by hand are that expert's
    torch module's own, on the input the block feeds its MoE."""
    for name in ("mixtral-tiny", "moe-tiny"):
        bundle = tfviz.load(name)
        tr = bundle.trace(TEXT)
        ex = fa.expert_steps(tr, bundle.weights())
        assert ex.steps.output_error < 1e-4, name
        for i, block in enumerate(bundle.model.blocks):
            x = torch.tensor(fa.mlp_input(tr, bundle.weights(), i), dtype=torch.float32)  # (T, d)
            for t, e in enumerate(ex.experts[i]):
                expert = block.mlp.experts[int(e)]
                with torch.no_grad():
                    if expert.W_gate is None:
                        hidden = expert.act(expert.W_in(x[t]))  # (d_ff,)
                    else:
                        hidden = expert.act(expert.W_gate(x[t])) * expert.W_in(x[t])
                np.testing.assert_allclose(ex.steps.values[i, t, :, -1], hidden.numpy()[ex.steps.ids[i, t]],
                                           rtol=1e-5, atol=1e-5 * float(hidden.abs().max()), err_msg=name)
        assert (ex.experts == np.stack([tr[f"blocks.{i}.mlp.hook_expert_indices"][:, 0]
                                        for i in range(bundle.config.n_layers)])).all()
