"""Lesson 5 follows at most ``SELF_ATTENTION_TOKENS`` tokens (a model folder reads up to 1,024,
and every head's map grows with the square): ``first_tokens`` cuts what the model reads as
``Bundle.read`` cuts at the context, keeping a BERT's closing [SEP], and ``first_tokens_trace``
is the trace of exactly those ids. Checked with a small limit on gpt-tiny and on a small random
BERT folder, against transformers."""
from __future__ import annotations

import numpy as np

from tfviz.config import RunOptions
from tfviz.ui import experiments_cache as xc
from tfviz.ui.cache import get_bundle, get_trace, read_text

TEXT = "the animal didn't cross the street because it was too tired"


def test_a_gpt_prefix_sees_what_the_whole_text_saw_up_to_its_end():
    """Causal attention: the first k tokens' maps are the top-left k × k of the whole text's."""
    full = get_trace("gpt-tiny", TEXT)
    n = len(full.tokens)
    k = 5
    assert n > k and xc.first_tokens("gpt-tiny", TEXT, k).ids == read_text("gpt-tiny", TEXT).ids[:k]
    cut = xc.first_tokens_trace("gpt-tiny", TEXT, k)
    assert list(cut.tokens) == list(full.tokens[:k])
    for layer in range(full.config.n_layers):
        # float32 matmuls over a shorter sequence may sum in another order: a float32 tolerance
        np.testing.assert_allclose(cut["pattern", layer], full["pattern", layer][:, :k, :k], atol=1e-5)
    # what-ifs reach the cut trace too: without the scale, the raw scores are the same and the
    # scores the softmax reads are not divided (two cached traces, perhaps from two threads:
    # float32 scores up to ~20, so a float32 tolerance)
    bare = xc.first_tokens_trace("gpt-tiny", TEXT, k, RunOptions(scale=False))
    np.testing.assert_allclose(bare["attn_scores_unmasked", 0], cut["scores_raw", 0], rtol=1e-5, atol=1e-5)


def test_a_bert_prefix_keeps_its_sep_and_matches_transformers(tmp_path, monkeypatch):
    """A BERT folder reads [CLS] ... [SEP]: the cut keeps [CLS], the first tokens and the closing
    [SEP], and its trace's attention maps are transformers' own on exactly those ids."""
    import pytest

    transformers = pytest.importorskip("transformers")
    import torch

    import tfviz
    from tests.support.bert_folders import make_checkpoint

    make_checkpoint(tmp_path, n_positions=64)
    bundle = tfviz.load(tmp_path)
    monkeypatch.setattr(xc, "get_bundle", lambda model: bundle)
    monkeypatch.setattr(xc, "read_text", lambda model, text: bundle.read(text))
    xc._first_tokens_trace.clear()
    ids = bundle.read(TEXT).ids
    tok = bundle.tokenizer
    cut = xc.first_tokens("folder", TEXT, 6)
    assert len(ids) > 6 and cut.ids == (*ids[:5], ids[-1])
    assert [tok.id_to_token(i) for i in (cut.ids[0], cut.ids[-1])] == ["[CLS]", "[SEP]"]
    trace = xc.first_tokens_trace("folder", TEXT, 6)
    assert len(trace.tokens) == 6
    theirs = transformers.BertForMaskedLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        out = theirs(torch.tensor([cut.ids]), output_attentions=True)
    for layer, maps in enumerate(out.attentions):
        # float32 on both sides, summed in other orders: 1e-5 as tests/unit/hf/test_bert.py
        np.testing.assert_allclose(trace["pattern", layer], maps[0].numpy(), atol=1e-5)
    assert xc.first_tokens("folder", TEXT, len(ids)) == bundle.read(TEXT)  # short enough: as read
    xc._first_tokens_trace.clear()
