"""The lessons' analysis at real size: a random checkpoint of GPT-2 small's shape (12 layers x
12 heads, d = 768, 50,257 ids with <|endoftext|> the last, no <bos>), a 64-token text.

What our tiny models let the analysis assume and GPT-2 does not: special tokens first, a
handful of layers, an uncased tokenizer with a prefix space. Each test runs a function a lesson
calls and checks its numbers against the trace or torch."""
from __future__ import annotations

import numpy as np
import pytest

import tfviz
from bench.make_gpt2_folder import TEXT_64
from tests.support.gpt2_small import gpt2_small_folder
from tfviz.analysis import forward as fw
from tfviz.analysis import masking as mk

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    bundle = tfviz.load(gpt2_small_folder(tmp_path_factory))
    return bundle, bundle.trace(TEXT_64)


def test_the_text_is_64_tokens_of_a_gpt2_shaped_model(gpt2):
    bundle, trace = gpt2
    cfg = bundle.config
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.vocab_size) == (12, 12, 768, 50257)
    assert len(trace.tokens) == 64 and trace["pattern", 11].shape == (12, 64, 64)
    assert bundle.tokenizer.specials == ("<|endoftext|>",) and bundle.tokenizer.eos_id == 50256
    assert int(trace.ids.max()) > 10_000  # ordinary ids far past our tiny vocabularies
    assert trace.tokens[:3] == ("The", "␣animal", "␣didn")  # "Ġanimal" shown readably
    # The heads' maps differ (a test reading the wrong head would fail): block 0, query 10.
    p = trace["pattern", 0][:, 10, :11]
    assert min(np.abs(p[h] - p[h + 1]).max() for h in range(11)) > 0.05


def test_masking_replacements_skip_the_last_id_special_token(gpt2):
    """Lesson 8 offers replacement tokens: GPT-2's only special token is its last id, so the
    ordinary ids start at 0, and <|endoftext|> is never offered even when the text holds it."""
    bundle, trace = gpt2
    tok = bundle.tokenizer
    assert mk.special_ids(tok) == {50256} and mk.first_ordinary_id(tok) == 0
    ids = [*map(int, trace.ids[:5]), 50256]
    choices = mk.replacement_candidates(ids, bundle.config.vocab_size, exclude=ids[0],
                                        first_id=mk.first_ordinary_id(tok), skip=mk.special_ids(tok))
    assert 50256 not in choices and ids[0] not in choices
    assert choices[:4] == ids[1:5] and choices[4:8] == [0, 1, 2, 3]
    assert bundle.token_strings(choices[4:6]) == ["!", '"']  # GPT-2's first ids are its bytes


def test_forward_walk_through_one_chosen_block(gpt2):
    """Lesson 12 walks a 12-block model one block at a time: the steps are the input's, the
    chosen block's (reading the stream the blocks before it left) and the output's."""
    bundle, trace = gpt2
    assert bundle.config.n_layers > fw.WALK_ALL_BLOCKS
    steps = fw.forward_steps(trace, head=7, token_strings=bundle.token_strings, blocks=[9])
    titles = [s.title for s in steps]
    assert [t for t in titles if t.startswith("Block")] == [
        "Block 9 · self-attention (head 7)", "Block 9 · add & norm", "Block 9 · feed-forward",
        "Block 9 · add & norm (FFN)"]
    attention = steps[titles.index("Block 9 · self-attention (head 7)")]
    np.testing.assert_array_equal(attention.values, trace["pattern", 9][7])
    after = steps[titles.index("Block 9 · add & norm (FFN)")]
    np.testing.assert_array_equal(after.values, trace["blocks.9.hook_resid_post"])
    every = fw.forward_steps(trace, head=7, token_strings=bundle.token_strings)
    assert len(every) == len(steps) + 11 * 4  # the full walk: four steps for each other block
    top = steps[-1]
    probs = np.exp(trace.logits[-1].astype(np.float64) - trace.logits[-1].max())
    probs /= probs.sum()
    # float64 softmax of the same float32 logits on both sides
    np.testing.assert_allclose(top.values[0], np.sort(probs)[::-1][:5], rtol=1e-9)
