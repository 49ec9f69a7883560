"""Lesson 18: grouped-query attention is multi-head attention whose K/V heads are repeated.

Reference: torch.nn.functional.scaled_dot_product_attention on K and V repeated with
repeat_interleave (query head h reads K/V head h // group), a second implementation that
shares nothing with tfviz's einsum/softmax path except the projection weights.
"""
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import KV_PRESET_NAMES, PRESET_NAMES, ModelConfig, preset
from tfviz.analysis import gqa
from tfviz.decoding.memory import config_kv_cache_bytes, kv_cache_bytes
from tfviz.model.attention import Attention, AttnContext
from tfviz.training.recipes import RECIPES


@pytest.mark.parametrize("n_kv", [4, 2, 1])  # MHA, GQA (2 query heads per K/V head), MQA
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_equals_sdpa_with_repeated_kv(n_kv, causal):
    H, dh, T, B = 4, 8, 7, 2
    cfg = ModelConfig(d_model=H * dh, n_heads=H, n_kv_heads=n_kv)
    torch.manual_seed(0)
    attn = Attention(cfg)
    x = torch.randn(B, T, cfg.d_model)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None] if causal else None
    store = {}
    handle = attn.hook_pattern.register_forward_hook(lambda m, i, o: store.update(p=o))
    with torch.no_grad():
        out, (k_cache, v_cache) = attn(x, AttnContext(allowed=allowed, scale=True))
        handle.remove()
        q = attn.W_q(x).view(B, T, H, dh).transpose(1, 2)  # (B, H, T, dh)
        k = attn.W_k(x).view(B, T, n_kv, dh).transpose(1, 2)  # (B, Hkv, T, dh)
        v = attn.W_v(x).view(B, T, n_kv, dh).transpose(1, 2)
        k_rep, v_rep = (t.repeat_interleave(H // n_kv, dim=1) for t in (k, v))  # (B, H, T, dh)
        ref = F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=causal)
        ref = attn.W_o(ref.transpose(1, 2).reshape(B, T, H * dh))
        # the attention weights themselves, written out: softmax(q k^T / sqrt(dh)) with the mask
        scores = q @ k_rep.transpose(-1, -2) / dh ** 0.5
        if causal:
            scores = scores.masked_fill(~allowed, float("-inf"))
        ref_pattern = scores.softmax(-1)
    # float32 sums in a different order: differences of a few ulps, far below 1e-5
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(store["p"], ref_pattern, atol=1e-5, rtol=1e-5)
    # the cache keeps only the n_kv heads: what makes GQA/MQA cheaper to decode
    assert k_cache.shape == v_cache.shape == (B, T, n_kv, dh)


def test_query_heads_in_a_group_share_keys():
    """With 2 K/V heads, query heads 0,1 read K/V head 0 and 2,3 read K/V head 1: giving two
    heads of a group the same query weights gives them the same attention map."""
    cfg = ModelConfig(d_model=32, n_heads=4, n_kv_heads=2)
    torch.manual_seed(1)
    attn = Attention(cfg)
    with torch.no_grad():
        W = attn.W_q.weight.view(4, 8, 32)
        W[1] = W[0]
        W[3] = W[0]
        attn.W_q.bias.view(4, 8)[1] = attn.W_q.bias.view(4, 8)[0]
        attn.W_q.bias.view(4, 8)[3] = attn.W_q.bias.view(4, 8)[0]
        store = {}
        handle = attn.hook_pattern.register_forward_hook(lambda m, i, o: store.update(p=o))
        attn(torch.randn(1, 5, 32), AttnContext(allowed=None, scale=True))
        handle.remove()
    p = store["p"][0]
    torch.testing.assert_close(p[0], p[1])  # same query, same K head: identical maps
    assert not torch.allclose(p[0], p[3], atol=1e-3)  # same query, other K head: different


def test_comparison_presets_differ_from_gpt_tiny_only_in_kv_heads():
    gpt = preset("gpt-tiny")
    for name, n_kv in zip(KV_PRESET_NAMES, (2, 1)):
        cfg = preset(name)
        assert name not in PRESET_NAMES  # kept out of the sidebar's model list
        assert cfg.kv_heads == n_kv and cfg.n_heads == gpt.n_heads == 4
        assert {**vars(cfg), "name": "", "n_kv_heads": None} == {**vars(gpt), "name": "", "n_kv_heads": None}
        a, b = RECIPES[name], RECIPES["gpt-tiny"]
        assert (a.steps, a.batch_size, a.lr, a.seed, a.warmup) == (b.steps, b.batch_size, b.lr, b.seed, b.warmup)
    # per token, fp32: 2 (K,V) * 3 layers * kv_heads * 16 * 4 bytes
    assert [config_kv_cache_bytes(preset(n), 1) for n in ("gpt-tiny", *KV_PRESET_NAMES)] == [1536, 768, 384]


def test_bundled_variants_record_the_trade_off_on_gpt_tinys_data():
    import json

    from tfviz.bundle import ASSETS
    import tfviz
    gpt = json.loads((ASSETS / "gpt-tiny" / "manifest.json").read_text())
    for name, n_kv in zip(KV_PRESET_NAMES, (2, 1)):
        b = tfviz.load(name)
        ev, data = b.manifest["eval"], b.manifest["data"]
        assert b.trained and ev["kv_heads"] == n_kv == b.config.kv_heads
        assert ev["kv_cache_bytes_per_token"] == 2 * 3 * n_kv * 16 * 4  # K and V, 3 layers, fp32
        assert ev["parameters"] == sum(p.numel() for p in b.model.parameters())
        # the same data as gpt-tiny, so the validation losses compare like with like
        assert {k: v for k, v in data.items() if k not in ("compared_with", "heldout")} == \
            {k: v for k, v in gpt["data"].items() if k != "heldout"}
        assert ev["val_sentences"] == gpt["eval"]["val_sentences"]
        assert b.model.blocks[0].attn.W_k.weight.shape[0] == n_kv * 16  # W^K shrinks with the K/V heads
    # gpt-tiny is the MHA row of the comparison and records the same numbers for itself
    mha = tfviz.load("gpt-tiny")
    assert gpt["eval"]["kv_heads"] == 4 == mha.config.kv_heads
    assert gpt["eval"]["kv_cache_bytes_per_token"] == 2 * 3 * 4 * 16 * 4
    assert gpt["eval"]["parameters"] == sum(p.numel() for p in mha.model.parameters())


class _LlamaLayer(torch.nn.Module):
    """One Llama block's parameters, built as torch modules on the meta device (no memory)."""

    def __init__(self, s):
        super().__init__()
        kv = s.n_kv_heads * s.d_head
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False, device="meta")  # noqa: E731
        self.q, self.k, self.v, self.o = lin(s.d_model, s.d_model), lin(s.d_model, kv), \
            lin(s.d_model, kv), lin(s.d_model, s.d_model)
        self.gate, self.up, self.down = lin(s.d_model, s.d_ff), lin(s.d_model, s.d_ff), lin(s.d_ff, s.d_model)
        self.norms = torch.nn.ModuleList(torch.nn.RMSNorm(s.d_model, device="meta") for _ in range(2))


@pytest.mark.parametrize("sizes, published", zip(gqa.LLAMA_2, (6_738_415_616, 68_976_648_192)))
def test_llama_params_count_the_real_modules(sizes, published):
    """Second count: Llama's modules built in torch (meta device) and their elements added up;
    third: the parameter counts the released checkpoints report."""
    one = sum(p.numel() for p in _LlamaLayer(sizes).parameters())
    ends = 2 * sum(p.numel() for p in torch.nn.Embedding(sizes.vocab_size, sizes.d_model, device="meta")
                   .parameters()) + sizes.d_model  # embedding, output matrix, final RMSNorm
    assert gqa.llama_params(sizes) == sizes.n_layers * one + ends == published


@pytest.mark.parametrize("name", ["gpt-tiny", "gqa-tiny", "mqa-tiny"])
def test_our_crossing_point_is_where_cache_bytes_reach_the_real_weights(name):
    import tfviz

    bundle = tfviz.load(name)
    real = sum(p.numel() * p.element_size() for p in bundle.model.parameters())  # fp32 tensors
    c = gqa.config_crossing(bundle.config)
    assert c.weight_bytes == real
    cfg = bundle.config
    below, above = (kv_cache_bytes(cfg.n_layers, cfg.kv_heads, cfg.d_head, int(t), bytes_per_value=4)
                    for t in (c.tokens // 1, -(-c.tokens // 1)))
    assert below <= real <= above and above - below <= c.cache_bytes_per_token
    assert c.full_sequences == pytest.approx(c.tokens / 128)


def test_llama_2_7b_cache_stays_below_its_weights_at_full_context():
    """The issue's numbers: at 4096 tokens a 2 GiB cache against about 13 GB of fp16 weights; the
    cache catches up only after ~25.7k tokens, and GQA's 70B much later (8 K/V heads of 64)."""
    seven, seventy = (gqa.llama_crossing(s) for s in gqa.LLAMA_2)
    assert seven.full_context_bytes == kv_cache_bytes(32, 32, 128, 4096) == 2 * 2**30
    assert seven.weight_bytes == 2 * 6_738_415_616
    assert seven.full_context_bytes < seven.weight_bytes
    assert int(seven.tokens) == 25_705 and kv_cache_bytes(32, 32, 128, 25_706) > seven.weight_bytes
    assert int(seventy.tokens) == 421_000 and seventy.full_sequences > 100


# --- decode time per token, measured (tfviz.experiments.gqa_decode) ------------------------------


@pytest.fixture(scope="module")
def three_bundles():
    import tfviz

    return {variant: tfviz.load(model) for variant, model in gqa.VARIANTS}


@pytest.fixture(scope="module")
def small_timing(three_bundles):
    from tfviz.experiments.gqa_decode import decode_times

    return decode_times(three_bundles, contexts=(20, 3), new_tokens=4, repeats=3)


def test_decode_times_measures_all_three_with_their_cache_bytes(small_timing, three_bundles):
    """No timed assertion: the structure, positive times, and the bytes per token against the
    configs, written out by hand (2 for K and V · layers · K/V heads · d_head · 4 bytes)."""
    import statistics

    t = small_timing
    assert t.contexts == (3, 20) and t.new_tokens == 4 and t.repeats == 3 and t.threads == 1
    assert [(r.variant, r.model, r.kv_heads) for r in t.rows] == \
        [("MHA", "gpt-tiny", 4), ("GQA", "gqa-tiny", 2), ("MQA", "mqa-tiny", 1)]
    for r in t.rows:
        cfg = three_bundles[r.variant].config
        assert (cfg.n_layers, cfg.d_head) == (3, 16)
        assert r.cache_bytes_per_token == 2 * 3 * r.kv_heads * 16 * 4 == \
            2 * cfg.n_layers * cfg.kv_heads * cfg.d_head * 4
        assert len(r.ms_per_token) == len(r.rounds) == 2
        for median, rounds in zip(r.ms_per_token, r.rounds):
            assert len(rounds) == 3 and all(0 < ms < float("inf") for ms in rounds)
            assert median == statistics.median(rounds)
    assert [r.cache_bytes_per_token for r in t.rows] == [1536, 768, 384]
    assert t.spread(3) >= 1 and t.spread(20) >= 1
    assert t.growth(t.rows[0]) == t.rows[0].ms_per_token[1] / t.rows[0].ms_per_token[0]
    assert "cores" in t.cpu and t.measured_at.endswith("UTC")


def test_cache_bytes_are_counted_from_the_cache_tensors(three_bundles):
    from tfviz.experiments.gqa_decode import cache_bytes

    for bundle in three_bundles.values():
        cfg = bundle.config
        with torch.no_grad():
            _, cache = bundle.model.step(torch.tensor([bundle.encode("the dog didn't cross")]))
        k, v = cache.layers[0]
        assert k.shape == v.shape == (1, cache.length, cfg.kv_heads, 16) and k.dtype == torch.float32
        assert cache_bytes(cache) == kv_cache_bytes(3, cfg.kv_heads, 16, cache.length, bytes_per_value=4)


def test_decode_times_puts_the_thread_count_back_and_leaves_the_model_alone(three_bundles):
    from tfviz.experiments.gqa_decode import decode_times

    gpt = {"MHA": three_bundles["MHA"]}
    before = {k: v.clone() for k, v in gpt["MHA"].model.state_dict().items()}
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        decode_times(gpt, contexts=(2,), new_tokens=2, repeats=1, threads=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)
    after = gpt["MHA"].model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_decode_times_refuses_what_does_not_fit(three_bundles):
    from tfviz.experiments.gqa_decode import decode_times

    with pytest.raises(ValueError, match="reads at most 128 tokens"):
        decode_times(three_bundles, contexts=(100,), new_tokens=29, repeats=1)
    with pytest.raises(ValueError, match="at least one repeat"):
        decode_times(three_bundles, repeats=0)


def _timing(ms, contexts=(8, 96)):
    from types import SimpleNamespace as R

    rows = [R(variant=v, kv_heads=h, cache_bytes_per_token=384 * h, ms_per_token=m)
            for (v, h), m in zip((("MHA", 4), ("GQA", 2), ("MQA", 1)), ms)]
    return R(rows=rows, contexts=contexts)


def test_decode_reading_says_what_the_numbers_show():
    same, flat = gqa.decode_reading(_timing([(1.0, 1.10), (1.0, 1.05), (1.0, 1.0)]))
    assert same == ("After 96 tokens MQA caches 384 bytes per token against MHA's 1536, yet all "
                    "three take about the same time per new token: the slowest is 10% slower "
                    "than the fastest.")
    assert flat == ("A step after 96 tokens took 1.00–1.10× as long as one after 8, though its "
                    "cache held 12× as many tokens: most of a step is work that does not grow "
                    "with the cache.")
    faster, grows = gqa.decode_reading(_timing([(1.0, 4.0), (1.0, 3.0), (1.0, 2.0)]))
    assert faster == ("After 96 tokens fewer K/V heads decoded faster here: MHA took 2.00× as long "
                      "per new token as MQA, for 4× the cache bytes.")
    assert grows == ("A step after 96 tokens took 2.0–4.0× as long as one after 8, its cache "
                     "holding 12× as many tokens: here the tokens held do show in the time.")
    other, _ = gqa.decode_reading(_timing([(1.0, 1.0), (1.0, 1.3), (1.0, 1.1)]))
    assert other == ("After 96 tokens MHA was fastest and GQA slowest, 30% apart: an order that "
                     "does not follow the cache bytes (MHA keeps 4× MQA's).")
