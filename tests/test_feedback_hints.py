"""The words around right answers: hints, wordings and numbers the quiz and the exercises show
beside a learner's answer, each checked against what it claims (a count, a mask, a tokenizer,
a beam search), not only against its own text."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from tfviz.config import preset
from tfviz.exercises import ex_beam, ex_flying, ex_thinking
from tfviz.exercises.answers import parse_number, parse_numbers
from tfviz.exercises.core import Instance, answer_field
from tfviz.exercises.quiz import NumericQuestion, QUESTIONS, grade_choice, grade_numeric
from tfviz.exercises.quiz import question_by_id
from tfviz.model import Transformer
from tfviz.model.hooks import recording
from tfviz.model.masks import causal_pattern, sparse_pattern
from tfviz.tokenizer.served import train_served_tokenizer
from tfviz.tokenizer.teaching_bpe import train_bpe
from tfviz.tokenizer.teaching_encode import TeachingTokenizer

NUMERIC = [q for q in QUESTIONS if isinstance(q, NumericQuestion)]


def _near_misses(q: NumericQuestion) -> list[float]:
    """Values within 10 tolerances of the answer that no listed mistake explains."""
    step = q.tolerance * 3
    return [v for v in (q.answer + step, q.answer - step)
            if all(abs(v - m.value) > q.tolerance for m in q.mistakes)]


# ------------------------------------------------------------------- near misses and counts


@pytest.mark.parametrize("qid, typed", [("gqa-kv-heads", "6"), ("vit-patch-count", "195")])
def test_a_near_miss_on_a_count_says_check_your_count(qid, typed):
    f = grade_numeric(question_by_id(qid), typed)
    assert f.valid and not f.correct
    assert "check your count" in f.diagnosis and "decimal" not in f.message


@pytest.mark.parametrize("q", NUMERIC, ids=lambda q: q.id)
def test_decimals_are_advised_only_where_the_answer_has_them(q):
    """A whole-number answer within ±0.5 cannot be missed by rounding: no hint may say so."""
    whole = float(q.answer).is_integer() and q.tolerance < 1 and not q.percent
    for value in _near_misses(q):
        f = grade_numeric(q, repr(value))
        assert not f.correct
        assert ("decimals" in (f.diagnosis or "")) == (not whole)


@pytest.mark.parametrize("q", NUMERIC, ids=lambda q: q.id)
def test_the_percentage_hint_only_for_answers_between_0_and_1(q):
    """'19600' for 196 patches is no percentage; '88' for a probability of 0.88 is."""
    if q.percent:
        return
    f = grade_numeric(q, repr(q.answer * 100))
    assert ("percentage" in (f.diagnosis or "")) == (0 < q.answer < 1)


def test_the_count_example_from_the_report():
    f = grade_numeric(question_by_id("vit-patch-count"), "19600")
    assert not f.correct and "percentage" not in f.message


# ------------------------------------------------------------------------ a decimal comma


def test_an_ambiguous_comma_is_asked_about_in_the_quiz():
    q = question_by_id("layernorm-value")  # −1.342 (to ±0.01)
    f = grade_numeric(q, "-1,342")
    assert not f.valid and not f.correct
    assert "-1.342" in f.message and "-1342" in f.message and "decimal comma" in f.message
    assert grade_numeric(q, "-1.342").correct
    assert grade_numeric(q, "−1,342").valid is False  # the unicode minus too


def test_a_comma_in_a_whole_number_answer_is_a_thousands_separator():
    assert grade_numeric(question_by_id("lora-params"), "16,384").correct  # 16.384 is no count
    assert grade_numeric(question_by_id("encoder-layer-weights"), "3,145,728").correct


def _box(expected) -> Instance:
    return Instance("demo", "Demo", "", {}, (answer_field("x", "x", expected),), ())


def test_an_ambiguous_comma_is_asked_about_in_exercise_boxes():
    f = _box(-1.342).check("x", "-1,342")
    assert not f.valid and "-1.342" in f.message and "-1342" in f.message
    assert _box(-1.342).check("x", "-1.342").correct
    assert _box(1342).check("x", "1,342").correct  # a whole-number box: only 1342 fits
    assert parse_number("-1,342").value is None and parse_number("-1,342", whole=True).value == -1342
    f = _box(0.88).check("x", "0,88")
    assert not f.valid and "0.88" in f.message and "dot" in f.message


def test_decimal_commas_in_a_box_of_several_numbers_are_named():
    error = parse_numbers("0,5 0,5", expected_count=2).error
    assert "found 4" in error and "dot" in error
    assert parse_numbers("0.5,0.5", expected_count=2).values == (0.5, 0.5)  # still a separator
    assert "dot" not in parse_numbers("1 2 3", expected_count=2).error
