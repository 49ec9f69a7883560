"""count_parameters against published counts, by-hand arithmetic and (when present) the engine."""
import pytest

from tfviz.config import ModelConfig, preset
from tfviz.params import (BERT_BASE, BERT_CONVENTIONS, BERT_LARGE, GPT2_MEDIUM,
                                    GPT2_SMALL, T5_CONVENTIONS, T5_SMALL, TRANSFORMER_BASE,
                                    ParamSpec, count_parameters)
from tfviz.exercises.registry import make_instance


def test_bert_base_by_hand():
    # embeddings: (30522 + 512 + 2)·768 = 23,835,648, plus the embedding LayerNorm 1,536
    # one layer: attention 4·(768² + 768) = 2,362,368; FFN 2·768·3072 + 3072 + 768 = 4,722,432;
    #            two LayerNorms 2·1,536 = 3,072 -> 7,087,872; twelve layers: 85,054,464
    # pooler: 768² + 768 = 590,592
    # total: 23,835,648 + 1,536 + 85,054,464 + 590,592 = 109,482,240
    count = count_parameters(BERT_BASE, **BERT_CONVENTIONS)
    assert count.total == 109_482_240
    assert count["pooler"] == 590_592
    assert count["encoder self-attention"] == 12 * 2_362_368


def test_gpt2_small_by_hand():
    # wte 50257·768 = 38,597,376; wpe 1024·768 = 786,432
    # per layer 12·768² + 13·768 = 7,087,872 (same block as BERT); ×12 = 85,054,464
    # final LayerNorm 1,536; tied head adds 0 -> 124,439,808
    assert count_parameters(GPT2_SMALL, positions="learned", norm_place="pre").total == 124_439_808


@pytest.mark.parametrize("spec, conventions, published", [
    (BERT_LARGE, BERT_CONVENTIONS, 335_141_888),
    (GPT2_MEDIUM, dict(positions="learned", final_norm=True), 354_823_168),
    (T5_SMALL, T5_CONVENTIONS, 60_506_624),
])
def test_more_published_counts(spec, conventions, published):
    assert count_parameters(spec, **conventions).total == published


def test_original_transformer_is_only_approximately_65m():
    # the paper rounds; our convention (shared 37k embedding, no final norms) gives 63.1M
    total = count_parameters(TRANSFORMER_BASE, positions="sinusoidal").total
    assert total == 63_082_496
    assert abs(total - 65e6) / 65e6 < 0.05


def test_each_convention_changes_what_it_should():
    s = ParamSpec(d_model=8, n_heads=2, d_ff=32, n_layers=2, vocab_size=50, max_positions=16)
    base = count_parameters(s).total  # learned positions (max_positions given), tied, post-LN
    d, L = 8, 2
    assert base - count_parameters(s, bias=False).total == L * (4 * d + 32 + d)
    assert base - count_parameters(s, attn_output=False).total == L * (d * d + d)
    assert count_parameters(s, tied=False).total - base == 50 * d
    assert base - count_parameters(s, norm="none").total == L * 2 * 2 * d
    assert base - count_parameters(s, positions="sinusoidal").total == 16 * d
    assert count_parameters(s, final_norm=True).total - base == 2 * d
    assert count_parameters(s, norm_place="pre").total - base == 2 * d
    assert count_parameters(s, segments=2, pooler=True).total - base == 2 * d + d * d + d
    gqa = count_parameters(ParamSpec(8, 4, 32, 1, 50, n_kv_heads=1)).total
    mha = count_parameters(ParamSpec(8, 4, 32, 1, 50)).total
    assert mha - gqa == 2 * (8 * 6 + 6)  # W_k and W_v shrink from 8 to 2 columns (+ biases)


def test_config_and_spec_agree():
    cfg = preset("gpt-tiny")
    count = count_parameters(cfg)
    assert count.conventions["positions"] == "none"  # sinusoidal: nothing learned
    assert count.total > 0 and count["output layer"] == 0


def test_exercise_counts_and_slips():
    inst = make_instance("parameter-count")
    assert inst.check("encdec", "63,082,496").correct
    assert inst.check("encoder", "37858304").correct
    # tied output counted again: + 37000·512 = 18,944,000
    assert inst.check("decoder", str(37_858_304 + 18_944_000)).mistake == "tied_twice"
    # W^O left out: - 6·(512² + 512) = 1,575,936
    assert inst.check("encoder", str(37_858_304 - 1_575_936)).mistake == "no_wo"
    assert inst.check("encoder", str(37_858_304 - 6 * 4 * 512)).mistake == "no_ln"
    assert inst.check("encoder", str(37_858_304 - 6 * (4 * 512 + 2048 + 512))).mistake == "no_bias"


CONFIGS = [
    preset("gpt-tiny"), preset("moe-tiny"), preset("bert-tiny"), preset("reverse-encdec"),
    ModelConfig(positional="learned", tie_embeddings=False, bias=False, norm="pre",
                final_norm=True),
    ModelConfig(arch="encoder-decoder", n_enc_layers=3, n_layers=1, final_norm=True,
                positional="rope", n_kv_heads=2),
    ModelConfig(d_model=6, n_heads=1, head_dim=2, n_layers=1, positional="none", bias=False),
    ModelConfig(arch="encoder-decoder", n_experts=3, moe_top_k=2, positional="learned",
                max_seq_len=20, tie_embeddings=False),
    ModelConfig(n_heads=4, n_kv_heads=1, positional="alibi", d_ff=100),
    # Llama-shaped: RMSNorm (gamma only), SwiGLU's third matrix, biases on q, k, v only (Qwen2)
    ModelConfig(positional="rope", norm="pre", final_norm=True, norm_type="rmsnorm",
                activation="swiglu", bias=False, qkv_bias=True, n_kv_heads=2, tie_embeddings=False),
    # Qwen3-shaped: QK-norm, a head size of its own; GeGLU with biases everywhere
    ModelConfig(positional="rope", norm="pre", final_norm=True, norm_type="rmsnorm", qk_norm=True,
                head_dim=8, activation="geglu", n_kv_heads=1),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name + "-" + c.arch)
def test_engine_agrees(cfg):
    model_mod = pytest.importorskip("tfviz.model")
    model = model_mod.Transformer(cfg)
    assert count_parameters(cfg).total == sum(p.numel() for p in model.parameters())
