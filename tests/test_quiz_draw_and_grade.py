"""The quiz (tfviz.exercises.quiz): drawing a quiz (deterministic, shuffled, by section), and
grading what a learner types, with the feedback and score they see."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tfviz.exercises.quiz import (QUESTIONS, ChoiceQuestion, Feedback, answer_text, format_value,
                                   grade, grade_choice, grade_numeric, make_quiz, question_by_id,
                                   resolve_sections, score, shuffle_options, summary_message)
from quiz_parts import CHOICE, NUMERIC, ids

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------- shuffling and drawing


@pytest.mark.parametrize("seed", [0, 1, 42, 2**40])
def test_make_quiz_is_deterministic(seed):
    a, b = make_quiz(seed), make_quiz(seed)
    assert a == b
    assert sorted(ids(a)) == sorted(ids(QUESTIONS))  # a permutation of the whole bank


def test_different_seeds_give_different_orders():
    orders = {tuple(ids(make_quiz(seed))) for seed in range(5)}
    assert len(orders) == 5


@pytest.mark.parametrize("seed", [0, 3, 99])
def test_option_shuffle_remaps_answer_and_distractors(seed):
    originals = {q.id: q for q in QUESTIONS}
    moved = 0
    for q in make_quiz(seed):
        o = originals[q.id]
        if not isinstance(q, ChoiceQuestion):
            assert q == o
            continue
        assert sorted(q.options) == sorted(o.options)
        assert q.options[q.answer] == o.options[o.answer]
        assert {q.options[i]: t for i, t in q.distractors.items()} == \
               {o.options[i]: t for i, t in o.distractors.items()}
        assert grade_choice(q, q.answer).correct
        assert grade_choice(q, o.answer).correct == (q.options[o.answer] == o.options[o.answer])
        moved += q.options != o.options
    assert moved > len(CHOICE) // 2  # options really are shuffled


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_right_answer_is_not_always_first(q):
    """The bank lists the right option first, so every question must be shuffled when drawn:
    over a few seeds its answer lands somewhere else, in make_quiz as in shuffle_options."""
    seeds = range(5)
    drawn = [next(d for d in make_quiz(seed) if d.id == q.id) for seed in seeds]
    assert drawn == [shuffle_options(q, seed) for seed in seeds]
    assert {d.answer for d in drawn} != {0}, [d.answer for d in drawn]
    assert all(d.options[d.answer] == q.options[q.answer] for d in drawn)


@pytest.mark.parametrize("qid", ["pipeline-order", "attention-step-order", "moe-top1-experts",
                                 "top-p-set"])
def test_ordered_answers_are_shuffled_too(qid):
    """Questions whose options are orders or counts were once exempt from shuffling."""
    drawn = [shuffle_options(question_by_id(qid), seed) for seed in range(5)]
    assert len({d.options for d in drawn}) > 1
    assert any(d.answer != 0 for d in drawn)


def test_option_order_does_not_depend_on_the_draw():
    for q in make_quiz(5, n=10, sections=["Attention"]):
        assert q == shuffle_options(question_by_id(q.id), 5)
        assert q in make_quiz(5)


def test_shuffle_off_keeps_bank_options():
    for q in make_quiz(8, shuffle=False):
        assert q == question_by_id(q.id)


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 1), (10, 10), (10_000, len(QUESTIONS))])
def test_make_quiz_n(n, expected):
    quiz = make_quiz(3, n=n)
    assert len(quiz) == expected
    assert ids(quiz) == ids(make_quiz(3))[:expected]  # a prefix of the full order


@pytest.mark.parametrize("names, expected", [
    (["Attention"], {"Attention"}),
    (["the block", "PRACTICE"], {"The block", "Practice"}),
    (["block", " the  BLOCK "], {"The block"}),
    (["Architectures", "Efficiency"], {"Architectures and outputs", "Efficiency and beyond"}),
    ("Foundations", {"Foundations"}),
])
def test_make_quiz_sections(names, expected):
    quiz = make_quiz(11, sections=names)
    assert {q.section for q in quiz} == expected
    assert len(quiz) == sum(q.section in expected for q in QUESTIONS)


@pytest.mark.parametrize("bad", [["Nonsense"], ["the"], [""], ["Attention", "Poetry"]])
def test_unknown_section_is_refused(bad):
    with pytest.raises(ValueError, match="unknown section"):
        make_quiz(0, sections=bad)


def test_bad_draw_arguments():
    with pytest.raises(ValueError):
        make_quiz(0, n=-1)
    with pytest.raises(TypeError):
        make_quiz("seed")  # type: ignore[arg-type]
    assert resolve_sections(["attention", "Attention"]) == ("Attention",)


def test_draw_is_identical_in_another_process():
    """String seeds go through SHA-512, so a different PYTHONHASHSEED changes nothing."""
    def fingerprint(quiz):
        return repr([(q.id, getattr(q, "options", None)) for q in quiz])

    code = ("from tfviz.exercises.quiz import make_quiz; "
            "print(repr([(q.id, getattr(q, 'options', None)) for q in make_quiz(1234, n=15)]))")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    assert run.stdout.strip() == fingerprint(make_quiz(1234, n=15))


def test_quiz_code_never_imports_streamlit():
    sources = list((REPO / "tfviz" / "exercises" / "quiz").rglob("*.py"))
    assert sources
    for path in sources:
        assert not re.search(r"^\s*(import|from)\s+streamlit", path.read_text(), re.M), path


# --------------------------------------------------------------------- grading learner input

TM = "thinking-machines-weight"  # answer softmax(14, 12)[0] ≈ 0.8808, tolerance 0.005


@pytest.mark.parametrize("text", ["0.88", " 0.88 ", "0.881", "88%", "88 %", "22/25", ".88",
                                  "+0.88", "8.8e-1", "０.８８", "\t0.88\n"])
def test_numeric_right_answers(text):
    f = grade_numeric(question_by_id(TM), text)
    assert f.correct and f.valid and f.message.startswith("Correct")


@pytest.mark.parametrize("text, hint", [
    ("1", "forgot the scale"),
    ("0.5622", "instead of √d_k"),
    ("88", "percentage"),
    ("-0.88", "sign"),
    ("0.9", "Close"),
    ("0.1", None),
])
def test_numeric_wrong_answers_say_what_went_wrong(text, hint):
    f = grade_numeric(question_by_id(TM), text)
    assert f.valid and not f.correct
    assert "0.88" in f.message  # the right answer is shown
    if hint is None:
        assert f.diagnosis is None
    else:
        assert hint in f.diagnosis and hint in f.message


GARBAGE = ["", "   ", "abc", "🙂", "😀 0.88", "<b>0.88</b>", "<script>alert(1)</script>",
           "x" * 100_000, "9" * 100_000, "0.8\x008", "\x00", "0.88 0.12", "0.88, 0.12",
           "0,88", "1/0", "3/5/7", "inf", "-∞", "nan", "1e999", "0x10", "2**3", "__import__('os')",
           "sqrt(2)", "--1", None, [], {}, object(), b"0.88", True]


@pytest.mark.parametrize("text", GARBAGE, ids=lambda t: repr(t)[:20])
def test_numeric_garbage_is_refused_kindly(text):
    f = grade_numeric(question_by_id(TM), text)
    assert isinstance(f, Feedback)
    assert not f.correct and not f.valid
    assert isinstance(f.message, str) and 0 < len(f.message) < 400
    assert "\x00" not in f.message
    assert "probability" in f.message  # the format hint is repeated


@pytest.mark.parametrize("text, correct", [
    ("1.5", True), ("1.5%", True), ("1.5 %", True), ("3/2", True), ("0.015", False),
    ("12", False),
])
def test_percent_question(text, correct):
    q = question_by_id("bert-mask-share")
    f = grade_numeric(q, text)
    assert f.valid and f.correct == correct
    if text == "0.015":
        assert "percentage" in f.diagnosis
    if text == "12":
        assert f.diagnosis == "12% is the share replaced by [MASK] (80% of 15%)."


@pytest.mark.parametrize("text, correct", [
    ("3,145,728", True), ("3145728", True), ("+3,145,728", True), ("3145728.0", True),
    ("3,145,729", False),
])
def test_thousands_separators(text, correct):
    f = grade_numeric(question_by_id("encoder-layer-weights"), text)
    assert f.valid and f.correct == correct


def test_decimal_comma_gets_a_specific_hint():
    f = grade_numeric(question_by_id(TM), "0,88")
    assert not f.valid and "dot" in f.message


@pytest.mark.parametrize("choice", [None, True, False, -1, 4, 5, 99, "0", 0.0, 1.5, [], "a"],
                         ids=repr)
def test_choice_garbage_is_refused_kindly(choice):
    q = question_by_id("soft-lookup")
    f = grade_choice(q, choice)
    assert not f.correct and not f.valid and f.message


def test_choice_accepts_numpy_integers():
    q = question_by_id("soft-lookup")
    assert grade_choice(q, np.int64(q.answer)).correct


def test_wrong_kind_of_answer_does_not_raise():
    assert not grade_choice(NUMERIC[0], 0).valid
    assert not grade_numeric(CHOICE[0], "1").valid
    assert grade(CHOICE[0], CHOICE[0].answer).correct
    assert grade(NUMERIC[0], answer_text(NUMERIC[0])).correct


def test_feedback_is_frozen():
    f = grade(CHOICE[0], 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.correct = True  # type: ignore[misc]


@pytest.mark.parametrize("value, tol, text", [
    (0.8807970779778823, 0.005, "0.88"), (196.0, 0.5, "196"), (3145728.0, 0.5, "3,145,728"),
    (-0.4161468365471424, 0.005, "-0.42"), (-0.4161468365471424, 0.001, "-0.416"),
    (1.5, 0.05, "1.5"), (-0.0001, 0.01, "0"),
])
def test_format_value(value, tol, text):
    assert format_value(value, tol) == text


# ------------------------------------------------------------------------- score, summary


@pytest.mark.parametrize("results, expected", [
    ([], (0, 0, 0.0)),
    ([True], (1, 1, 100.0)),
    ([False, False], (0, 2, 0.0)),
    ([True, False, True, True], (3, 4, 75.0)),
])
def test_score(results, expected):
    assert score(results) == expected


def test_score_accepts_feedback():
    q = question_by_id("soft-lookup")
    results = [grade_choice(q, q.answer), grade_choice(q, (q.answer + 1) % 4)]
    assert score(results) == (1, 2, 50.0)


@pytest.mark.parametrize("results, phrase", [
    ([], "No answers yet"),
    ([True, True], "perfect"),
    ([True] * 4 + [False], "Great work"),
    ([True, False], "Good progress"),
    ([False, False, True], "Keep going"),
])
def test_summary_message(results, phrase):
    assert phrase in summary_message(results)


def test_summary_names_lessons_to_revisit():
    qs = [question_by_id("thinking-machines-weight"), question_by_id("vit-patch-count"),
          question_by_id("kv-cache-contents")]
    text = summary_message([False, True, False], qs)
    assert "1 of 3" in text
    assert "5 (Self-attention step by step)" in text and "16 (KV cache)" in text
    assert "19" not in text
