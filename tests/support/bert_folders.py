"""Small random BERT checkpoints for the tests (tests/test_hf_bert*.py, the lessons' BERT
folder tests), and transformers' own forward pass on one as the reference.

Each checkpoint is made by transformers (a test-only dependency, imported only when one is
made or read) and saved with ``save_pretrained(..., safe_serialization=True)``, with an uncased
WordPiece tokenizer trained here with ``tokenizers`` on our own story sentences: nothing is
downloaded. ``folder`` (one per test module) and ``copy`` (a test's own copy of it, to break)
are fixtures a module imports.
"""
from __future__ import annotations

import functools
import shutil

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from tests.support.hf_folders import save_spread
from tfviz.data.stories import story_corpus

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_tokenizer() -> Tokenizer:
    """BERT's kind of tokenizer (uncased WordPiece, [CLS] ... [SEP]) trained on our stories;
    trained once, a fresh copy each call."""
    return Tokenizer.from_str(_trained_tokenizer())


@functools.cache
def _trained_tokenizer(vocab_size: int = 400) -> str:
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.train_from_iterator(story_corpus(300, seed=5), trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False))
    cls, sep = hf.token_to_id("[CLS]"), hf.token_to_id("[SEP]")
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return hf.to_str()


def make_checkpoint(folder, model_class="BertForMaskedLM", *, n_layer=2, n_head=2, d=32, d_ff=64,
                    vocab_size=None, n_positions=64, spread=True, seed=0, **config):
    """A random BERT of ``model_class`` saved as safetensors, its tokenizer beside it; returns it.
    ``spread`` widens its weights, so that a wrong name cannot hide (``save_spread``)."""
    import torch
    import transformers

    tok = train_tokenizer()
    cfg = transformers.BertConfig(vocab_size=vocab_size or tok.get_vocab_size(), hidden_size=d,
                                  num_hidden_layers=n_layer, num_attention_heads=n_head,
                                  intermediate_size=d_ff, max_position_embeddings=n_positions, **config)
    torch.manual_seed(seed)
    return save_spread(getattr(transformers, model_class)(cfg), tok, folder, spread=spread,
                       is_gain=lambda name: "LayerNorm" in name and name.endswith("weight"))


def reference(folder, ids, model_class="BertForMaskedLM"):
    """transformers' forward pass on ``ids``, from the saved folder (not the model in memory):
    logits (None without a head), patterns (layer -> (H, T, T)), hidden states (the embedding
    LayerNorm's output, then every layer's) and the MLM transform's dense output."""
    import torch
    import transformers

    model = getattr(transformers, model_class).from_pretrained(folder, attn_implementation="eager",
                                                               dtype=torch.float32).eval()
    caught = {}
    handle = None
    if model_class != "BertModel":
        dense = model.cls.predictions.transform.dense
        handle = dense.register_forward_hook(lambda m, a, out: caught.update(dense=out))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        if handle is not None:
            handle.remove()
    logits = out.prediction_logits if model_class == "BertForPreTraining" else getattr(out, "logits", None)
    return {"logits": None if logits is None else logits[0].numpy(),
            "patterns": [a[0].numpy() for a in out.attentions],
            "hidden": [h[0].numpy() for h in out.hidden_states],
            "dense": caught["dense"][0].numpy() if "dense" in caught else None}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A small random BertForMaskedLM (2 layers x 2 heads, d = 32), once per test module."""
    path = tmp_path_factory.mktemp("bert-random-tiny")
    make_checkpoint(path)
    return path


@pytest.fixture
def copy(folder, tmp_path):
    """This test's own copy of ``folder``, to break or to rewrite."""
    target = tmp_path / "my-bert"
    shutil.copytree(folder, target)
    return target
