"""``Bundle.evaluation`` and ``Bundle.recipe``: the manifests' measured metrics and recipes,
typed, read against the JSON files themselves for every bundle in assets/."""
import json
import math

import pytest

import tfviz
from tfviz.bundle import ASSETS
from tfviz.manifest import Evaluation, HeadRecord, Recipe

NAMES = sorted(p.parent.name for p in ASSETS.glob("*/manifest.json"))  # vit-tiny too


def raw(name: str) -> dict:
    return json.loads((ASSETS / name / "manifest.json").read_text())


def test_every_shipped_bundle_has_a_manifest_to_read():
    assert {"gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec", "vit-tiny"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_evaluation_holds_the_manifests_numbers(name):
    m = raw(name)
    ev, recipe = tfviz.load(name).evaluation, tfviz.load(name).recipe
    measured = m["eval"]
    plain = {"val_loss", "val_sentences", "coref_accuracy", "coref_items", "coref_selection_items",
             "masked_accuracy", "selected_share", "positions_trained", "exact_match",
             "heldout_examples", "heldout_accuracy", "heldout_images"}
    for key in plain:
        assert getattr(ev, key) == measured.get(key), key  # None where not measured
    for key, score in (("coref_head", "share"), ("anti_diagonal_head", "weight")):
        record = measured.get(key)
        assert getattr(ev, key) == (HeadRecord(record["layer"], record["head"], record[score])
                                    if record else None)
    assert dict(ev.coref_head_by_answer) == measured.get("coref_head_by_answer", {})
    assert dict(ev.heldout_accuracy_by_class) == measured.get("heldout_accuracy_by_class", {})
    assert [list(row) for row in ev.coref_head_shares] == measured.get("coref_head_shares", [])
    assert recipe.command == m["command"] and recipe.command.startswith("python -m tfviz.train")
    assert math.isclose(recipe.train_seconds, m["train"]["wall_seconds"])


@pytest.mark.parametrize("name", NAMES)
def test_the_heads_a_manifest_names_exist_in_its_model(name):
    bundle = tfviz.load(name)
    for record in (bundle.evaluation.coref_head, bundle.evaluation.anti_diagonal_head):
        if record is not None:
            assert 0 <= record.layer < bundle.config.n_layers
            assert 0 <= record.head < bundle.config.n_heads
            assert 0 <= record.score <= 1


def test_bert_tinys_recipe_and_what_lesson_15_reads():
    m, bundle = raw("bert-tiny"), tfviz.load("bert-tiny")
    recipe, ev = bundle.recipe, bundle.evaluation
    assert recipe.row == m["data"]["row"] == "sentence (no [CLS]/[SEP])"
    assert recipe.coref_statements == m["data"]["coref_statements"]["rows"] == 10_000
    assert (recipe.head_dropout_layer, recipe.head_dropout_p) == (1, 0.5)
    assert ev.coref_head == HeadRecord(1, 3, 0.9652) and ev.masked_accuracy == 0.7134
    # the head's share is the one its layer's row of the share table gives
    assert ev.coref_head_shares[1][3] == ev.coref_head.score


def test_a_model_measured_in_another_way_reads_none_not_a_key_error():
    ev = tfviz.load("vit-tiny").evaluation
    assert ev.val_loss is None and ev.coref_head is None and ev.heldout_accuracy == 0.982
    assert Evaluation.from_manifest({}) == Evaluation()
    assert Recipe.from_manifest({}) == Recipe()
    assert tfviz.load("gpt-tiny").recipe.head_dropout_layer is None


def test_they_cannot_be_changed():
    ev = tfviz.load("bert-tiny").evaluation
    with pytest.raises(AttributeError):
        ev.val_loss = 0.0
    with pytest.raises(TypeError):
        ev.coref_head_by_answer["agent"] = 0.0
