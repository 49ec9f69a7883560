"""Lesson 15's other ways of fine-tuning (#42 items 3 and 7): prefix tuning against attention
written by hand with torch's own function, prompt tuning against the same model reading real
tokens, from scratch against a new model of the config, the held-out checks against a plain
forward, and the job's progress over the ways it trains."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.data.classify import make_examples
from tfviz.model import Transformer
from tfviz.model.attention import AttnContext
from tfviz.model.hooks import recording
from tfviz.training import finetune as ftt
from tfviz.training.finetune import (MODES, FinetuneSettings, HeldOut, classifier, encode_examples,
                                     expected_trained, fine_tune, starts_like_pretraining,
                                     trained_count)
from tfviz.training.finetune_job import JobStatus
from tfviz.training.prefix_prompt import PrefixAttention, prefix_start, starting_tokens

SENTENCES = [("the cat chased the dogs.", 1), ("The chef did not cross the road because it was so wide.", 0)]


@pytest.fixture(scope="module")
def bert():
    torch.set_num_threads(1)
    return tfviz.load("bert-tiny")


def test_a_prefix_is_read_as_p_more_keys_and_values_by_every_query(bert):
    """One attention layer with a prefix, against F.scaled_dot_product_attention over the
    prefix's keys and values put before the text's, padding hidden from every query."""
    attn = bert.model.blocks[0].attn
    cfg = bert.config
    H, dh, p = cfg.n_heads, cfg.d_head, 3
    g = torch.Generator().manual_seed(0)
    pk, pv = torch.randn(p, H, dh, generator=g), torch.randn(p, H, dh, generator=g)  # (p, H, dh)
    layer = PrefixAttention(attn, pk, pv)
    x = torch.randn(2, 5, cfg.d_model, generator=g)  # (B, T, d)
    keep = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]).bool()  # the second row: 3 tokens, 2 pads
    ctx = AttnContext(allowed=keep[:, None, None, :], scale=True)
    with torch.no_grad():
        out, (k_text, _) = layer(x, ctx)
        w = bert.model.state_dict()
        q, k, v = (F.linear(x, w[f"blocks.0.attn.W_{n}.weight"], w[f"blocks.0.attn.W_{n}.bias"])
                   .view(2, 5, H, dh) for n in "qkv")  # (B, T, H, dh)
        k_all = torch.cat([pk.expand(2, p, H, dh), k], 1).transpose(1, 2)  # (B, H, p + T, dh)
        v_all = torch.cat([pv.expand(2, p, H, dh), v], 1).transpose(1, 2)
        seen = torch.cat([torch.ones(2, p, dtype=torch.bool), keep], 1)[:, None, None, :]  # (B, 1, 1, p + T)
        z = F.scaled_dot_product_attention(q.transpose(1, 2), k_all, v_all, attn_mask=seen)  # (B, H, T, dh)
        by_hand = F.linear(z.transpose(1, 2).reshape(2, 5, H * dh), w["blocks.0.attn.W_o.weight"],
                           w["blocks.0.attn.W_o.bias"])
    torch.testing.assert_close(out, by_hand, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_text, k)  # the text's own keys come back, without the prefix's
    with recording(lambda n: n == "blocks.0.attn.hook_pattern") as rec, torch.no_grad():
        layer(x, ctx)
    pattern = rec["blocks.0.attn.hook_pattern"]  # (B, H, T, p + T)
    assert pattern.shape == (2, H, 5, p + 5) and torch.all(pattern[1, :, :, p + 3:] == 0)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(2, H, 5))


def test_the_prefix_starts_as_the_layers_own_keys_and_values_of_real_tokens(bert):
    ids, mask, _ = encode_examples(bert.tokenizer, SENTENCES)
    n = int(mask[0].sum())
    start = starting_tokens(ids, mask, n + 2)  # the first sentence's tokens, then 2 of the second
    assert start.tolist() == ids[0, :n].tolist() + ids[1, :2].tolist()
    with recording(lambda n: n.endswith(("attn.hook_k", "attn.hook_v"))) as rec, torch.no_grad():
        bert.model(start[None])
    for i, (k, v) in enumerate(prefix_start(bert.model, start)):
        assert torch.equal(k, rec[f"blocks.{i}.attn.hook_k"][0]) and torch.equal(v, rec[f"blocks.{i}.attn.hook_v"][0])
    net = classifier(bert.model, "prefix tuning", start=start)
    assert all(isinstance(b.attn, PrefixAttention) and b.attn.length == n + 2 for b in net.body.blocks)
    assert not isinstance(bert.model.blocks[0].attn, PrefixAttention)  # the shared model untouched
    with pytest.raises(ValueError, match="start"):
        classifier(bert.model, "prefix tuning")


def test_a_fresh_prompt_reads_as_its_starting_tokens_before_the_text(bert):
    """Prompt tuning starts from the token embeddings of p real tokens: before its first step,
    the model reads [prompt; text] exactly as it reads those tokens' ids before the text's, and
    the mean is taken over the text's positions only."""
    ids, mask, _ = encode_examples(bert.tokenizer, SENTENCES)
    start = torch.tensor([7, 8, 9, 10])
    net = classifier(bert.model, "prompt tuning", start=start)
    assert net.prompt.shape == (4, bert.config.d_model) and net.prompt.requires_grad
    assert not net.body_frozen()  # the prompt trains: the pooled vectors change as it does
    with torch.no_grad():
        pooled = net.pool(ids, mask)  # (B, d)
        both = torch.cat([start.expand(2, 4), ids], 1)  # (B, p + T): the ids themselves
        h = net.body(both, attention_mask=torch.cat([torch.ones(2, 4, dtype=mask.dtype), mask], 1))[:, 4:]
        m = mask[..., None].float()
        torch.testing.assert_close(pooled, (h * m).sum(1) / m.sum(1), rtol=1e-5, atol=1e-6)


def test_from_scratch_is_a_new_model_of_the_same_config(bert):
    net = classifier(bert.model, "from scratch")
    fresh = Transformer(bert.config)
    body, own = net.body.state_dict(), fresh.state_dict()
    assert body.keys() == own.keys() and all(torch.equal(body[k], own[k]) for k in own)
    assert not torch.equal(body["embed.weight"], bert.model.state_dict()["embed.weight"])
    assert all(p.requires_grad for p in net.parameters())
    assert trained_count(net) == expected_trained(bert.config, "full", 4) == 138_498
    # bert-tiny's recipe builds the preset's model from its config's seed: the same start
    assert starts_like_pretraining(bert.config)
    assert not starts_like_pretraining(bert.config.replace(init_seed=7))


def test_the_cheap_held_out_check_is_a_plain_forwards(bert):
    heldout = encode_examples(bert.tokenizer, make_examples("number", 64, 1, "heldout"))
    head = classifier(bert.model, "head only", seed=2)
    cheap = HeldOut(head, heldout)
    assert cheap.features is not None  # head only: the body's vectors computed once
    assert cheap() == ftt.accuracy(head, *heldout)
    lora = HeldOut(classifier(bert.model, "LoRA"), heldout)
    assert lora.features is None


def test_every_way_trains_and_reports_its_checks(bert):
    """A short run of all six ways: what each trained and reached, its held-out checks every
    steps // 10 steps and at the last, the frozen weights untouched, the shared model too."""
    before = {k: v.clone() for k, v in bert.model.state_dict().items()}
    settings = FinetuneSettings(steps=12, train_size=128, heldout_size=48, modes=MODES, p=5)
    seen = []
    result = fine_tune(bert.model, bert.tokenizer, settings, on_progress=lambda m, s: seen.append(m))
    assert [m.mode for m in result.modes] == list(MODES) and settings.every == 1
    heldout = encode_examples(bert.tokenizer, make_examples("number", 48, ftt.HELDOUT_SEED, "heldout"))
    for m in result.modes:
        assert m.trained == m.expected == expected_trained(bert.config, m.mode, 4, p=5)
        assert [s for s, _ in m.curve] == list(range(13))  # step 0, then every step
        assert m.curve[0][1] == m.accuracy_before and m.curve[-1][1] == m.accuracy
        assert all(a * 48 == round(a * 48) for _, a in m.curve)  # shares of 48 sentences
    assert result.of("prefix tuning").accuracy_before == \
        ftt.accuracy(classifier(bert.model, "prefix tuning", 4, 0, starting_tokens(
            *encode_examples(bert.tokenizer, make_examples("number", 128, 0))[:2], 5)), *heldout)
    assert seen.count("from scratch") == 12 and len(seen) == 6 * 12
    assert all(torch.equal(bert.model.state_dict()[k], v) for k, v in before.items())
    assert result.of("nothing") is None


def test_progress_runs_over_the_ways_of_the_job():
    modes = ("head only", "full", "from scratch")
    status = JobStatus("running", "full", 50, 100, None, modes=modes)
    assert status.progress == pytest.approx((100 + 50) / 300)
    assert JobStatus("running", "LoRA", 5, 100, None, modes=modes).progress == 0.0  # not one of them


def test_settings_check_the_ways():
    assert FinetuneSettings(modes=("full", "head only")).modes == ("head only", "full")  # MODES' order
    assert FinetuneSettings(steps=400).every == 40
    for bad in ((), ("sideways",)):
        with pytest.raises(ValueError):
            FinetuneSettings(modes=bad)
    with pytest.raises(ValueError):
        FinetuneSettings(p=0)
