"""A Mixtral or GraniteMoe folder opened by ``tfviz.load`` computes what transformers computes
from it, down to every token's chosen experts.

Each checkpoint is random, made here by transformers (a test-only dependency) with its weights
widened and saved with its tokenizer files (tests/support/moe_folders.py): nothing is
downloaded. The cases cover what these families vary: top-1, top-2 and top-3 routing over 3 to
6 experts; Mixtral's rule (softmax, top-k, renormalise) and Granite's (top-k logits, softmax);
grouped-query attention (4 query heads on 2 K/V heads, on 1, and plain 4 on 4); a head size
other than d / heads; tied and untied unembeddings; Granite's four multipliers, with its own
default attention multiplier of 1 (no 1/sqrt(d_head) at all); a linear RoPE scaling; both
tokenizer kinds; and sharded bfloat16 saves. transformers' forward pass (eager attention,
``output_attentions``, ``output_hidden_states``, ``output_router_logits``) is the reference for
the ids, the logits, every layer's attention pattern, the residual stream, the router logits
and weights (tolerance: tests/support/llama_folders.py) and each token's chosen experts (exact).
Measured at 1 and 2 threads, the largest difference was 1.2e-6 of its tensor's scale (a layer's
pattern in granite_top3_defaults, whose unscaled scores are the largest), under the 5e-6 allowed.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

import tfviz  # noqa: E402
from tests.support.hf_folders import edit_config, problem  # noqa: E402
from tests.support.llama_folders import TEXT  # noqa: E402
from tests.support.moe_folders import make_moe_checkpoint, moe_parity  # noqa: E402
from tfviz.config import RopeScaling  # noqa: E402
from tfviz.hf import describe  # noqa: E402
from tfviz.hf.discover import ENV_VAR, discover  # noqa: E402

GRANITE_MULTIPLIERS = dict(embedding_multiplier=12.0, attention_multiplier=0.125, residual_multiplier=0.22,
                           logits_scaling=6.0)  # granite-3.1-1b-a400m's; its 1/64 (d_head 64) is 1/8 here
#: name -> make_moe_checkpoint's arguments
CASES = {
    # Mixtral 8x7B's shape in small: top-2, GQA 4/2, untied, SentencePiece-style tokenizer
    "mixtral_top2": dict(model_type="mixtral", experts=4, top_k=2, heads=4, kv_heads=2),
    # top-1 (a Switch layer with Mixtral's renormalisation: weight 1), a head size of its own
    # (4 heads of 16 on d = 32), 4 query heads on 1, tied; the noise that only training adds,
    # and a sliding window no shorter than the context (it hides nothing)
    "mixtral_top1_head_dim": dict(model_type="mixtral", experts=3, top_k=1, heads=4, kv_heads=1, head_dim=16,
                                  tie_word_embeddings=True, router_jitter_noise=0.1, sliding_window=64),
    # GraniteMoe: top-2 of 5, GQA 4/1, tied (as granite-3.1-1b-a400m), its multipliers
    "granite_top2": dict(model_type="granitemoe", experts=5, top_k=2, heads=4, kv_heads=1,
                         tie_word_embeddings=True, **GRANITE_MULTIPLIERS),
    # top-3 of 6, plain multi-head (4 on 4), untied, every multiplier at transformers' default 1.0
    # (so the scores are not scaled at all), linear RoPE scaling, Llama 3's byte-level tokenizer
    "granite_top3_defaults": dict(model_type="granitemoe", experts=6, top_k=3, heads=4, kv_heads=4,
                                  tokenizer="llama3", tie_word_embeddings=False,
                                  rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """case -> (folder, bundle), each made once for the module when a test first asks."""
    cache = {}

    def get(case):
        if case not in cache:
            path = tmp_path_factory.mktemp(f"{case}-random-tiny")
            make_moe_checkpoint(path, **CASES[case])
            cache[case] = (path, tfviz.load(path))
        return cache[case]
    return get


@pytest.mark.parametrize("case", CASES)
def test_ids_are_transformers_tokenizer_ids(made, case):
    folder, bundle = made(case)
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    assert bundle.encode(TEXT) == theirs(TEXT)["input_ids"]


@pytest.mark.parametrize("case", CASES)
def test_logits_patterns_residual_stream_and_experts_match_transformers(made, case):
    folder, bundle = made(case)
    errors = moe_parity(folder, bundle)
    assert len(errors) == 1 + 4 * bundle.config.n_layers + 1  # and the chosen experts, exactly


def test_converted_configs_say_what_each_checkpoint_is(made):
    cfgs = {case: made(case)[1].config for case in CASES}
    for cfg in cfgs.values():
        assert (cfg.positional, cfg.rope_pairs, cfg.norm, cfg.norm_type, cfg.final_norm, cfg.activation,
                cfg.bias, cfg.moe_renormalize, cfg.moe_capacity_factor) == (
            "rope", "halves", "pre", "rmsnorm", True, "swiglu", False, True, None)
    assert [(c.n_experts, c.moe_top_k, c.moe_router) for c in cfgs.values()] == [
        (4, 2, "softmax_topk"), (3, 1, "softmax_topk"), (5, 2, "topk_softmax"), (6, 3, "topk_softmax")]
    mixtral, mixtral1, granite, granite3 = cfgs.values()
    assert (mixtral.pos_base, mixtral.ln_eps, mixtral.kv_heads, mixtral.tie_embeddings) == (1e6, 1e-5, 2, False)
    assert (mixtral1.d_head, mixtral1.kv_heads, mixtral1.tie_embeddings) == (16, 1, True)
    assert (mixtral.embedding_multiplier, mixtral.attention_multiplier, mixtral.residual_multiplier,
            mixtral.logits_scaling, mixtral.score_scale) == (1.0, None, 1.0, 1.0, 1 / 8 ** 0.5)  # d_head 8
    assert (granite.embedding_multiplier, granite.attention_multiplier, granite.residual_multiplier,
            granite.logits_scaling, granite.ln_eps) == (12.0, 0.125, 0.22, 6.0, 1e-6)
    assert granite3.attention_multiplier == 1.0 and granite3.rope_scaling == RopeScaling("linear", 2.0)
    families = {case: made(case)[1].manifest["family"] for case in CASES}
    assert families == {"mixtral_top2": "Mixtral", "mixtral_top1_head_dim": "Mixtral",
                        "granite_top2": "GraniteMoe", "granite_top3_defaults": "GraniteMoe"}
    for case in CASES:
        bundle = made(case)[1]
        assert bundle.manifest["parameters"] == sum(p.numel() for p in bundle.model.parameters())
        assert bundle.manifest["set_aside"] == []


def test_granites_fused_experts_are_cut_into_gate_and_up(made):
    """input_linear[e]'s first d_ff rows are expert e's gate (SiLU reads them), the rest its up."""
    folder, bundle = made("granite_top2")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    fused = theirs.model.layers[1].block_sparse_moe.experts.gate_up_proj[3].detach()  # (2 d_ff, d)
    expert = bundle.model.blocks[1].mlp.experts[3]
    f = bundle.config.d_ff
    assert torch.equal(expert.W_gate.weight, fused[:f]) and torch.equal(expert.W_in.weight, fused[f:])
    down = theirs.model.layers[1].block_sparse_moe.experts.down_proj[3].detach()
    assert torch.equal(expert.W_out.weight, down)


def test_training_noise_is_noted_not_refused(made):
    bundle = made("mixtral_top1_head_dim")[1]
    (note,) = bundle.manifest["notes"]
    assert "router_jitter_noise = 0.1" in note and "between 0.9 and 1.1" in note and "training" in note
    assert "notes" not in made("mixtral_top2")[1].manifest


@pytest.mark.parametrize("case", ["mixtral_top2", "granite_top2"])
def test_sharded_bfloat16_checkpoint_runs_in_float32(tmp_path, case):
    """model.safetensors.index.json and its shards, in bfloat16 (Granite's fused experts and
    Mixtral's one-matrix-a-file experts alike): read as one checkpoint and widened to float32,
    as transformers widens it with dtype=float32."""
    model = make_moe_checkpoint(tmp_path, **CASES[case])
    (tmp_path / "model.safetensors").unlink()
    model.to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size="20KB")
    shards = sorted(p.name for p in tmp_path.glob("model-*-of-*.safetensors"))
    assert len(shards) > 2 and (tmp_path / "model.safetensors.index.json").exists()
    bundle = tfviz.load(tmp_path)
    assert bundle.model.blocks[0].mlp.experts[0].W_gate.weight.dtype == torch.float32
    moe_parity(tmp_path, bundle)
    info = describe(tmp_path)
    assert info.n_params == bundle.manifest["parameters"]
    assert info.bytes_on_disk == sum((tmp_path / s).stat().st_size for s in shards)


def test_describe_reads_config_and_headers_only(made):
    for case, family in (("mixtral_top2", "Mixtral"), ("granite_top2", "GraniteMoe")):
        folder, bundle = made(case)
        info = describe(folder)
        assert (info.family, info.model_type) == (family, CASES[case]["model_type"])
        assert info.n_params == bundle.manifest["parameters"]


def test_the_facts_say_how_the_experts_are_chosen(made):
    mixtral, granite, granite3 = (made(c)[1].facts for c in ("mixtral_top2", "granite_top2", "granite_top3_defaults"))
    assert (mixtral.family, mixtral.origin, mixtral.is_moe, mixtral.n_experts, mixtral.moe_top_k,
            mixtral.moe_router, mixtral.moe_renormalized, mixtral.moe_capacity) == (
        "Mixtral", "folder", True, 4, 2, "softmax_topk", True, None)
    assert mixtral.routing == ("a softmax over all 4 experts, then the 2 most probable, their weights "
                               "divided by their sum so they add up to 1")
    assert (mixtral.gated, mixtral.activation_name, mixtral.norm_name, mixtral.grouped) == (
        True, "SwiGLU", "RMSNorm", True)
    assert not mixtral.multiplied
    assert (granite.family, granite.n_experts, granite.moe_top_k, granite.moe_router) == (
        "GraniteMoe", 5, 2, "topk_softmax")
    assert granite.routing == "the 2 highest of the router's 5 logits, then a softmax over those 2"
    assert granite.multiplied and (granite.embedding_multiplier, granite.attention_multiplier,
                                   granite.residual_multiplier, granite.logits_scaling) == (12.0, 0.125, 0.22, 6.0)
    assert granite3.multiplied and granite3.attention_multiplier == 1.0  # 1.0, not 1/sqrt(d_head)
    top1 = made("mixtral_top1_head_dim")[1].facts
    assert top1.routing == "a softmax over all 3 experts, then the most probable, with weight 1 (renormalised)"
    dense = tfviz.load("llama-tiny").facts
    assert (dense.is_moe, dense.routing, dense.moe_router, dense.multiplied) == (False, None, None, False)


def test_the_app_offers_both_families(made, tmp_path):
    """In TFVIZ_MODELS, a Mixtral and a GraniteMoe folder are offered with family and size."""
    import shutil

    for case in ("mixtral_top2", "granite_top2"):
        shutil.copytree(made(case)[0], tmp_path / case)
    found = discover({ENV_VAR: str(tmp_path)})
    assert [(m.name, m.info.family) for m in found.models] == [
        ("granite_top2", "GraniteMoe"), ("mixtral_top2", "Mixtral")]
    assert not found.skipped


# ----- refused by name -----------------------------------------------------------------------

@pytest.fixture
def copy(made, tmp_path):
    def get(case):
        import shutil

        target = tmp_path / case
        shutil.copytree(made(case)[0], target)
        return target
    return get


def test_a_sliding_window_that_hides_tokens_is_refused(copy):
    folder = copy("mixtral_top2")
    edit_config(folder, sliding_window=16)
    message = problem(folder, described=True)
    assert "sliding window of 16 tokens" in message and "full causal attention" in message


def test_granites_attention_bias_is_refused(copy):
    folder = copy("granite_top2")
    edit_config(folder, attention_bias=True)
    assert "none on the experts" in problem(folder, described=True)


def test_more_experts_per_token_than_experts_is_refused(copy):
    folder = copy("granite_top2")
    edit_config(folder, num_experts_per_tok=6)
    assert "num_experts_per_tok is 6 of 5 experts" in problem(folder, described=True)


@pytest.mark.parametrize("kind, words", [("granitemoeshared", "shared expert"), ("qwen2_moe", "shared expert"),
                                         ("granitemoehybrid", "Mamba")])
def test_near_relatives_are_refused_by_what_they_add(copy, kind, words):
    folder = copy("granite_top2")
    edit_config(folder, model_type=kind)
    message = problem(folder, described=True)
    assert f"model_type '{kind}'" in message and words in message and "GraniteMoe" in message


def test_a_shape_that_is_not_config_jsons_is_named_with_the_expert_sizes(copy):
    folder = copy("mixtral_top2")
    edit_config(folder, num_local_experts=5)
    message = problem(folder, described=True)
    assert "gate.weight has shape (4, 32)" in message and "num_local_experts=5" in message


def test_the_hub_files_keys_are_what_transformers_saves(made):
    """The stored names the loader reads are the hub's: Mixtral's per-expert w1/w2/w3 and
    Granite's fused input_linear/output_linear (transformers 5 converts them on load)."""
    from safetensors import safe_open

    for case, wanted in (("mixtral_top2", "model.layers.0.block_sparse_moe.experts.3.w2.weight"),
                         ("granite_top2", "model.layers.0.block_sparse_moe.input_linear.weight")):
        with safe_open(made(case)[0] / "model.safetensors", framework="pt") as f:
            assert wanted in f.keys()
    data = json.loads((made("granite_top2")[0] / "config.json").read_text())
    assert data["architectures"] == ["GraniteMoeForCausalLM"] and np.isclose(data["logits_scaling"], 6.0)
