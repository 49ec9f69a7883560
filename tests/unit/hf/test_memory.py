"""What the sidebar says a Llama-family folder costs, before a weight is read, counts the model
it opens exactly: grouped-query attention's narrower K and V, the gated feed-forward's three
matrices, an untied unembedding (and a tied one once), Qwen2's q/k/v biases, Qwen3's QK-norm,
and a bfloat16 file, which runs as float32 (4 bytes a parameter, twice its size on disk).

The count of :func:`tfviz.hf.describe` (config.json and the safetensors header alone) is checked
against transformers' own ``num_parameters()`` of the model it loads from the folder, against
the parameters of the model ``tfviz.load`` builds, and against the closed form of a Llama's
count. What a server really grows by, against ``tfviz.hf.memory.opening_cost``, is measured by
``bench/bench_folder_memory.py`` and ``bench/bench_checkpoint_memory.py`` (BENCHMARKS.md).
"""
from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

import tfviz  # noqa: E402
from tests.support.llama_folders import make_checkpoint  # noqa: E402
from tfviz.hf import describe  # noqa: E402
from tfviz.hf.llama import expected_shapes, llama_config  # noqa: E402

#: name -> make_checkpoint's arguments: GQA with an untied head, biases, QK-norm with a head size
#: of its own, multi-query attention tied
CASES = {
    "llama untied, 4 heads on 2": dict(model_type="llama", heads=4, kv_heads=2, tie_word_embeddings=False),
    "llama tied, 3 heads on 1": dict(model_type="llama", heads=3, kv_heads=1, d=24, tie_word_embeddings=True),
    "qwen2 q/k/v biases": dict(model_type="qwen2", tokenizer="qwen", tie_word_embeddings=True),
    "qwen3 qk-norm, head_dim 16": dict(model_type="qwen3", tokenizer="qwen", head_dim=16,
                                       tie_word_embeddings=False),
}


def llama_count(V: int, d: int, L: int, heads: int, kv: int, dh: int, f: int, tied: bool) -> int:
    """A Llama's parameters: the embedding (and an untied unembedding), per layer two RMSNorm
    gammas, W_Q and W_O of heads·dh, W_K and W_V of kv·dh, three feed-forward matrices; the final
    norm's gamma.

    >>> llama_count(49152, 576, 30, 9, 3, 64, 1536, tied=True)  # SmolLM2-135M's published count
    134515008
    """
    per_layer = 2 * d + 2 * d * heads * dh + 2 * d * kv * dh + 3 * d * f
    return V * d * (1 if tied else 2) + L * per_layer + d


@pytest.mark.parametrize("case", CASES)
def test_the_cost_counts_the_loaded_model(tmp_path, case):
    theirs = make_checkpoint(tmp_path, **CASES[case])
    info = describe(tmp_path)
    ours = tfviz.load(tmp_path).model
    n = sum(p.numel() for p in ours.parameters())
    assert info.n_params == n == theirs.num_parameters()
    assert info.memory_bytes == sum(p.numel() * p.element_size() for p in ours.parameters()) == 4 * n


def test_a_bfloat16_file_costs_float32(tmp_path):
    """The hub's Llamas are bfloat16 on disk: the cost is of the float32 the model computes in."""
    model = make_checkpoint(tmp_path, model_type="llama", heads=4, kv_heads=2, tie_word_embeddings=False)
    (tmp_path / "model.safetensors").unlink()
    model.to(torch.bfloat16).save_pretrained(tmp_path, safe_serialization=True)
    info = describe(tmp_path)
    ours = tfviz.load(tmp_path).model
    assert {p.dtype for p in ours.parameters()} == {torch.float32}
    assert info.n_params == model.num_parameters() == sum(p.numel() for p in ours.parameters())
    assert info.memory_bytes == 4 * info.n_params
    assert 2 * info.n_params < info.bytes_on_disk < 2 * info.n_params + 50_000  # bf16 + the header
    cfg = ours.cfg
    assert info.n_params == llama_count(cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads,
                                        cfg.kv_heads, cfg.d_head, cfg.d_ff, tied=False)


def test_smollm2_135m_shape_counts_its_published_parameters():
    """At SmolLM2-135M's full shape (no folder made: the shapes config.json asks for)."""
    cfg = llama_config({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 576,
                        "num_attention_heads": 9, "num_key_value_heads": 3, "num_hidden_layers": 30,
                        "intermediate_size": 1536, "max_position_embeddings": 8192, "vocab_size": 49152,
                        "tie_word_embeddings": True, "rope_theta": 100000.0}, "smollm2-135m")
    shapes = expected_shapes(cfg)
    assert sum(torch.Size(s).numel() for s in shapes.values()) == 134_515_008
    assert shapes["layers.0.self_attn.k_proj.weight"] == (3 * 64, 576)  # 3 K/V heads, not 9
    assert "lm_head.weight" not in shapes  # tied: the embedding is counted once
