"""The tour's stored first view (assets/gpt-tiny/tour_numbers.json) is what the live model
computes, and is set aside as soon as a file it was computed from changes."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import tour_numbers as tn
from tfviz.training.tour import compute
from tfviz.bundle import ASSETS
from tfviz.config import VIT_PRESET_NAMES
from tfviz.model.vit import VIT_PRESETS
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

FOLDER = ASSETS / tn.MODEL


@pytest.fixture(scope="module")
def bundle():
    return tfviz.load(tn.MODEL)


@pytest.fixture(scope="module")
def stored():
    numbers = tn.stored(FOLDER)
    assert numbers is not None, ("assets/gpt-tiny/tour_numbers.json is missing or older than the "
                                 "model: python -m tfviz.training.tour rewrites it")
    return numbers


def test_the_stored_sentence_is_the_one_every_learner_meets_first(stored):
    assert (tn.MODEL, tn.TEXT) == (DEFAULT_MODEL, DEFAULT_TEXT)
    assert (stored.name, stored.text) == (DEFAULT_MODEL, DEFAULT_TEXT)
    assert set(VIT_PRESET_NAMES) == set(VIT_PRESETS)  # the torch-free copy of the vision names


def test_the_stored_numbers_are_the_live_models(stored, bundle):
    live = compute(bundle)
    assert stored.config == bundle.config
    assert (stored.ids, stored.tokens) == (live.ids, live.tokens)
    assert (stored.reading_notice, stored.vocabulary_notice) == (live.reading_notice,
                                                                 live.vocabulary_notice)
    assert stored.stages == live.stages
    assert stored.trained is live.trained is True
    assert [p[:2] for p in stored.predictions] == [p[:2] for p in live.predictions]
    # float32 logits: another CPU or torch build may round the last bits differently
    np.testing.assert_allclose([p[2] for p in stored.predictions],
                               [p[2] for p in live.predictions], rtol=1e-5)


def test_the_stored_numbers_against_torch_and_the_tokenizer(stored, bundle):
    """An independent reference: the tokenizer's own ids, torch's forward pass and softmax,
    and the shapes the config implies."""
    ids = bundle.tokenizer.encode(DEFAULT_TEXT)
    assert list(stored.ids) == list(ids)
    assert list(stored.tokens) == [bundle.tokenizer.id_to_token(i) for i in ids]
    with torch.no_grad():
        logits = bundle.model(torch.tensor([ids]))[0, -1].double()
    ref = torch.topk(torch.softmax(logits, -1), tn.TOP)
    assert [p[0] for p in stored.predictions] == ref.indices.tolist()
    np.testing.assert_allclose([p[2] for p in stored.predictions], ref.values.numpy(), rtol=1e-5)
    cfg, T = bundle.config, len(ids)
    shapes = {s.key: s.shape for s in stored.stages}
    assert shapes == {"tokens": (T,), "embed": (T, cfg.d_model), "pos": (T, cfg.d_model),
                      "blocks": (T, cfg.d_model), "attn": (cfg.n_heads, T, T),
                      "ffn": (T, cfg.d_ff), "logits": (T, cfg.vocab_size),
                      "next": (cfg.vocab_size,)}


@pytest.mark.parametrize("changed", tn.SOURCES)
def test_a_changed_source_file_sets_the_stored_numbers_aside(tmp_path, changed):
    folder = tmp_path / tn.MODEL
    shutil.copytree(FOLDER, folder)
    assert tn.stored(folder) is not None
    with open(folder / changed, "ab") as f:
        f.write(b" ")
    assert tn.stored(folder) is None


def test_no_file_or_a_broken_one_gives_nothing(tmp_path):
    folder = tmp_path / tn.MODEL
    shutil.copytree(FOLDER, folder)
    (folder / tn.FILE).write_text("{not json")
    assert tn.stored(folder) is None
    (folder / tn.FILE).unlink()
    assert tn.stored(folder) is None


def test_write_then_stored_round_trips(tmp_path, bundle):
    folder = tmp_path / tn.MODEL
    shutil.copytree(FOLDER, folder)
    live = compute(bundle)
    tn.write(folder, live)
    assert tn.stored(folder) == live
