"""Lesson 8: masks, padding, and the no-peeking experiment."""
import numpy as np
import pytest

import tfviz
from tfviz.trace import run_with_trace
from tfviz.analysis import masking as mk
from tfviz.experiments.padding import padding_demo
from tfviz.experiments.peeking import peek_experiment


@pytest.fixture(scope="module")
def bundles():
    return {n: tfviz.load(n) for n in ("gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec")}


def test_causal_mask_matches_the_models_masked_scores(bundles):
    tr = bundles["gpt-tiny"].trace("hello there")
    n = len(tr.tokens)
    mask = mk.causal_mask(n)
    assert mask[0].tolist()[:3] == [True, False, False]
    for layer in range(3):
        hidden = mk.masked_cells(tr["attn_scores", layer])  # (heads, n, n)
        assert (hidden == ~mask[None]).all()
    assert not mk.masked_cells(bundles["bert-tiny"].trace("hello there")["attn_scores", 0]).any()


def test_padding_mask_pads_on_the_right():
    ids, mask = mk.padding_mask([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]


@pytest.mark.parametrize("name", ["gpt-tiny", "bert-tiny", "reverse-encdec"])
def test_padding_demo_hides_pad_keys_and_leaves_real_tokens_alone(bundles, name):
    b = bundles[name]
    ids = [b.encode("the cat sat on the mat"), b.encode("a dog")]
    demo = padding_demo(b.model, ids, [b.token_strings(i) for i in ids])
    short = len(ids[1])
    assert demo.tokens[1][short:] == ("<pad>",) * (demo.ids.shape[1] - short)
    assert demo.mask[1].tolist() == [1] * short + [0] * (demo.ids.shape[1] - short)
    for layer in range(b.config.n_layers):
        pattern = demo.trace["pattern", layer]  # (2, heads, T, T)
        assert (pattern[1, :, :, short:] == 0).all()  # nobody attends to padding
        assert np.isneginf(demo.trace["attn_scores", layer][1, :, :, short:]).all()
    assert demo.max_change < 1e-4


TEXT = "the animal didn't cross the street because it was too tired. the dog ran to the park."


def _edit(b):
    """The text's ids, a middle position, and a different token to put there."""
    ids = b.encode(TEXT)[:b.config.max_seq_len]
    pos = len(ids) // 2
    new = next(i for i in ids if i != ids[pos])
    return ids, pos, new


@pytest.mark.parametrize("name", ["gpt-tiny", "moe-tiny", "reverse-encdec"])
def test_a_decoder_cannot_peek(bundles, name):
    ids, pos, new = _edit(bundles[name])
    result = peek_experiment(bundles[name].model, ids, pos, new)
    assert pos >= 4
    assert result.max_earlier_change == 0.0  # exactly, not approximately
    assert (result.change[:pos] == 0).all() and result.change[pos] > 0
    assert result.earlier.tolist() == [True] * pos + [False] * (len(ids) - pos)


def test_an_encoder_and_an_unmasked_decoder_do_peek(bundles):
    ids, pos, new = _edit(bundles["bert-tiny"])
    assert peek_experiment(bundles["bert-tiny"].model, ids, pos, new).max_earlier_change > 1e-4
    ids, pos, new = _edit(bundles["gpt-tiny"])
    unmasked = peek_experiment(bundles["gpt-tiny"].model, ids, pos, new, causal=False)
    assert unmasked.max_earlier_change > 1e-4


def test_peek_change_is_the_logit_difference(bundles):
    b = bundles["gpt-tiny"]
    ids, pos, new = _edit(b)
    result = peek_experiment(b.model, ids, pos, new)
    changed = list(ids)
    changed[pos] = new
    a = run_with_trace(b.model, ids).logits
    c = run_with_trace(b.model, changed).logits
    # the same two runs (same function, ids, thread); only the subtraction's rounding differs
    np.testing.assert_allclose(result.change, np.abs(a - c).max(axis=-1), atol=1e-6)


def test_replacement_candidates():
    assert mk.replacement_candidates([9, 8, 9], vocab_size=12, exclude=8, n_extra=4) == [9, 7, 10]
    assert 300 not in mk.replacement_candidates([300], vocab_size=263, exclude=5)


def test_first_ordinary_id_for_each_tokenizer():
    from tfviz.tokenizer.byte import ByteTokenizer
    from tfviz.tokenizer.task import TaskTokenizer

    assert mk.first_ordinary_id(ByteTokenizer()) == 7
    assert mk.first_ordinary_id(TaskTokenizer()) == 4


def test_encoder_decoder_peek_keeps_the_given_source(bundles):
    b = bundles["reverse-encdec"]
    tr = b.trace("abcdefgh")
    ids = [int(i) for i in tr.ids]
    result = peek_experiment(b.model, ids, 4, ids[1], enc_ids=tr.enc_ids)
    assert result.max_earlier_change == 0.0 and result.change[4] > 0
    again = run_with_trace(b.model, ids, enc_ids=tr.enc_ids).logits
    np.testing.assert_allclose(again, tr.logits, atol=1e-5)  # the same source as the trace


def _every_edit(model, ids, k):
    """The peek experiment for every position and a few replacement tokens."""
    for pos in range(1, len(ids)):
        for new in (5, 9, 17, 33):
            if new != ids[pos]:
                yield peek_experiment(model, ids, pos, new, moe_top_k=k)


def test_a_full_expert_never_lets_a_later_token_move_an_earlier_one():
    """With k = 2 and a tight capacity, Switch-style counting over the whole call queued a later
    token's first choice before an earlier token's second choice, which could push it out:
    earlier logits moved (this test found such edits before). Counted per prefix, no edit of
    a later token moves an earlier position, to the bit, while tokens really are dropped."""
    import torch
    from tfviz.config import ModelConfig
    from tfviz.model import Transformer

    model = Transformer(ModelConfig(n_experts=4, moe_top_k=2, moe_capacity_factor=0.5,
                                    n_layers=1, vocab_size=64)).eval()
    with torch.no_grad():  # a fresh model of our own; a louder router spreads the first choices
        model.blocks[0].mlp.router.weight.normal_(0, 1.0, generator=torch.Generator().manual_seed(0))
    ids = [int(i) for i in torch.randint(7, 64, (16,), generator=torch.Generator().manual_seed(1))]
    assert run_with_trace(model, ids)["dropped", 0].any()  # the capacity binds
    for k in (1, 2):
        results = list(_every_edit(model, ids, k))
        assert results and all(r.verdict == "sealed" for r in results)
