"""One random checkpoint of BERT-base's shape per test session, for the tests that run the
lessons on a real-sized encoder: 12 layers x 12 heads x 768, d_ff 3,072, a 30,522-id
vocabulary and 512 positions, saved by transformers (dev-only) as ``BertForMaskedLM`` with
the uncased WordPiece tokenizer of ``tests/support/bert_folders.py`` (400 tokens trained on our
stories; the ids past them exist in the model only).

Building it takes about half a minute and 0.45 GB of disk, so every test module of a session,
on every xdist worker, shares the one folder (tests/support/session_folder.py). As in
``bench.make_gpt2_folder``, the query and key weights are drawn wider than transformers'
init (std 0.08 instead of 0.02): at d = 768 the init's maps are nearly uniform and the same
in every head, where a page that showed the wrong head would still show the right numbers.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.session_folder import session_folder

BERT_BASE_SHAPE = dict(n_layer=12, n_head=12, d=768, d_ff=3072, vocab_size=30522, n_positions=512)


def make_bert_base_folder(folder: Path, *, qk_std: float = 0.08, seed: int = 0) -> Path:
    """Write the random BERT-base-shaped checkpoint into ``folder``."""
    import torch

    from tests.support.bert_folders import make_checkpoint

    folder.mkdir(parents=True, exist_ok=True)
    model = make_checkpoint(folder, **BERT_BASE_SHAPE, spread=False, seed=seed)
    with torch.no_grad():
        for layer in model.bert.encoder.layer:
            for lin in (layer.attention.self.query, layer.attention.self.key):
                lin.weight.normal_(0.0, qk_std)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def bert_base_folder(tmp_path_factory) -> Path:
    """The session's BERT-base-shaped folder, built on first use."""
    pytest.importorskip("transformers")
    return session_folder(tmp_path_factory, "bert-base-random", make_bert_base_folder)


def bert_headless_folder(tmp_path_factory) -> Path:
    """A small ``BertModel`` (no MLM head: 2 layers x 2 heads, d = 32), as a folder saved
    from a BERT without its pretraining head looks."""
    pytest.importorskip("transformers")
    from tests.support.bert_folders import make_checkpoint

    folder = tmp_path_factory.getbasetemp() / "bert-headless"
    if not (folder / "tokenizer.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        make_checkpoint(folder, "BertModel")
    return folder
