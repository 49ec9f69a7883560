"""Lesson 15's fine-tune tasks, table, sentence and chart: the labels are what the sentences
say, held-out pairs are never trained on, and the sentence tells each story from the numbers."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tfviz.analysis import finetune_measured as fm
from tfviz.data.classify import TASKS, make_examples, number_pair_heldout
from tfviz.data.coref import coref_split
from tfviz.data.lexicon import NOUNS, plural
from tfviz.data.stories import SUBJECTS, words_of
from tests.support.charts import rows_of
from tfviz.config import preset
from tfviz.viz.finetune_runs import accuracy_curves_chart, params_accuracy_chart

SINGULAR = {n: n for n in NOUNS} | {plural(n): n for n in NOUNS}


def _nouns(sentence: str) -> tuple[str, str]:
    """The two nouns of "the SUBJECT VERBED the OBJECT.", as written."""
    words = words_of(sentence)
    return words[1], words[4]


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_number_labels_say_whether_the_nouns_agree(split):
    examples = make_examples("number", 400, seed=2, split=split)
    assert sum(label for _, label in examples) == 200  # balanced
    for sentence, label in examples:
        s, o = _nouns(sentence)
        assert label == int((s in NOUNS) == (o in NOUNS)), sentence  # both singular or both plural
        assert number_pair_heldout(SINGULAR[s], SINGULAR[o]) == (split == "heldout")
        assert SINGULAR[s] in SUBJECTS


def test_number_held_out_pairs_are_a_fifth_and_every_noun_is_trained():
    pairs = [(s, o) for s in SUBJECTS for o in NOUNS if s != o]
    held = [p for p in pairs if number_pair_heldout(*p)]
    assert 0.15 < len(held) / len(pairs) < 0.25
    trained = {w for p in pairs if not number_pair_heldout(*p) for w in p}
    assert trained == set(SUBJECTS) | set(NOUNS)  # held out: pairs, not words


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_it_labels_name_the_noun_it_stands_for(split):
    combos = set(coref_split(0)[0 if split == "train" else 1])
    from tfviz.data.lexicon import AGENT_ADJS, PLACE_ADJS

    for sentence, label in make_examples("it", 200, seed=1, split=split):
        words = words_of(sentence)
        adj = words[-2]
        assert label == (0 if adj in AGENT_ADJS else 1) and adj in AGENT_ADJS + PLACE_ADJS
        agent, place = words[1], words[words.index("the", 2) + 1]
        verb = next(w for w in words if w in ("cross", "enter", "leave", "reach"))
        assert (agent, verb, place, adj) in combos


def test_examples_are_fixed_by_their_seed_and_tasks_checked():
    assert make_examples("number", 50, seed=4) == make_examples("number", 50, seed=4)
    assert make_examples("number", 50, seed=4) != make_examples("number", 50, seed=5)
    assert set(TASKS) == {"number", "it"}
    with pytest.raises(ValueError):
        make_examples("sentiment", 3, seed=0)
    with pytest.raises(ValueError):
        make_examples("it", 3, seed=0, split="test")


def _modes(head: float, lora: float, full: float):
    return [SimpleNamespace(mode="head only", trained=130, accuracy=head, accuracy_before=0.5, seconds=1.0),
            SimpleNamespace(mode="LoRA", trained=2178, accuracy=lora, accuracy_before=0.5, seconds=2.0),
            SimpleNamespace(mode="full", trained=138498, accuracy=full, accuracy_before=0.5, seconds=3.0)]


@pytest.mark.parametrize("accs, story, words", [
    ((0.5, 0.52, 0.55), "nothing learned", "No way learned the task"),
    ((0.97, 0.98, 0.99), "head enough", "The head alone came within 2 points of full fine-tuning"),
    ((0.99, 0.98, 0.98), "head enough", "The head alone matched full fine-tuning"),
    ((0.61, 0.90, 0.93), "lora close", "LoRA came within 3 points of it while training 1.6% as many"),
    ((0.61, 0.95, 0.93), "lora close", "LoRA matched it"),
    ((0.60, 0.80, 0.97), "lora between", "LoRA recovered 20 of the 37 points"),
    ((0.60, 0.62, 0.97), "lora no better", "full fine-tuning gained 37 points"),
    ((0.60, 0.62, 0.97), "lora no better", "LoRA did no better than the head alone (within 3 points)"),
    # LoRA far below the head: the old sentence still said "within 3 points"
    ((0.80, 0.60, 0.97), "lora no better", "LoRA ended 20 points below the head alone"),
])
def test_the_sentence_tells_the_story_of_the_numbers(accs, story, words):
    modes = _modes(*accs)
    assert fm.verdict(modes) == story
    text = fm.summary(modes)
    assert words in text
    assert f"full fine-tuning (138,498) **{accs[2]:.0%}**" in text and "guessing scores 50%" in text
    if story in ("lora between", "lora no better"):  # why LoRA fell short names the budget too
        assert "more steps or another learning rate" in text and "cannot say which" in text
    if "below the head alone" in words:
        assert "within 3 points" not in text


def test_points_round_once_and_the_table_rows():
    for x in (0.8916, 0.905, 0.995, 1.0, 0.0):
        assert f"{fm.shown(x)}%" == f"{x:.0%}"  # the sentence's own rounding
    assert fm.points(0.93, 0.8916) == 4 and fm.points(0.93, 0.9) == 3 and fm.points(0.5, 0.5) == 0
    rows = fm.rows(_modes(0.6, 0.9, 0.95), 138498)
    assert [r["way"] for r in rows] == ["head only", "LoRA", "full"]
    assert rows[1]["numbers trained"] == 2178 and rows[1]["share of full"] == "1.57%"
    assert rows[2]["held-out % after"] == 95.0 and rows[0]["held-out % before"] == 50.0
    assert rows[0]["seconds"] == 1.0
    with pytest.raises(ValueError):
        fm.verdict(_modes(0.6, 0.9, 0.95)[:2])


def test_the_chart_carries_the_measured_numbers_on_a_log_scale():
    spec = params_accuracy_chart(["head only", "LoRA", "full"], [130, 2178, 138498], [0.61, 0.9, 0.93])
    points = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    assert {"way": "LoRA", "trained": 2178, "accuracy": 0.9, "shown": "90%", "place": "split"} in rows_of(spec)
    assert rows_of(spec, "chance") == [{"chance": 0.5}]
    assert "LoRA: 2,178 numbers, 90.0%" in spec["description"]


def test_points_close_together_have_their_words_apart():
    """Full fine-tuning and the same from scratch train the same numbers: at nearly the same
    accuracy the second is named on its right; LoRA and prefix tuning train nearly as many: the
    higher one's words go above, the lower one's below; points apart keep the way above and
    the accuracy below."""
    spec = params_accuracy_chart(["full", "from scratch"], [138498, 138498], [1.0, 0.97])
    assert [r["place"] for r in rows_of(spec)] == ["split", "right"]
    spec = params_accuracy_chart(["full", "from scratch"], [138498, 138498], [1.0, 0.5])
    assert [r["place"] for r in rows_of(spec)] == ["split", "split"]
    spec = params_accuracy_chart(["prefix tuning", "LoRA"], [2690, 2178], [0.51, 0.53])
    assert [r["place"] for r in rows_of(spec)] == ["under", "over"]
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert [t["transform"][0]["filter"] for t in texts] == [
        f"datum.place === '{p}'" for p in ("split", "split", "over", "under", "right")]


def test_the_curves_chart_carries_every_check():
    curves = [((0, 0.5), (40, 0.9), (80, 1.0)), ((0, 0.5), (40, 0.5), (80, 0.51))]
    spec = accuracy_curves_chart(["full", "from scratch"], curves)
    rows = rows_of(spec)
    assert len(rows) == 6 and {"way": "from scratch", "step": 80, "accuracy": 0.51} in rows
    assert spec["description"].endswith("full: 100.0% after 80 steps; from scratch: 51.0% after 80 steps.")


def _way(mode, trained, accuracy, curve=()):
    return SimpleNamespace(mode=mode, trained=trained, accuracy=accuracy, accuracy_before=0.5,
                           seconds=1.0, curve=curve)


SIZES = fm.Sizes.of(preset("bert-tiny"), 10)


def test_sizes_are_the_models_own():
    cfg = preset("bert-tiny")
    assert SIZES == fm.Sizes(10, cfg.d_model, cfg.kv_heads * cfg.d_head, cfg.n_layers, 138_368)


@pytest.mark.parametrize("prompt, prefix, words, absent", [
    (0.53, 0.83, ["Prompt tuning did no better than the head alone (within 3 points) and ended 36 points "
                  "below LoRA", "Prefix tuning gained 28 points over the head alone and ended 6 points "
                  "below LoRA", "A prompt is only 10 more input vectors", "each of the 2 layers read, directly",
                  "Lester et al.", "this model has 138,368"], []),
    (0.99, 0.98, ["Prompt tuning gained 44 points over the head alone and gained 10 points over LoRA"],
     ["A prompt is only", "Lester et al."]),
])
def test_the_prompt_and_prefix_sentence_reads_the_numbers(prompt, prefix, words, absent):
    modes = [_way("head only", 130, 0.55), _way("prompt tuning", 770, prompt),
             _way("prefix tuning", 2690, prefix), _way("LoRA", 2178, 0.89), _way("full", 138498, 1.0)]
    text = fm.tuned_inputs(modes, SIZES)
    assert text.startswith(f"Prompt tuning (770 numbers: 10 input vectors of 64 and the head) reached "
                           f"**{prompt:.0%}** and prefix tuning (2,690: 10 keys and 10 values of 64 "
                           f"numbers in each of 2 layers, and the head) **{prefix:.0%}**.")
    for w in words:
        assert w in text
    for w in absent:
        assert w not in text
    # the counts the sentence spells out are the formulas'
    assert 10 * SIZES.d_model + 130 == 770 and 2 * 2 * 10 * SIZES.kv_width + 130 == 2690
    assert fm.tuned_inputs(modes[:1] + modes[3:], SIZES) == ""  # neither trained: no sentence


@pytest.mark.parametrize("scratch_curve, words", [
    (((0, .5), (40, .5), (80, .52), (120, .5)), ["**50%** held-out, against **100%**",
                                                 "never got there in 120 steps", "within 10 points of chance"]),
    (((0, .5), (40, .6), (80, .7), (120, .8)), ["never got there in 120 steps", "Pretraining was worth 20 points"]),
    (((0, .5), (40, .6), (80, .9), (120, 1.0)), ["got there by step 120, 1.5 times as many",
                                                 "bought speed, not the end point"]),
])
def test_the_pretraining_sentence_reads_both_curves(scratch_curve, words):
    full = _way("full", 138498, 1.0, ((0, .5), (40, .9), (80, 1.0), (120, 1.0)))
    scratch = _way("from scratch", 138498, scratch_curve[-1][1], scratch_curve)
    text = fm.pretraining([full, scratch], every=40)
    assert "The pretrained model was at 100% by step 80 (held-out checked every 40 steps)" in text
    for w in words:
        assert w in text
    # steps to reach: the first check at or above the target, by hand
    target = full.accuracy
    by_hand = [s for s, a in scratch_curve if a >= target]
    assert fm.steps_to(scratch_curve, target) == (by_hand[0] if by_hand else None)
    assert fm.pretraining([full], every=40) == ""


def test_paragraphs_follow_the_ways_a_run_trained():
    base = [_way("head only", 130, 0.55), _way("LoRA", 2178, 0.89), _way("full", 138498, 1.0, ((0, .5), (4, 1.0)))]
    assert fm.paragraphs(base, 0.5, SIZES) == [fm.summary(base)]
    scratch = _way("from scratch", 138498, 0.5, ((0, .5), (4, .5)))
    both = fm.paragraphs([base[2], scratch], 0.5, SIZES, 4)
    assert both == [fm.measured([base[2], scratch]), fm.pretraining([base[2], scratch], every=4)]
    assert both[0] == ("Held-out accuracy: full (138,498 numbers trained) **100%**, from scratch "
                       "(138,498) **50%**; guessing scores 50%.")
