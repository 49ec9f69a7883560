"""Lesson 16's numbers against independent references: generate() for the ids, the model's own
trace (a full recompute) for the 1 × t rows, the real cache tensors and the formula by hand for
the bytes, torch's FlopCounterMode for the multiply-adds. Timings: structure only, never speed."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import tfviz
from tfviz.config import ModelConfig, preset
from tfviz.decoding import PUBLISHED_MODELS, generate, kv_cache_bytes
from tfviz.decoding.memory import human_bytes
from tfviz.analysis import kv_cache_cost as kcost
from tfviz.experiments import kv_cache as kc
from tfviz.experiments import kv_cache_lengths as klen
from tfviz.model import Transformer
from tfviz.model.hooks import recording
from tfviz.reference import softmax
from tfviz.trace import run_with_trace

PROMPT = "the dog"
# float32 model vs the float64 row recomputed from the same q and K: rounding of float32 only
ROW_TOL = 1e-5


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


@pytest.fixture(scope="module")
def side(gpt):
    return kc.side_by_side(gpt, gpt.encode(PROMPT), 20)


def test_both_runs_write_what_generate_writes(gpt, side):
    ids = gpt.encode(PROMPT)
    with_cache = generate(gpt, ids, max_new_tokens=20, use_cache=True).new_ids
    without = generate(gpt, ids, max_new_tokens=20, use_cache=False).new_ids
    assert side.cached_ids == with_cache and side.uncached_ids == without
    assert side.identical and side.first_difference is None
    assert gpt.tokenizer.decode(side.cached_ids).startswith("didn't leave the bridge")
    assert side.stop_reason == "eos" and side.cached_ids[-1] == gpt.tokenizer.eos_id
    assert all(s.logit_gap < 1e-4 for s in side.steps)  # float32 rounding, different sum order


def test_every_step_has_its_shapes_and_counts(gpt, side):
    n = len(side.prompt_ids)
    assert len(side.steps) == len(side.cached_ids)
    for s, step in enumerate(side.steps):
        t = n + s
        assert (step.index, step.t) == (s, t)
        assert step.tokens_in_cached == (n if s == 0 else 1) and step.tokens_in_uncached == t
        assert step.cache_shape == (3, 2, 4, t, 16)  # layers × K,V × K/V heads × t × d_head
        assert step.cache_bytes == 2 * 3 * 4 * 16 * t * 4 == kv_cache_bytes(3, 4, 16, t, 1, 4)
        assert step.read == (side.prompt_ids + side.cached_ids)[t - 1]
        assert step.wrote == side.cached_ids[s]
        # live timings: only that they are real positive numbers
        assert math.isfinite(step.ms_cached) and step.ms_cached > 0
        assert math.isfinite(step.ms_uncached) and step.ms_uncached > 0
        assert side.rows[s].shape == side.scores[s].shape == (3, 4, t)


def test_the_new_row_is_the_last_row_of_the_full_recompute(gpt, side):
    """The row from the cached keys against the new query equals the last query row of a
    separate full trace of the same tokens: weights (hook_pattern) and scaled scores."""
    ids = side.prompt_ids + side.cached_ids
    for s, step in enumerate(side.steps):
        tr = run_with_trace(gpt.model, list(ids[:step.t]))
        for layer in range(3):
            np.testing.assert_allclose(side.rows[s][layer], tr["pattern", layer][:, -1], atol=ROW_TOL)
            np.testing.assert_allclose(side.scores[s][layer], tr["attn_scores", layer][:, -1],
                                       atol=1e-4, rtol=1e-5)  # scores reach ~10: relative float32
        assert step.row_gap < ROW_TOL
        np.testing.assert_allclose(side.rows[s].sum(-1), 1.0, atol=1e-12)  # float64 rows


def test_rows_by_hand_from_the_trace_q_and_k(gpt):
    """Independent of the model's attention: softmax(q·kᵀ/√16) from the trace's q and k."""
    ids = gpt.encode("the animal didn't cross the street")
    side = kc.side_by_side(gpt, ids, 1)
    tr = run_with_trace(gpt.model, ids)
    for layer in range(3):
        q, k = tr["q", layer][-1], tr["k", layer]  # (H, dh), (t, H, dh)
        want = softmax(np.einsum("hd,thd->ht", q.astype(float), k.astype(float)) / 4.0, axis=-1)
        np.testing.assert_allclose(side.rows[0][layer], want, atol=ROW_TOL)


@pytest.mark.parametrize("kw", [{"positional": "rope"}, {"positional": "alibi"}, {"n_kv_heads": 2},
                                {"n_kv_heads": 1, "positional": "rope"},
                                {"positional": "relative", "rel_clip": 3},
                                {"positional": "t5_bias", "rel_buckets": 8, "rel_max_distance": 6},
                                {"attn_pattern": "sliding", "window": 2}, {"scale_attn": False}])
def test_new_query_rows_on_other_attention_kinds(kw):
    """RoPE (rotated q), ALiBi (bias), Shaw's relative keys and T5's bias (from the model's
    tables), GQA/MQA (shared K/V heads), a sparse pattern and no scaling: the row from the cache
    equals the full trace's last row."""
    cfg = ModelConfig(n_layers=2, vocab_size=50, **kw)
    model = Transformer(cfg).eval()
    ids = [3, 14, 15, 9, 26, 5, 35, 8, 9]
    qname = "attn.hook_rot_q" if cfg.positional == "rope" else "attn.hook_q"
    allowed = model.pattern_allowed.numpy() if cfg.attn_pattern != "full" else None
    with torch.no_grad():
        _, cache = model.step(torch.tensor([ids[:-1]]))
        with recording(lambda n: n.endswith(qname)) as seen:
            _, cache = model.step(torch.tensor([ids[-1:]]), cache)
    queries = [seen[f"blocks.{i}.{qname}"] for i in range(2)]
    _, rows = kc.new_query_rows(cfg, queries, cache, allowed=allowed, model=model)
    tr = run_with_trace(model, ids)
    for layer in range(2):
        np.testing.assert_allclose(rows[layer], tr["pattern", layer][:, -1], atol=ROW_TOL)


@pytest.mark.parametrize("name", ["gpt-tiny", "moe-tiny", "llama-tiny"])  # llama-tiny: SwiGLU's 3 matrices
@pytest.mark.parametrize("t", [2, 7, 40])  # at t = 1 torch turns an einsum into a plain product
@pytest.mark.parametrize("cached", [True, False])
def test_step_macs_are_what_torch_counts(name, t, cached):
    """torch's FlopCounterMode counts the matrix products actually run (2 flops each)."""
    model = tfviz.load(name).model
    ids = torch.tensor([klen.fill_ids([5, 6, 7], t)])
    with torch.no_grad():
        cache = model.step(ids[:, :-1])[1] if cached and t > 1 else None
        with FlopCounterMode(display=False) as counter:
            model.step(ids[:, -1:], cache) if cached else model(ids)
    assert sum(kcost.step_macs(model.cfg, t, cached).values()) == counter.get_total_flops() // 2


def test_step_macs_and_cells_by_hand():
    cfg = preset("gpt-tiny")  # d 64, 4 heads of 16, d_ff 256, 3 layers, 600 tokens
    rest_one = 3 * (64 * 12 * 16 + 64 * 64 + 2 * 64 * 256) + 64 * 600
    assert kcost.step_macs(cfg, 100, True) == {"attention": 3 * 2 * 100 * 64, "rest": rest_one}
    assert kcost.step_macs(cfg, 100, False) == {"attention": 3 * 2 * 100 * 100 * 64, "rest": 100 * rest_one}
    assert kcost.score_cells(cfg, 100, True) == 3 * 4 * 100
    assert kcost.score_cells(cfg, 100, False) == 3 * 4 * 100 * 100


def test_cost_over_lengths_and_a_stretched_copy(gpt):
    shared = gpt.model
    table_before, cfg_before = shared.pos_table.clone(), shared.cfg
    long = klen.stretched(shared, 256)
    assert long is not shared and long.cfg.max_seq_len == 256
    assert shared.cfg is cfg_before and torch.equal(shared.pos_table, table_before)  # untouched
    assert klen.stretched(shared, 128) is shared
    ids = torch.tensor([klen.fill_ids(gpt.encode(PROMPT), 100)])
    with torch.no_grad():
        assert torch.equal(long(ids), shared(ids))  # the same model where both can read
    rows = klen.cost_over_lengths(long, gpt.encode(PROMPT), klen.lengths_up_to(256), repeats=1)
    assert [r.t for r in rows] == [32, 64, 96, 128, 192, 256]
    for r in rows:
        assert r.ms_cached > 0 and r.ms_uncached > 0 and math.isfinite(r.ms_uncached)
        assert r.macs_cached == sum(kcost.step_macs(gpt.config, r.t, True).values())
        assert r.attn_macs_uncached == 3 * 2 * r.t * r.t * 64
        assert r.cells_uncached == 12 * r.t ** 2 and r.cells_cached == 12 * r.t
    with pytest.raises(ValueError, match="cannot read more"):
        klen.stretched(Transformer(ModelConfig(positional="learned")), 256)


def test_memory_calculator_by_hand():
    m = kcost.cache_memory(32, 32, 128, 4096)  # Llama-2-7B, fp16, one sequence
    assert m.total == 32 * 2 * 32 * 128 * 4096 * 2 == 2 * 2**30
    assert human_bytes(m.total) == "2.00 GiB"
    assert kcost.cache_memory(80, 8, 128, 4096, 8, 4).total == 80 * 2 * 8 * 128 * 4096 * 8 * 4
    assert math.prod(v for _, v in m.factors) == m.total
    rows = {r["model"]: r for r in kcost.published_table()}
    assert [m.name for m in PUBLISHED_MODELS] == list(rows)
    assert rows["GPT-2 small"]["bytes per token"] == 2 * 12 * 12 * 64 * 2 == 36 * 1024
    assert rows["Mistral-7B (GQA)"]["bytes per token"] == 2 * 32 * 8 * 128 * 2 == 128 * 1024
    # Mistral-7B reads 8192 tokens but attends within a window of 4096 (Jiang et al. 2023,
    # table 1): its rolling cache, and so its row, holds 4096 tokens, not 8192
    mistral = rows["Mistral-7B (GQA)"]
    assert (mistral["context"], mistral["tokens cached"]) == (8192, 4096)
    assert mistral["bytes at full context"] == 128 * 1024 * 4096 == 2**29
    assert mistral["at full context"] == "512 MiB"
    assert rows["Llama-2-7B"]["tokens cached"] == rows["Llama-2-7B"]["context"] == 4096
    assert rows["Llama-2-70B (GQA)"]["at full context"] == "1.25 GiB"
    assert human_bytes(3 * 2**40 * 1000) == "3,000 TiB" and human_bytes(1023) == "1023 bytes"


def test_moe_runs_each_match_generate():
    moe = tfviz.load("moe-tiny")
    ids = moe.encode("the cat sat near the lake and")
    side = kc.side_by_side(moe, ids, 12)
    assert side.cached_ids == generate(moe, ids, max_new_tokens=12, use_cache=True).new_ids[:len(side.cached_ids)]
    assert side.uncached_ids == generate(moe, ids, max_new_tokens=12, use_cache=False).new_ids[:len(side.uncached_ids)]


def test_bad_inputs_say_what_is_wrong(gpt):
    with pytest.raises(ValueError, match="decoder-only"):
        kc.side_by_side(tfviz.load("bert-tiny"), [5, 6], 3)
    with pytest.raises(ValueError, match="empty"):
        kc.side_by_side(gpt, [], 3)
    full = kc.side_by_side(gpt, klen.fill_ids(gpt.encode(PROMPT), 127), 5)
    assert full.stop_reason in ("context", "eos") and len(full.steps) == 1


def test_a_rolling_cache_holds_the_window():
    """cached_tokens against the mask itself: with a sliding window of w over n tokens, the keys
    any query still reads (and later queries will read) are at most the last w."""
    import numpy as np

    from tfviz.decoding.memory import PublishedModel

    for n, w in ((12, 4), (5, 8), (9, 9)):
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        reads = (j <= i) & (j > i - w)  # causal, within the last w tokens, itself included
        needed = max(int(reads[q:, :q + 1].any(axis=0).sum()) for q in range(n))  # live at step q
        m = PublishedModel("m", 1, 1, 1, 1, n, "test", w)
        assert m.cached_tokens == needed == min(n, w)
    assert PublishedModel("m", 1, 1, 1, 1, 7, "test").cached_tokens == 7
