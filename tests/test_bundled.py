"""The trained models in assets/: they load, their files belong together, and the numbers in
each manifest come back when the shipped weights are evaluated again on the held-out data."""
import json

import numpy as np
import pytest
import torch

import tfviz
from tfviz.bundle import ASSETS, bundled_names
from tfviz.data import word_class
from tfviz.training.recipes import RECIPES
from tfviz.training.save import recorded_metrics, sha256
from tfviz.training.tokenizers import TaskTokenizer, story_tokenizer

NAMES = sorted(RECIPES)


@pytest.fixture(scope="module")
def bundles():
    return {name: tfviz.load(name) for name in NAMES}


@pytest.fixture(scope="module")
def story_tok_json():
    return story_tokenizer().to_json()


def test_every_preset_is_bundled_and_small():
    assert set(NAMES) <= set(bundled_names())
    files = [p for name in NAMES for p in (ASSETS / name).iterdir()]
    assert sorted({p.name for p in files}) == ["config.json", "manifest.json", "model.safetensors",
                                               "tokenizer.json"]  # and no pickles
    assert sum(p.stat().st_size for p in files) < 5_000_000


@pytest.mark.parametrize("name", NAMES)
def test_files_belong_together(bundles, story_tok_json, name):
    b, folder = bundles[name], ASSETS / name
    assert b.trained and b.config.name == name == b.manifest["name"]
    for f, digest in b.manifest["files"].items():
        assert sha256(folder / f) == digest, f"{f} is not the file the manifest was written for"
    assert b.tokenizer.vocab_size == b.config.vocab_size == b.model.embed.weight.shape[0]
    assert b.config == tfviz.preset(name)  # the shipped config is the preset's
    expected = TaskTokenizer().to_json() if name == "reverse-encdec" else story_tok_json
    assert (folder / "tokenizer.json").read_text(encoding="utf-8") == expected
    assert b.manifest["command"] == f"python -m tfviz.train --preset {name}"


def _same(recorded, measured, path=""):
    """Equal structure; floats within 2e-4 (the manifest rounds to 4 decimals)."""
    if isinstance(recorded, dict):
        assert recorded.keys() == measured.keys(), path
        for k in recorded:
            _same(recorded[k], measured[k], f"{path}.{k}")
    elif isinstance(recorded, list):
        assert len(recorded) == len(measured), path
        for i, (r, m) in enumerate(zip(recorded, measured)):
            _same(r, m, f"{path}[{i}]")
    elif isinstance(recorded, float):
        assert measured == pytest.approx(recorded, abs=2e-4), path
    else:
        assert recorded == measured, path


@pytest.mark.parametrize("name", NAMES)
def test_manifest_numbers_are_reproduced_from_the_shipped_weights(bundles, name):
    b = bundles[name]
    measured = json.loads(json.dumps(RECIPES[name].evaluate(b.model, b.tokenizer)))
    _same(recorded_metrics(b.manifest), measured)


def test_targets_are_met(bundles):
    gpt = bundles["gpt-tiny"].manifest["eval"]
    assert gpt["coref_accuracy"] >= 0.95 and gpt["coref_head"]["share"] >= 0.8
    assert bundles["reverse-encdec"].manifest["eval"]["exact_match"] >= 0.95
    assert bundles["bert-tiny"].manifest["eval"]["masked_accuracy"] >= 0.5
    for layer in bundles["moe-tiny"].manifest["moe"]["layers"]:
        assert sum(layer["load"]) == pytest.approx(1.0, abs=1e-3)
        assert np.asarray(layer["counts"]).shape == (len(layer["classes"]), 4)


def test_gpt_tiny_completes_the_coreference_probe(bundles):
    b = bundles["gpt-tiny"]
    for adj, answer in (("tired", "animal"), ("wide", "street")):
        prompt = f"the animal didn't cross the street because it was too {adj}. it refers to the"
        logits = b.trace(prompt, names=()).logits[-1]
        assert b.tokenizer.decode([int(logits.argmax())]).strip() == answer


def test_moe_manifest_table_is_readable_by_the_lesson(bundles):
    from tfviz.analysis.moe import table_from_manifest

    classes, experts, counts = table_from_manifest(bundles["moe-tiny"].manifest, layer=0)
    assert experts == [0, 1, 2, 3] and counts.sum() > 0 and "noun" in classes


def test_reverse_trace_reads_the_model_answer_and_draws_the_anti_diagonal(bundles):
    b = bundles["reverse-encdec"]
    tr = b.trace("a b c d e")
    assert tr.enc_tokens == tuple("abcde") and tr.tokens == ("<bos>", "e", "d", "c", "b", "a")
    head = b.manifest["eval"]["anti_diagonal_head"]
    p = tr[f"blocks.{head['layer']}.cross_attn.hook_pattern"][head["head"]]  # (T_dec, S)
    assert p[:5].argmax(-1).tolist() == [4, 3, 2, 1, 0]
    assert b.trace("d c", source="abcd").tokens == ("<bos>", "d", "c")


@pytest.mark.parametrize("sentence, word, cls", [
    ("did the child follow the horse?", "horse", "noun"),
    ("the quick fox chased the boxes.", "chase", "verb"),
    ("the robot is dancing near the river.", "near", "function"),
])
def test_bert_tiny_fills_a_mask_with_the_right_kind_of_word(bundles, sentence, word, cls):
    b = bundles["bert-tiny"]
    tok = b.tokenizer
    ids = tok.encode(sentence)
    at = ids.index(tok.encode(word)[0])
    ids[at] = tok.mask_id  # hide one whole-word token, as training did
    logits = b.model(torch.tensor([ids]))[0, at]
    top = [tok.id_to_token(i) for i in logits.topk(2).indices.tolist()]
    assert [word_class(t) for t in top] == [cls] * 2, top
