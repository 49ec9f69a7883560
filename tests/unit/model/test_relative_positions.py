"""Shaw et al.'s relative positions (positional="relative") and T5's bucketed bias
(positional="t5_bias"): the model against the float64 formulas of tfviz.reference, T5's buckets
against transformers' own T5Attention._relative_position_bucket, and a cached decode against a
full re-read.

Tolerances: the model computes in float32 and the reference in float64 from the same float32
weights and activations. Scores are sums of 16 products of numbers around 1, so the float32
result is within a few ulps (~1e-7 relative) of the exact one, but a sum whose order depends on
the BLAS kernel and thread count can land on either side: rtol=1e-5 with atol=1e-6 (for entries
near 0) holds on any CPU. Table lookups (a^K_ij, a^V_ij, T5's bias) copy float32 numbers and
are compared exactly.
"""
import math

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig, preset
from tfviz.model import Transformer
from tfviz.model.positional import relative_distance, shaw_index, t5_bucket
from tfviz.reference import causal_mask, relative_attention, t5_bias
from tfviz.reference import t5_bucket as t5_bucket_ref
from tfviz.trace import run_with_trace

RTOL, ATOL = 1e-5, 1e-6
IDS = [5, 17, 3, 99, 42, 8, 8, 250, 11, 60, 7, 31]

BUCKETINGS = [(32, 128), (16, 64), (8, 20), (4, 3), (10, 40), (6, 100), (64, 512)]


# ----- buckets ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("n_buckets, max_distance", BUCKETINGS)
def test_buckets_are_transformers_own(bidirectional, n_buckets, max_distance):
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5",
                             reason="transformers (a dev dependency) is not installed")
    rel = torch.arange(-1100, 1101)  # both directions, past max_distance
    theirs = t5.T5Attention._relative_position_bucket(rel, bidirectional=bidirectional,
                                                      num_buckets=n_buckets, max_distance=max_distance)
    ours = t5_bucket(rel, bidirectional, n_buckets, max_distance)
    assert torch.equal(ours, theirs)
    # the float64 formula agrees with transformers' float32 one, boundaries included
    assert np.array_equal(t5_bucket_ref(rel.numpy(), bidirectional, n_buckets, max_distance), theirs.numpy())


def test_bucket_layout_by_hand():
    near = -torch.arange(16)
    assert t5_bucket(near, False).tolist() == list(range(16))  # a decoder: 16 exact distances
    assert t5_bucket(torch.tensor([1, 5]), False).tolist() == [0, 0]  # later keys: bucket 0
    # an encoder: 8 exact distances each way, keys after the query in buckets 16..31
    assert t5_bucket(torch.tensor([-7, 0, 7, 8]), True).tolist() == [7, 0, 23, 24]
    # ln(d/8) / ln(16) * 8 = 2 log2(d/8): distances 16 and 32 open buckets 10 and 12
    assert t5_bucket(-torch.tensor([15, 16, 31, 32, 127, 128]), True).tolist() == [9, 10, 11, 12, 15, 15]


def test_shaw_index_clips_both_ways():
    idx = shaw_index(torch.arange(4), torch.arange(4), clip=2)
    assert idx.tolist() == [[2, 3, 4, 4], [1, 2, 3, 4], [0, 1, 2, 3], [0, 0, 1, 2]]
    assert relative_distance(torch.tensor([3]), torch.arange(4)).tolist() == [[-3, -2, -1, 0]]


# ----- Shaw et al. -------------------------------------------------------------------------------
SHAW_CONFIGS = {
    "decoder": dict(arch="decoder"),
    "encoder, clip 2": dict(arch="encoder", rel_clip=2),
    "decoder, GQA, clip 3, pre-LN": dict(arch="decoder", n_kv_heads=2, rel_clip=3, norm="pre", final_norm=True),
    "decoder, unscaled": dict(arch="decoder", scale_attn=False, rel_clip=4),
}


@pytest.mark.parametrize("kw", SHAW_CONFIGS.values(), ids=SHAW_CONFIGS)
def test_shaw_model_matches_the_reference(kw):
    cfg = ModelConfig(positional="relative", n_layers=2, **kw)
    model = Transformer(cfg).eval()
    tr = run_with_trace(model, IDS)
    n, group = len(IDS), cfg.n_heads // cfg.kv_heads
    mask = causal_mask(n) if cfg.causal else None
    for layer in range(cfg.n_layers):
        attn = model.blocks[layer].attn
        q = tr["q", layer].transpose(1, 0, 2)  # (H, n, dh)
        k = np.repeat(tr["k", layer].transpose(1, 0, 2), group, axis=0)  # (H, n, dh)
        v = np.repeat(tr["v", layer].transpose(1, 0, 2), group, axis=0)
        ref = relative_attention(q, k, v, attn.rel_k.weight.detach().numpy(),
                                 attn.rel_v.weight.detach().numpy(), cfg.rel_clip, mask=mask,
                                 scale=cfg.scale_attn)
        # the vectors each pair read are the table's rows, copied
        assert np.array_equal(tr["rel_k", layer], attn.rel_k.weight.detach().numpy()[ref.index])
        assert np.array_equal(tr["rel_v", layer], attn.rel_v.weight.detach().numpy()[ref.index])
        np.testing.assert_allclose(tr["rel_scores", layer], ref.rel_scores, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tr["scores_raw", layer], ref.scores, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tr["attn_scores_unmasked", layer], ref.scaled, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tr["pattern", layer], ref.weights, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tr["rel_z", layer], ref.rel_output.transpose(1, 0, 2), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tr["z", layer], ref.output.transpose(1, 0, 2), rtol=RTOL, atol=ATOL)


def test_shaw_tables_per_layer_shared_by_heads_and_not_in_cross_attention():
    model = Transformer(ModelConfig(positional="relative", arch="encoder-decoder", n_layers=2, rel_clip=5))
    for block in (*model.enc_blocks, *model.blocks):
        assert block.attn.rel_k.weight.shape == block.attn.rel_v.weight.shape == (11, 16)  # 2k+1 rows, d_head
    assert model.blocks[0].attn.rel_k.weight.data_ptr() != model.blocks[1].attn.rel_k.weight.data_ptr()
    assert all(b.cross_attn.rel_k is None for b in model.blocks)
    assert not any("cross_attn.hook_rel" in n for n in run_with_trace(model, [1, 2], enc_ids=[3, 4, 5]).names())


# ----- T5 ----------------------------------------------------------------------------------------
T5_CONFIGS = {
    "decoder": dict(arch="decoder"),
    "encoder": dict(arch="encoder"),
    "decoder, small buckets, unscaled (T5's own score)": dict(arch="decoder", rel_buckets=8,
                                                              rel_max_distance=6, scale_attn=False),
    "encoder, GQA": dict(arch="encoder", n_kv_heads=1, rel_buckets=6, rel_max_distance=5),
}


@pytest.mark.parametrize("kw", T5_CONFIGS.values(), ids=T5_CONFIGS)
def test_t5_model_matches_the_reference(kw):
    cfg = ModelConfig(positional="t5_bias", n_layers=3, **kw)
    model = Transformer(cfg).eval()
    tr = run_with_trace(model, IDS)
    n, group = len(IDS), cfg.n_heads // cfg.kv_heads
    table = model.blocks[0].attn.rel_pos_bias.weight.detach().numpy()  # (n_buckets, H)
    assert table.shape == (cfg.rel_buckets, cfg.n_heads)
    bias = t5_bias(table, n, n, bidirectional=not cfg.causal, max_distance=cfg.rel_max_distance)
    for layer in range(cfg.n_layers):
        assert np.array_equal(tr["rel_pos_bias", layer], bias)  # one table, every layer adds it
        q = tr["q", layer].transpose(1, 0, 2).astype(np.float64)  # (H, n, dh)
        k = np.repeat(tr["k", layer].transpose(1, 0, 2), group, axis=0).astype(np.float64)
        scores = q @ k.transpose(0, 2, 1)
        scaled = (scores / math.sqrt(cfg.d_head) if cfg.scale_attn else scores) + bias
        np.testing.assert_allclose(tr["attn_scores_unmasked", layer], scaled, rtol=RTOL, atol=ATOL)
    assert not hasattr(model.blocks[1].attn, "rel_pos_bias")  # only the first layer holds it


def test_t5_encoder_decoder_has_a_table_per_stack_and_none_in_cross_attention():
    model = Transformer(ModelConfig(positional="t5_bias", arch="encoder-decoder", n_layers=2)).eval()
    tr = run_with_trace(model, [1, 2, 3], enc_ids=[4, 5, 6, 7])
    enc_table = model.enc_blocks[0].attn.rel_pos_bias.weight.detach().numpy()
    dec_table = model.blocks[0].attn.rel_pos_bias.weight.detach().numpy()
    assert not np.array_equal(enc_table, dec_table)
    assert np.array_equal(tr["rel_pos_bias", 0, "enc"], t5_bias(enc_table, 4, 4, bidirectional=True))
    assert np.array_equal(tr["rel_pos_bias", 1], t5_bias(dec_table, 3, 3, bidirectional=False))
    assert not any("cross_attn.hook_rel" in n for n in tr.names())


def test_t5_decoder_buckets_stay_causal_when_a_what_if_lifts_the_mask():
    """T5 buckets a decoder's distances one way (bidirectional=False) because the model was
    built so; lifting the mask for an experiment shows later keys in bucket 0, not new buckets."""
    from tfviz.config import RunOptions
    model = Transformer(ModelConfig(positional="t5_bias", n_layers=1)).eval()
    tr = run_with_trace(model, [1, 2, 3], options=RunOptions(causal=False))
    table = model.blocks[0].attn.rel_pos_bias.weight.detach().numpy()
    assert np.array_equal(tr["rel_pos_bias", 0], t5_bias(table, 3, 3, bidirectional=False))


# ----- both ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("positional", ["relative", "t5_bias"])
@pytest.mark.parametrize("kw", [{}, {"n_kv_heads": 2}, {"rel_clip": 2, "rel_buckets": 8, "rel_max_distance": 5}])
def test_cached_decoding_equals_a_full_reread(positional, kw):
    """Keys and values carry no position here; each cached step rebuilds its row of distances
    from the real positions, so it reads the same table rows as the full pass. Logits from two
    float32 paths (different matrix shapes, so different summation orders): 1e-5 relative."""
    model = Transformer(ModelConfig(positional=positional, **kw)).eval()
    ids = torch.tensor([IDS + IDS[:8]])  # 20 tokens: distances past every clip and exact bucket
    with torch.no_grad():
        full = model(ids)
        logits, cache = model.step(ids[:, :5])
        steps = [logits]
        for t in range(5, ids.shape[1]):
            logits, cache = model.step(ids[:, t:t + 1], cache)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("positional", ["relative", "t5_bias"])
def test_generate_with_and_without_the_cache_agree(positional):
    from tfviz.decoding import generate
    import tfviz
    b = tfviz.load(f"gpt-tiny-{'relative' if positional == 'relative' else 't5'}")
    fast = generate(b, "the dog", max_new_tokens=12, use_cache=True)
    slow = generate(b, "the dog", max_new_tokens=12, use_cache=False)
    assert fast.ids == slow.ids


@pytest.mark.parametrize("positional", ["relative", "t5_bias"])
def test_reads_past_its_context(positional):
    """Distances past the clip (Shaw) or max_distance (T5) share the edge row or the last
    bucket, so, as with RoPE and ALiBi, nothing stops a longer text."""
    model = Transformer(ModelConfig(positional=positional, max_seq_len=8, rel_clip=2, n_layers=1)).eval()
    assert model(torch.arange(20)[None]).shape == (1, 20, 512)


@pytest.mark.parametrize("bad, words", [
    (dict(rel_clip=0), "rel_clip"), (dict(rel_buckets=7), "rel_buckets"), (dict(rel_buckets=2), "rel_buckets"),
    (dict(rel_buckets=32, rel_max_distance=16), "rel_max_distance")])
def test_config_refuses_bad_sizes(bad, words):
    with pytest.raises(ValueError, match=words):
        ModelConfig(positional="t5_bias", **bad)


def test_the_other_presets_build_the_weights_they_always_did():
    """New tables are made only for the new schemes, so no other model's random start moves."""
    names = {n for n, _ in Transformer(preset("gpt-tiny")).named_parameters()}
    assert not any("rel_" in n for n in names)


def test_facts_report_the_scheme_and_its_sizes():
    import tfviz
    from tfviz.config import POSITIONALS
    from tfviz.facts import POSITION_NAMES, POSITION_SHORT, model_facts

    shaw, t5, gpt = (tfviz.load(n).facts for n in ("gpt-tiny-relative", "gpt-tiny-t5", "gpt-tiny"))
    assert (shaw.positions, shaw.rel_clip, shaw.t5_buckets, shaw.adds_positions, shaw.relative) == \
        ("relative", 16, None, False, True)
    assert shaw.positions_name == "Shaw et al.'s relative position vectors inside attention"
    assert (t5.positions, t5.rel_clip, t5.t5_buckets, t5.t5_max_distance, t5.t5_bidirectional) == \
        ("t5_bias", None, 32, 128, False)
    assert t5.positions_name == "T5's bucketed relative position bias on the attention scores"
    assert (gpt.rel_clip, gpt.t5_buckets, gpt.adds_positions, gpt.relative) == (None, None, True, False)
    # an encoder's table splits its buckets between the two directions
    enc = model_facts("e", ModelConfig(positional="t5_bias", arch="encoder", rel_buckets=8, rel_max_distance=9),
                      tfviz.load("gpt-tiny-t5").tokenizer, {}, False, {"w": 1})
    assert (enc.t5_buckets, enc.t5_max_distance, enc.t5_bidirectional) == (8, 9, True)
    assert set(POSITION_SHORT) == set(POSITION_NAMES) == set(POSITIONALS)  # every scheme is named
