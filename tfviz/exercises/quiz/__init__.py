"""The quiz: conceptual questions with explanations, for every section of the curriculum.

A page draws a quiz, shows each question, and grades what the learner picks or types:

>>> quiz = make_quiz(seed=7, n=5, sections=["Attention"])
>>> len(quiz), {q.section for q in quiz}
(5, {'Attention'})
>>> q = question_by_id("thinking-machines-weight")
>>> grade_numeric(q, "0.88").correct
True
>>> grade_numeric(q, "1").diagnosis
'Without the ÷√d_k step, softmax(112, 96) is practically 1: forgot the scale.'
>>> score([True, False, True])
(2, 3, 66.66666666666667)

Layout: ``spec`` (the two question dataclasses), ``bank/`` (the questions, one file per
section), ``selection`` (seeded draw and option shuffling), ``grading`` (Feedback, grading,
score). Numbers are parsed by the shared ``tfviz.exercises.answers.parse_number``.
"""

from __future__ import annotations

from .bank import QUESTIONS
from .grading import (
    Feedback,
    answer_text,
    format_value,
    grade,
    grade_choice,
    grade_numeric,
    score,
    summary_message,
)
from .selection import make_quiz, question_by_id, resolve_sections, shuffle_options
from .spec import (
    LESSONS,
    SECTIONS,
    ChoiceQuestion,
    KnownMistake,
    NumericQuestion,
    Question,
)

__all__ = [
    "QUESTIONS", "SECTIONS", "LESSONS",
    "ChoiceQuestion", "NumericQuestion", "KnownMistake", "Question", "Feedback",
    "make_quiz", "shuffle_options", "question_by_id", "resolve_sections",
    "grade", "grade_choice", "grade_numeric", "answer_text", "format_value",
    "score", "summary_message",
]
