"""The modern mixture of experts: gated (SwiGLU) experts, the two routing rules (Mixtral's
softmax -> top-k -> renormalise and Granite's top-k of the logits -> softmax) and Granite's four
multipliers, against the float64 reference (tfviz.reference.route, moe, modern_decoder).

The tolerance: the model computes in float32, the reference in float64 from the same exported
weights. One float32 operation is off by half an ulp (6e-8 relative); a dot product of d terms,
a softmax, an RMSNorm and a few layers of them add such errors up, so an entry is allowed
rtol = 1e-5 of its value plus 5e-6 of its tensor's largest entry (an entry near zero is the
difference of larger terms, and carries their error, not its own). Measured at 1 and 2 threads,
the largest difference was 1.9e-6 of its tensor's scale (Mixtral's residual stream); a wrong
multiplier, a swapped gate and up matrix or a missing renormalisation moves numbers by 1e-2 or
more. The chosen experts are compared exactly: the closest call between a token's k-th and
(k+1)-th expert in these cases is 6.6e-5 in probability, hundreds of times float32's error.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig, preset
from tfviz.model import Transformer
from tfviz.model.moe import MoE
from tfviz.model.hooks import name_hook_points, recording
from tfviz.params import count_parameters
from tfviz.reference import modern_decoder, moe, route
from tfviz.trace import run_with_trace
from tfviz.weights import export_weights

RTOL, ATOL = 1e-5, 5e-6  # ATOL is relative to the tensor's largest entry; see the docstring

#: Mixtral's block at a tiny size: RMSNorm, RoPE (rotate_half), GQA 4/2, 4 SwiGLU experts, top-2
#: of the softmax, renormalised, an unembedding of its own.
MIXTRAL = ModelConfig(vocab_size=60, d_model=24, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=32,
                      max_seq_len=64, positional="rope", rope_pairs="halves", pos_base=1e6,
                      norm="pre", final_norm=True, norm_type="rmsnorm", ln_eps=1e-5,
                      activation="swiglu", bias=False, tie_embeddings=False, n_experts=4,
                      moe_top_k=2, moe_renormalize=True, init_seed=5)
#: Granite's: top-k of the logits then softmax, 1 K/V head for 4, tied, and its multipliers
#: (granite-3.1-1b-a400m's embedding 12, residual 0.22, logits 6, attention 1/64 for d_head 64;
#: here 1/8 for d_head 6, so that the scale is not 1/sqrt(d_head) by accident).
GRANITE = MIXTRAL.replace(n_kv_heads=1, head_dim=6, n_experts=5, moe_top_k=3, moe_router="topk_softmax",
                          tie_embeddings=True, embedding_multiplier=12.0, attention_multiplier=0.125,
                          residual_multiplier=0.22, logits_scaling=6.0, ln_eps=1e-6, init_seed=6)
IDS = [3, 17, 42, 8, 8, 51, 0, 29, 11, 36, 5, 57]


def spread(model: Transformer, seed: int = 0) -> Transformer:
    """Wider random weights than the seeded init (whose gates and maps are nearly flat), so the
    comparisons are between peaked patterns and routers that prefer some experts."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("ln1.weight", "ln2.weight", "ln_final.weight")):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * (2.0 / p.shape[-1] ** 0.5))
    return model.eval()


def assert_close(ours, theirs, what: str) -> None:
    theirs = np.asarray(theirs, dtype=np.float64)
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), theirs, rtol=RTOL,
                               atol=ATOL * np.abs(theirs).max(), err_msg=what)


def layer(cfg: ModelConfig, seed: int = 0) -> MoE:
    moe_layer = MoE(cfg)
    name_hook_points(moe_layer)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in moe_layer.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)
    return moe_layer


# ----- the routing rules ---------------------------------------------------------------------

def test_the_two_rules_choose_the_same_experts_with_the_same_weights_in_float64():
    """softmax keeps the order of the logits, and e^h_i / sum_T e^h_j = p_i / sum_T p_j."""
    h = np.random.default_rng(0).normal(size=(200, 8)) * 3
    for k in (1, 2, 5):
        mixtral, granite = route(h, k, renormalize=True), route(h, k, rule="topk_softmax")
        np.testing.assert_array_equal(mixtral.indices, granite.indices)
        np.testing.assert_allclose(mixtral.weights, granite.weights, rtol=1e-13)
    plain = route(h, 2)  # Switch's rule without renormalising: the gates as the softmax gave them
    assert (plain.weights.sum(-1) < 1).all()
    np.testing.assert_allclose(plain.weights, np.take_along_axis(plain.probs, plain.indices, -1))


@pytest.mark.parametrize("rule", ["softmax_topk", "topk_softmax"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_gated_experts_and_their_routing_match_the_reference(rule, k):
    cfg = MIXTRAL.replace(moe_router=rule, moe_top_k=k, n_experts=5)
    moe_layer = layer(cfg, seed=k)
    x = torch.randn(2, 9, cfg.d_model, generator=torch.Generator().manual_seed(10 + k))
    with torch.no_grad(), recording(lambda name: True) as cache:
        out, _, _ = moe_layer(x)
    experts = moe_layer.experts
    ref = moe(x.numpy(), moe_layer.router.weight.detach().numpy().T,
              np.stack([e.W_in.weight.detach().numpy().T for e in experts]),
              np.stack([e.W_out.weight.detach().numpy().T for e in experts]), k,
              W_gate=np.stack([e.W_gate.weight.detach().numpy().T for e in experts]),
              activation="swiglu", rule=rule, renormalize=True)
    np.testing.assert_array_equal(cache["hook_expert_indices"].numpy(), ref.routing.indices)
    assert_close(cache["hook_expert_weights"], ref.routing.weights, "weights")
    assert_close(cache["hook_gate_probs"], ref.routing.probs, "probabilities over every expert")
    assert_close(out, ref.output, "the layer's output")
    np.testing.assert_allclose(cache["hook_expert_weights"].sum(-1).numpy(), 1.0, rtol=1e-6)


def test_granites_rule_reads_the_logits_and_mixtrals_the_probabilities():
    """Both rules in the model: the same experts, and weights equal to float32 round-off; the
    Granite layer's weights are softmax(top-k logits) computed from its own hook to the bit."""
    mixtral_layer, granite_layer = layer(MIXTRAL, 3), layer(MIXTRAL.replace(moe_router="topk_softmax"), 3)
    x = torch.randn(1, 20, MIXTRAL.d_model, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        with recording(lambda name: True) as a:
            mixtral_layer(x)
        with recording(lambda name: True) as b:
            granite_layer(x)
    assert torch.equal(a["hook_expert_indices"], b["hook_expert_indices"])
    torch.testing.assert_close(a["hook_expert_weights"], b["hook_expert_weights"], rtol=1e-5, atol=1e-6)
    top = b["hook_router_logits"].gather(-1, b["hook_expert_indices"])
    assert torch.equal(b["hook_expert_weights"], torch.softmax(top, -1))


# ----- whole models --------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [MIXTRAL, GRANITE], ids=["mixtral", "granite"])
def test_the_model_is_the_float64_modern_decoder(cfg):
    """Every block's input, every attention pattern, every token's experts and weights, and the
    logits: the model's float32 trace against the float64 reference built from its weights."""
    model = spread(Transformer(cfg))
    tr = run_with_trace(model, IDS)
    ref = modern_decoder(IDS, export_weights(model), cfg)
    for i in range(cfg.n_layers):
        assert_close(tr[f"blocks.{i}.hook_resid_pre"], ref.resid_pre[i], f"resid_pre {i}")
        assert_close(tr["pattern", i], ref.patterns[i], f"layer {i}'s pattern")
        np.testing.assert_array_equal(tr[f"blocks.{i}.mlp.hook_expert_indices"], ref.routings[i].indices)
        assert_close(tr[f"blocks.{i}.mlp.hook_expert_weights"], ref.routings[i].weights, f"weights {i}")
    assert_close(tr[f"blocks.{cfg.n_layers - 1}.hook_resid_post"], ref.resid_final, "last block")
    assert_close(tr.logits, ref.logits, "logits")
    assert max(p.max() for p in ref.patterns[:, :, 1:].reshape(-1, len(IDS))) > 0.5  # peaked maps
    used = np.concatenate([r.indices.ravel() for r in ref.routings])
    assert len(set(used.tolist())) == cfg.n_experts  # every expert takes part somewhere


def test_llama_tiny_is_the_float64_modern_decoder_too():
    """The reference's dense path (a gated feed-forward, no multipliers) on the bundled model."""
    import tfviz

    bundle = tfviz.load("llama-tiny")
    ids = bundle.encode("the animal didn't cross the street because it was too tired.")
    tr = bundle.trace("the animal didn't cross the street because it was too tired.")
    ref = modern_decoder(ids, bundle.weights(), bundle.config)
    assert ref.routings == ()
    assert_close(tr.logits, ref.logits, "logits")
    assert_close(tr["pattern", 2], ref.patterns[2], "layer 2's pattern")


def test_each_multiplier_does_one_thing():
    """Checked on the hooks, bit for bit: what enters block 0 is m_emb times the embedding;
    the scaled scores are q.k times m_att; what the sublayers add is what resid_mid and
    resid_post grow by; and the logits are the plain model's divided by s. The multipliers
    make no parameters, so the plain model (all four at their defaults) has the same weights."""
    granite = spread(Transformer(GRANITE))
    plain_cfg = GRANITE.replace(embedding_multiplier=1.0, attention_multiplier=None,
                                residual_multiplier=1.0, logits_scaling=1.0)
    plain = Transformer(plain_cfg).eval()
    plain.load_state_dict(granite.state_dict())
    tr = run_with_trace(granite, IDS)
    assert torch.equal(torch.as_tensor(tr["blocks.0.hook_resid_pre"]),
                       torch.as_tensor(tr["hook_embed"]) * 12.0)
    assert torch.equal(torch.as_tensor(tr["blocks.0.attn.hook_attn_scores_unmasked"]),
                       torch.as_tensor(tr["blocks.0.attn.hook_scores_raw"]) * 0.125)
    for i in range(GRANITE.n_layers):
        p = f"blocks.{i}."
        np.testing.assert_array_equal(tr[p + "hook_resid_mid"], tr[p + "hook_resid_pre"] + tr[p + "hook_attn_out"])
        np.testing.assert_array_equal(tr[p + "hook_resid_post"], tr[p + "hook_resid_mid"] + tr[p + "hook_mlp_out"])
    # the same final stream through the plain head, divided by 6, is the Granite model's logits
    with torch.no_grad():
        final = granite.ln_final(torch.as_tensor(tr[f"blocks.{GRANITE.n_layers - 1}.hook_resid_post"]))
        assert torch.equal(granite._logits(final), plain._logits(final) / 6.0)
    assert not np.allclose(run_with_trace(plain, IDS).logits, tr.logits, rtol=1e-2)


def test_kv_cache_steps_equal_one_full_pass_with_experts_and_multipliers():
    for cfg in (MIXTRAL, GRANITE):
        model = spread(Transformer(cfg), seed=2)
        ids = torch.tensor([IDS])
        with torch.no_grad():
            full = model(ids)
            logits, cache = model.step(ids[:, :4])
            steps = [logits]
            for t in range(4, ids.shape[1]):
                logits, cache = model.step(ids[:, t:t + 1], cache)
                steps.append(logits)
        torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5 * full.abs().max().item())


def test_parameters_and_export_count_the_gated_experts():
    for cfg in (MIXTRAL, GRANITE):
        model = Transformer(cfg)
        n = sum(p.numel() for p in model.parameters())
        assert count_parameters(cfg).total == n
        W = export_weights(model)
        assert sum(a.size for a in W.values()) == n
        L, E, d, f = cfg.n_layers, cfg.n_experts, cfg.d_model, cfg.d_ff
        assert W["W_gate"].shape == (L, d, E)  # the router
        assert W["experts.W_gate"].shape == W["experts.W_in"].shape == (L, E, d, f)
        assert W["experts.W_out"].shape == (L, E, f, d) and "experts.b_in" not in W


def test_config_checks_defaults_and_round_trip():
    with pytest.raises(ValueError, match="moe_router"):
        ModelConfig(n_experts=2, moe_router="sinkhorn")
    with pytest.raises(ValueError, match="moe_renormalize=True"):
        ModelConfig(n_experts=2, moe_router="topk_softmax")
    with pytest.raises(ValueError, match="must be positive"):
        ModelConfig(logits_scaling=0.0)
    with pytest.raises(ValueError, match="must be positive"):
        ModelConfig(attention_multiplier=-1.0)
    for cfg in (MIXTRAL, GRANITE):
        assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    plain = ModelConfig()
    assert (plain.moe_router, plain.embedding_multiplier, plain.attention_multiplier,
            plain.residual_multiplier, plain.logits_scaling) == ("softmax_topk", 1.0, None, 1.0, 1.0)
    assert plain.score_scale == 0.25 and GRANITE.score_scale == 0.125  # d_head 16: 1/sqrt(16)
    # a plain expert is made as before: the same seeded weights, and no gate
    moe_tiny = Transformer(preset("moe-tiny"))
    assert moe_tiny.blocks[0].mlp.experts[0].W_gate is None


# ----- the bundled Mixtral-shaped model ------------------------------------------------------

def test_mixtral_tiny_routes_as_mixtral_and_is_the_float64_decoder():
    """mixtral-tiny (trained: assets/) is Mixtral's block and rule; its trace is the float64
    reference's, experts included, and its facts say so."""
    import tfviz

    bundle = tfviz.load("mixtral-tiny")
    cfg = bundle.config
    assert (cfg.n_experts, cfg.moe_top_k, cfg.moe_router, cfg.moe_renormalize, cfg.moe_capacity_factor,
            cfg.activation, cfg.norm_type, cfg.kv_heads, cfg.rope_pairs) == (
        4, 2, "softmax_topk", True, None, "swiglu", "rmsnorm", 2, "halves")
    text = "the animal didn't cross the street because it was too tired."
    ids, tr = bundle.encode(text), bundle.trace(text)
    ref = modern_decoder(ids, bundle.weights(), cfg)
    for i in range(cfg.n_layers):
        np.testing.assert_array_equal(tr[f"blocks.{i}.mlp.hook_expert_indices"], ref.routings[i].indices)
        assert_close(tr[f"blocks.{i}.mlp.hook_expert_weights"], ref.routings[i].weights, f"weights {i}")
        assert not tr[f"blocks.{i}.mlp.hook_dropped"].any()  # no capacity: nothing is dropped
    assert_close(tr.logits, ref.logits, "logits")
    facts = bundle.facts
    assert (facts.origin, facts.is_moe, facts.routing) == ("bundled", True, (
        "a softmax over all 4 experts, then the 2 most probable, their weights divided by their sum "
        "so they add up to 1"))
    load = [layer["load"] for layer in bundle.manifest["moe"]["layers"]]
    assert min(min(shares) for shares in load) > 0.1  # trained with every expert in use
    switch = tfviz.load("moe-tiny").facts  # lesson 11's other model: Switch's rule
    assert (switch.routing, switch.moe_capacity) == (
        "a softmax over all 4 experts, then the most probable, weighted by its softmax probability", 3.0)
