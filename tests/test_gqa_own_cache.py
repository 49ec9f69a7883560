"""Lesson 18's step 5: the KV cache of the sidebar's own grouped model, from its config, against
the cache tensors themselves (ours and transformers' own past_key_values), and its full
multi-head twin, which computes the same numbers with group times the cache."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import gqa
from tfviz.config import preset
from tfviz.experiments.gqa_decode import cache_of_text, every_kv_head, own_decode_times, timeable
from tfviz.model import Transformer

TEXT = "the animal didn't cross the street because it was too tired"
# SmolLM2-135M's attention and cache shape (30 layers, 9 query heads over 3 K/V heads of 64, a
# context of 8,192) with a small vocabulary and feed-forward, so that it builds in a second
SMOLLM2_CACHE = preset("llama-tiny").replace(name="smollm2-cache", n_layers=30, d_model=576, n_heads=9,
                                              n_kv_heads=3, d_ff=32, vocab_size=300, max_seq_len=8192,
                                              pos_base=100000.0)


def test_smollm2s_cache_by_hand_and_from_its_tensors():
    torch.manual_seed(0)
    model = Transformer(SMOLLM2_CACHE).eval()
    c = gqa.model_cache("smollm2-cache", SMOLLM2_CACHE)
    assert (c.n_layers, c.n_heads, c.kv_heads, c.d_head, c.context) == (30, 9, 3, 64, 8192)
    # by hand: 2 (K and V) × 30 layers × 3 K/V heads × 64 values × 4 bytes
    assert c.per_token(4) == 2 * 30 * 3 * 64 * 4 == 46_080 and c.per_token(2) == 23_040
    assert c.per_token_mha(4) == 2 * 30 * 9 * 64 * 4 == 138_240
    held, tokens = cache_of_text(model, [5, 17, 9, 200, 3, 3, 41])
    assert (held, tokens) == (7 * 46_080, 7)
    rows = gqa.model_cache_rows(c)
    assert [r["full context, 8,192 tokens"] for r in rows] == ["360 MiB", "180 MiB"]
    assert [r["full context with 9 K/V heads"] for r in rows] == ["1.05 GiB", "540 MiB"]
    assert rows[0]["per token"] == "45.0 KiB" and rows[0]["per token with 9 K/V heads (MHA)"] == "135 KiB"


def test_a_llama_folders_cache_is_transformers_past_key_values(tmp_path):
    """The bytes per token the page computes from the config equal those of transformers' own
    cache for the same folder (float32), and of ours."""
    pytest.importorskip("transformers")
    import transformers

    from tests.support.llama_folders import make_checkpoint

    make_checkpoint(tmp_path, "llama", tokenizer="llama2", heads=6, kv_heads=2, d=48)
    b = tfviz.load(tmp_path)
    ids = b.encode(TEXT)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    with torch.no_grad():
        cache = theirs(torch.tensor([ids]), use_cache=True).past_key_values
    layers = cache.layers if hasattr(cache, "layers") else None
    tensors = ([t for layer in layers for t in (layer.keys, layer.values)] if layers is not None
               else [t for kv in cache for t in kv])
    their_bytes = sum(t.numel() * t.element_size() for t in tensors)
    c = gqa.model_cache("folder", b.config)
    assert their_bytes == c.per_token(4) * len(ids)
    assert cache_of_text(b.model, ids) == (their_bytes, len(ids))


@pytest.mark.parametrize("name", ["llama-tiny", "gqa-tiny", "mqa-tiny"])
def test_the_multi_head_twin_computes_the_same_with_group_times_the_cache(name):
    b = tfviz.load(name)
    twin = every_kv_head(b.model)
    assert twin.cfg.kv_heads == twin.cfg.n_heads == b.config.n_heads
    ids = torch.tensor([b.encode(TEXT)])
    with torch.no_grad():
        ours, _ = b.model.step(ids)
        same, _ = twin.step(ids)
    np.testing.assert_allclose(same.numpy(), ours.numpy(), rtol=0, atol=1e-5)
    held, tokens = cache_of_text(twin, ids[0].tolist())
    group = b.config.n_heads // b.config.kv_heads
    assert held == group * cache_of_text(b.model, ids[0].tolist())[0]
    assert held == gqa.model_cache(name, b.config).per_token_mha(4) * tokens
    assert not any(p.requires_grad for p in twin.parameters())
    assert b.model.blocks[0].attn.W_k.weight.shape[0] == b.config.kv_heads * b.config.d_head  # untouched


def test_the_twins_decode_timing():
    b = tfviz.load("llama-tiny")
    timing = own_decode_times(b, new_tokens=4, repeats=1)
    assert [(r.variant, r.kv_heads, r.cache_bytes_per_token) for r in timing.rows] == [
        ("GQA", 2, 768), ("MHA", 4, 1536)]
    assert timing.contexts == (8, 96) and all(ms > 0 for r in timing.rows for ms in r.ms_per_token)
    first, _ = gqa.decode_reading(timing)
    assert "GQA" in first and "MHA" in first and "three" not in first
    assert timeable(b.config) and not timeable(b.config.replace(max_seq_len=40))
