"""The quiz bank (tfviz.exercises.quiz): its structure, the topics it covers, and that every
question is read-only and checks itself. Answers: test_quiz_answers.py; drawing and grading
learner input: test_quiz_draw_and_grade.py."""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter

import pytest

from tfviz.exercises.quiz import (LESSONS, QUESTIONS, SECTIONS, ChoiceQuestion, KnownMistake,
                                   NumericQuestion)
from tfviz.exercises.quiz.spec import choice
from quiz_parts import CHOICE, NUMERIC, ids

REQUIRED_SECTIONS = ("Foundations", "Attention", "The block", "Architectures and outputs",
                     "Efficiency and beyond")


# ----------------------------------------------------------------------------- the bank


def test_bank_size():
    assert len(QUESTIONS) >= 36


@pytest.mark.parametrize("section", REQUIRED_SECTIONS)
def test_every_section_has_at_least_two_questions(section):
    assert sum(q.section == section for q in QUESTIONS) >= 2


def test_sections_are_the_curriculum_ones():
    assert set(REQUIRED_SECTIONS) <= set(SECTIONS)
    assert {q.section for q in QUESTIONS} <= set(SECTIONS)


def test_ids_unique_and_slug_shaped():
    counts = Counter(ids(QUESTIONS))
    assert [i for i, n in counts.items() if n > 1] == []
    for qid in counts:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", qid), qid


@pytest.mark.parametrize("q", QUESTIONS, ids=ids(QUESTIONS))
def test_question_basics(q):
    assert q.lesson in LESSONS
    assert q.section == LESSONS[q.lesson].section
    assert q.prompt.strip() and q.explanation.strip()


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_choice_question_shape(q):
    assert 3 <= len(q.options) <= 5
    assert len(set(q.options)) == len(q.options)
    assert 0 <= q.answer < len(q.options)
    for i, text in q.distractors.items():
        assert 0 <= i < len(q.options) and i != q.answer and text.strip()


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_every_option_has_its_own_feedback(q):
    """Each wrong option is explained, and no two options (the right one's explanation
    included) share a feedback text."""
    wrong = [i for i in range(len(q.options)) if i != q.answer]
    assert sorted(q.distractors) == wrong
    texts = [" ".join(t.casefold().split()) for t in (q.explanation, *q.distractors.values())]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("q", NUMERIC, ids=ids(NUMERIC))
def test_numeric_question_shape(q):
    assert math.isfinite(q.answer) and q.tolerance > 0 and q.unit.strip()
    values = [q.answer] + [m.value for m in q.mistakes]
    for i, a in enumerate(values):
        for b in values[i + 1:]:  # a learner's number can match at most one of them
            assert abs(a - b) >= 2 * q.tolerance, (q.id, a, b)
    for m in q.mistakes:
        assert m.explanation.strip()


# The brief's list of topics, each of which must appear somewhere in the bank's text.
TOPICS = ["RNN", "BPE", "embedding", "sin(", "RoPE", "ALiBi", "hash table", "√d_k", "heads",
          "causal", "padding", "residual", "LayerNorm", "pre-LN", "post-LN", "FFN", "router",
          "capacity", "load-balancing", "cross", "weight tying", "greedy", "temperature",
          "top-p", "beam", "[MASK]", "[CLS]", "[SEP]", "low-rank", "prompt tuning", "KV cache",
          "sliding", "dilat", "global", "BigBird", "strided", "receptive field", "Linformer",
          "multi-query", "grouped-query", "patch", "class token", "110 million", "RMSNorm",
          "SwiGLU", "SiLU", "K/V heads"]


@pytest.mark.parametrize("topic", TOPICS)
def test_topic_is_covered(topic):
    def text(q):
        parts = [q.prompt, q.explanation]
        if isinstance(q, ChoiceQuestion):
            parts += [*q.options, *q.distractors.values()]
        return " ".join(parts).casefold()

    assert any(topic.casefold() in text(q) for q in QUESTIONS), topic


def test_questions_are_frozen_and_read_only():
    q = CHOICE[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.answer = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        q.distractors[0] = "x"  # type: ignore[index]
    assert isinstance(hash(q), int) and isinstance(hash(NUMERIC[0]), int)


@pytest.mark.parametrize("bad", [
    dict(answer=3),                             # index out of range
    dict(options=("a", "b")),                   # too few options
    dict(options=("a", "a", "b")),              # duplicates
    dict(distractors={}),                       # no wrong option explained
    dict(distractors={1: "no"}),                # option "c" has no feedback of its own
    dict(distractors={0: "the right one", 1: "no", 2: "nope"}),  # feedback on the answer
    dict(distractors={1: "Too small.", 2: "too  SMALL."}),  # two options share one feedback
    dict(distractors={1: "e", 2: "nope"}),      # a wrong option repeats the explanation
    dict(section="Attention"),                  # lesson 1 is Foundations
    dict(lesson=99),
])
def test_choice_question_checks_itself(bad):
    args = dict(id="x", lesson=1, prompt="p?", options=("a", "b", "c"), answer=0,
                explanation="e", distractors={1: "no", 2: "nope"})
    ChoiceQuestion(**args)  # valid as it stands
    with pytest.raises(ValueError):
        ChoiceQuestion(**(args | bad))


def test_choice_writes_each_option_beside_its_feedback():
    q = choice("x", 1, "p?", right="a", explanation="e", wrong={"b": "no", "c": "nope"})
    assert q == ChoiceQuestion(id="x", lesson=1, prompt="p?", options=("a", "b", "c"), answer=0,
                               explanation="e", distractors={1: "no", 2: "nope"})
    with pytest.raises(ValueError):  # the right option listed again as a wrong one
        choice("x", 1, "p?", right="a", explanation="e", wrong={"a": "no", "c": "nope"})


@pytest.mark.parametrize("bad", [
    dict(tolerance=0),
    dict(answer=math.inf),
    dict(mistakes=(KnownMistake(1.05, "too close to the answer"),)),
    dict(explanation=" "),
])
def test_numeric_question_checks_itself(bad):
    args = dict(id="x", lesson=19, prompt="p?", answer=1.0, tolerance=0.1, unit="u",
                explanation="e")
    with pytest.raises(ValueError):
        NumericQuestion(**(args | bad))
