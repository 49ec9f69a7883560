"""The trained models in assets/: they load, their files belong together, and the numbers in
each manifest come back when the shipped weights are evaluated again on the held-out data."""
import json

import numpy as np
import pytest
import torch

import tfviz
from tfviz.bundle import ASSETS, bundled_names
from tfviz.data import coref_eval_items, word_class
from tfviz.data.coref import FORMS
from tfviz.tokenizer.task import TaskTokenizer
from tfviz.training.recipes import RECIPES
from tfviz.training.save import recorded_metrics, sha256
from tfviz.training.tokenizers import story_tokenizer

# The text models. vit-tiny reads images: it has no tokenizer and its manifest holds other
# numbers, so tests/test_vit.py checks its bundle (files, targets, manifest re-measured).
NAMES = sorted(name for name, recipe in RECIPES.items() if recipe.make_model is None)


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
                                               "tokenizer.json", "tour_numbers.json"]  # no pickles
    # the tour's stored first view (tfviz.training.tour), beside gpt-tiny's weights only
    assert [p.parent.name for p in files if p.name == "tour_numbers.json"] == ["gpt-tiny"]
    # 12 text models of 0.57-0.97 MB each (9.3 MB with lesson 3's gpt-tiny-learned,
    # gpt-tiny-rope, gpt-tiny-relative and gpt-tiny-t5, the modern block's llama-tiny and
    # lesson 11's mixtral-tiny)
    assert sum(p.stat().st_size for p in files) < 10_000_000


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


# The manifest was measured on the machine that trained the weights; this test evaluates the same
# weights again on whatever CPU runs it, whose BLAS and vector kernels round float32 sums in
# another order: logits differ by ~1e-7 relative, a mean loss by ~1e-6. So each kind of number
# gets the tolerance that difference allows:
# - a continuous number (a loss, a mean attention weight) is rounded to 4 decimals for the
#   manifest, and ~1e-6 can carry it across a rounding boundary: one unit in the 4th decimal,
#   plus slack for binary floats (0.1235 - 0.1234 is a hair above 1e-4): ROUNDING;
# - a share of counted decisions (argmax right, one weight above another, an expert's first
#   choice) moves only when a decision flips, and only one whose two best scores lie within
#   ~1e-6 of each other can: one such item is allowed on top (see _one_item), while a wrong
#   model or a wrong metric moves many;
# - counts of the data (items, positions, tokens), names and strings involve no float
#   arithmetic: equal.
ROUNDING = 1.5e-4


def _one_item(metrics: dict) -> dict[str, float]:
    """What one decision is worth in each share of counted decisions, by metric name."""
    coref = 1 / len(coref_eval_items(seed=0))  # every coreference probe asks about these items
    one = dict.fromkeys(["coref_accuracy", "coref_prefers_answer", "coref_head", "coref_head_shares",
                         "coref_accuracy_by_form", "coref_head_by_form"], coref)
    one["coref_head_by_answer"] = 2 * coref  # half the items have each kind of answer
    if "coref_selection_items" in metrics:  # bert-tiny's head is chosen on the training combinations
        one["coref_head_selection_shares"] = 1 / metrics["coref_selection_items"]
    for share, count in (("masked_accuracy", "masked_positions"), ("selected_accuracy", "selected_positions"),
                         ("exact_match", "heldout_examples")):
        if count in metrics:
            one[share] = 1 / metrics[count]
    return one


def _same(recorded, measured, path="", slack=ROUNDING):
    """Equal structure, strings and integers; floats within ``slack``."""
    if isinstance(recorded, dict):
        assert recorded.keys() == measured.keys(), path
        for k in recorded:
            _same(recorded[k], measured[k], f"{path}.{k}", slack)
    elif isinstance(recorded, list):
        assert len(recorded) == len(measured), path
        for i, (r, m) in enumerate(zip(recorded, measured)):
            _same(r, m, f"{path}[{i}]", slack)
    elif isinstance(recorded, float):
        assert measured == pytest.approx(recorded, abs=slack), path
    else:
        assert recorded == measured, path


def _same_best_head(recorded, measured, table, slack, path):
    """An argmax over heads: the recorded head, or one whose recorded value in ``table`` was
    within ``slack`` of it (a near-tie another CPU may break the other way)."""
    assert recorded.keys() == measured.keys(), path
    (value,) = recorded.keys() - {"layer", "head"}  # "share" or "weight"
    assert table[measured["layer"]][measured["head"]] >= recorded[value] - slack, path
    assert measured[value] == pytest.approx(recorded[value], abs=slack), f"{path}.{value}"


def _same_routing(recorded, measured):
    """moe-tiny's routing tables: in each layer, one token whose two best gates tie within
    rounding may go to the other expert, and what is derived from the table moves by at most
    that token's share."""
    _same({k: v for k, v in recorded.items() if k != "layers"},
          {k: v for k, v in measured.items() if k != "layers"}, "moe")
    assert len(recorded["layers"]) == len(measured["layers"])
    for i, (r, m) in enumerate(zip(recorded["layers"], measured["layers"])):
        path = f"moe.layers[{i}]"
        assert r.keys() == m.keys(), path
        counts, got = np.asarray(r["counts"]), np.asarray(m["counts"])
        # a token's class comes from the tokenizer, not the model: each class keeps its total
        np.testing.assert_array_equal(got.sum(1), counts.sum(1), err_msg=path)
        assert np.abs(got - counts).sum() <= 2, f"{path}: more than one token changed expert"
        for k in r.keys() - {"counts", "concentration"}:  # load, dropped share, mean concentration
            _same(r[k], m[k], f"{path}.{k}", ROUNDING + 1 / counts.sum())
        for c, n in zip(r["classes"], counts.sum(1)):  # a share of this class's tokens
            _same(r["concentration"][c], m["concentration"][c], f"{path}.concentration.{c}",
                  ROUNDING + 1 / n)


def _same_metrics(recorded: dict, measured: dict) -> None:
    """A fresh evaluation against a manifest's numbers, each within what its kind allows."""
    assert recorded.keys() == measured.keys()
    one = _one_item(recorded)
    for k in recorded:
        slack = ROUNDING + one.get(k, 0.0)
        if k == "moe":
            _same_routing(recorded[k], measured[k])
        elif k in ("coref_head", "anti_diagonal_head"):
            table = recorded["coref_head_shares" if k == "coref_head" else "anti_diagonal_weights"]
            _same_best_head(recorded[k], measured[k], table, slack, k)
        else:
            _same(recorded[k], measured[k], k, slack)


@pytest.mark.parametrize("name", NAMES)
def test_manifest_numbers_are_reproduced_from_the_shipped_weights(bundles, name):
    b = bundles[name]
    measured = json.loads(json.dumps(RECIPES[name].evaluate(b.model, b.tokenizer)))
    _same_metrics(recorded_metrics(b.manifest), measured)


def test_manifest_comparison_allows_rounding_and_one_flipped_decision_only():
    n = len(coref_eval_items(seed=0))

    def routed(counts):  # a one-layer routing table and the shares that follow from it
        c = np.asarray(counts)
        return {"tokens": int(c.sum()), "layers": [{
            "classes": ["noun", "verb"], "counts": counts, "load": (c.sum(0) / c.sum()).round(4).tolist(),
            "concentration": dict(zip(["noun", "verb"], (c.max(1) / c.sum(1)).round(4).tolist()))}]}

    recorded = {"val_loss": 0.8265, "coref_items": n, "coref_accuracy": 0.9,
                "coref_head": {"layer": 1, "head": 0, "share": 0.9},
                "coref_head_shares": [[0.5, 0.5], [0.9, 0.9]], "moe": routed([[3, 1], [1, 2]])}
    # the last digit rounded the other way, one item and one token flipped, the tied runner-up head
    _same_metrics(recorded, recorded | {"val_loss": 0.8266, "coref_accuracy": 0.9 - 1 / n,
                                        "coref_head": {"layer": 1, "head": 1, "share": 0.9},
                                        "moe": routed([[2, 2], [1, 2]])})
    for wrong in ({"val_loss": 0.8268}, {"coref_items": n - 1}, {"coref_accuracy": 0.9 - 2 / n},
                  {"coref_head": {"layer": 0, "head": 0, "share": 0.9}},
                  {"moe": routed([[2, 2], [2, 1]])},  # two tokens changed expert
                  {"moe": routed([[3, 0], [1, 3]])}):  # a token changed class
        with pytest.raises(AssertionError):
            _same_metrics(recorded, recorded | wrong)


def test_targets_are_met(bundles):
    gpt = bundles["gpt-tiny"].manifest["eval"]
    assert gpt["coref_accuracy"] >= 0.95 and gpt["coref_head"]["share"] >= 0.8
    # held-out combinations, written in every way the corpus writes them (tfviz.data.coref.FORMS)
    assert set(gpt["coref_accuracy_by_form"]) == set(FORMS)
    assert min(gpt["coref_accuracy_by_form"].values()) >= 0.95
    assert bundles["reverse-encdec"].manifest["eval"]["exact_match"] >= 0.95
    bert = bundles["bert-tiny"].manifest["eval"]
    assert bert["masked_accuracy"] >= 0.5
    # the head whose "it" prefers the right noun, on combinations the corpus never held (issue #16)
    assert bert["coref_head"]["share"] >= 0.8 and bert["coref_items"] == len(coref_eval_items(seed=0))
    for layer in bundles["moe-tiny"].manifest["moe"]["layers"]:
        assert sum(layer["load"]) == pytest.approx(1.0, abs=1e-3)
        assert np.asarray(layer["counts"]).shape == (len(layer["classes"]), 4)


@pytest.mark.parametrize("prompt, answer", [
    ("the animal didn't cross the street because it was too tired. it refers to the", "animal"),
    ("the animal didn't cross the street because it was too wide. it refers to the", "street"),
    # as people type it (issue #13): capitals, "did not", a space before the full stop
    ("The animal didn't cross the street because it was too tired. It refers to the", "animal"),
    ("the animal did not cross the street because it was too tired. it refers to the", "animal"),
    ("the animal didn't cross the street because it was too wide . it refers to the", "street"),
    ("The dog did not reach the bridge, because it was very steep . It refers to the", "bridge"),
])
def test_gpt_tiny_completes_the_coreference_probe(bundles, prompt, answer):
    b = bundles["gpt-tiny"]
    logits = b.trace(prompt, names=()).logits[-1]
    assert b.tokenizer.decode([int(logits.argmax())]).strip() == answer


@pytest.mark.parametrize("name", ["gpt-tiny", "moe-tiny", "bert-tiny"])
def test_story_models_read_text_uncased(bundles, name):
    tok = bundles[name].tokenizer
    assert tok.uncased and tok.encode("The Animal DIDN'T") == tok.encode("the animal didn't")
    assert "␣the" == tok.tokens("The")[0]


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
    assert [_piece_class(t) for t in top] == [cls] * 2, top


def _piece_class(token: str) -> str:
    """A whole word's class, or for a word's first BPE piece ("␣pus" of "push") the class that
    every lexicon word starting with it shares ("other" when they disagree or none does)."""
    if word_class(token) != "other" or not token.startswith("␣"):
        return word_class(token)
    from tfviz.data.lexicon import LEXICON

    classes = {c for w, c in LEXICON.items() if w.startswith(token[1:])}
    return classes.pop() if len(classes) == 1 else "other"
