"""Grade one quiz answer, and summarise a finished quiz. Nothing here raises on learner input.

Numbers are read by the shared lenient parser, ``tfviz.exercises.answers.parse_number`` (a
hand-written scanner, never ``eval``). It accepts "0.88", " 0.88 ", "3/5", "-2", "−2",
"1e-3" and "88%"; the quiz adds thousands separators ("3,145,728") and a space before the
percent sign ("12 %"). A single comma is read as the shared ``comma_problem`` says: "0,88" asks
for a dot, and "-1,342" (-1.342 or -1342?) is read as -1342 only where the answer is a whole
number, and otherwise asked about. What a percent sign means:

* on an ordinary question "88%" is the number 0.88, so "88%" and "0.88" are the same answer;
* on a question whose answer is itself a percentage (``percent=True``), "1.5" and "1.5%" both
  mean 1.5 percent.

Input that is not one readable finite number (empty, words, HTML, emoji, control characters,
several numbers, 100,000 characters, infinity) gets ``valid=False`` and a friendly message, so
a page can let the learner try again without counting it.

>>> from tfviz.exercises.quiz.spec import KnownMistake
>>> q = NumericQuestion(id="demo", lesson=19, prompt="Patches of 16x16 in 224x224?",
...                     answer=196, tolerance=0.5, unit="a whole number",
...                     explanation="N = HW/P^2.", mistakes=(KnownMistake(14, "Per side."),))
>>> grade_numeric(q, " 196 ").correct, grade_numeric(q, "14").diagnosis
(True, 'Per side.')
>>> grade_numeric(q, "<b>196</b>").valid
False
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Container, Sequence

from tfviz.exercises.answers import comma_problem, parse_number
from tfviz.exercises.feedback import Feedback

from .spec import LESSONS, ChoiceQuestion, NumericQuestion, Question

_THOUSANDS = re.compile(r"\s*[+\-\u2212]?[1-9]\d{0,2}(,\d{3})+(\.\d+)?\s*%?\s*")
_SPACE_BEFORE_PERCENT = re.compile(r"(?<=\d)[ \t]+(?=%)")
_PERCENT_SIGNS = ("%", "\uff05", "\ufe6a")  # ASCII, full-width and small percent signs


def format_value(value: float, tolerance: float) -> str:
    """Round to the decimals the tolerance calls for, so the text itself counts as right.

    >>> format_value(0.880797, 0.005), format_value(196.0, 0.5), format_value(3145728, 0.5)
    ('0.88', '196', '3,145,728')
    """
    decimals = max(0, math.ceil(-math.log10(2 * tolerance)))
    text = f"{value:,.{decimals}f}" if abs(value) >= 10_000 else f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _show(value: float) -> str:
    """The learner's own number, unrounded enough to be recognisable: 0.015 -> '0.015'."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    return f"{value:.6g}"


def answer_text(question: Question) -> str:
    """The right answer as a learner would write it."""
    if isinstance(question, ChoiceQuestion):
        return question.options[question.answer]
    text = format_value(question.answer, question.tolerance)
    return text + "%" if question.percent else text


def _invalid(message: str, question: Question) -> Feedback:
    return Feedback(False, message, valid=False, expected=answer_text(question))


def grade_choice(question: Question, chosen_index: object) -> Feedback:
    """Grade the option the learner picked (an index into ``question.options``)."""
    if not isinstance(question, ChoiceQuestion):
        return _invalid("This question asks for a number, not a choice.", question)
    if isinstance(chosen_index, bool) or chosen_index is None:
        return _invalid("Pick one of the options first.", question)
    try:
        index = operator.index(chosen_index)
    except TypeError:
        return _invalid("Pick one of the options first.", question)
    if not 0 <= index < len(question.options):
        return _invalid(f"There is no option {index}; pick one of the "
                        f"{len(question.options)} options.", question)
    expected = answer_text(question)
    if index == question.answer:
        return Feedback(True, f"Correct! {question.explanation}", expected=expected)
    diagnosis = question.distractors.get(index)
    why = f"{diagnosis} " if diagnosis else ""
    return Feedback(False, f"Not quite. {why}The answer is “{expected}”. {question.explanation}",
                    diagnosis=diagnosis, expected=expected)


def _read(text: object, whole: bool = False) -> tuple[float, bool] | str:
    """(value, percent sign typed) or a sentence saying why the text is not one number."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(float(text))  # a number widget's value, not typed text
    if not isinstance(text, str):
        return "Type your answer as a number."
    if not text.strip():
        return "Type a number first."
    if problem := comma_problem(text, whole):
        return problem
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    text = _SPACE_BEFORE_PERCENT.sub("", text)
    result = parse_number(text)
    if not result.ok or result.value is None:
        return result.error or "Type one number."
    if not math.isfinite(result.value):
        return "Infinity is not the answer here; type a finite number."
    return result.value, any(sign in text for sign in _PERCENT_SIGNS)


def _hint(question: NumericQuestion, value: float) -> str | None:
    """A generic slip the bank did not list: percent vs fraction, sign, a near miss.

    A percentage is suspected only where the answer is a fraction between 0 and 1 (a
    probability, a share): "19600" for a count of 196 is not one. A near miss on a whole-number
    answer is never a matter of decimals: a count is miscounted, a calculation has a slip.
    """
    target, tol = question.answer, question.tolerance
    if question.percent and abs(value * 100 - target) <= tol:
        return (f"You wrote a fraction; the question asks for a percentage "
                f"({format_value(value, tol / 100)} = {format_value(value * 100, tol)}%).")
    if not question.percent and 0 < target < 1 and abs(value / 100 - target) <= tol:
        return (f"That looks like a percentage; write it as a plain number "
                f"({format_value(value / 100, tol)}) or with a % sign.")
    if target != 0 and abs(-value - target) <= tol:
        return "The size is right but the sign is not."
    if abs(value - target) <= 10 * tol:
        if question.count:
            return "Close, but a count has to be exact: check your count."
        if question.whole:
            return ("Close, but the answer is a whole number, so rounding is not the reason: "
                    "check each step of the calculation.")
        return f"Close, but not within ±{format_value(tol, tol / 10)}: keep more decimals."
    return None


def grade_numeric(question: Question, text: object) -> Feedback:
    """Grade a typed number against the question's value and tolerance."""
    if not isinstance(question, NumericQuestion):
        return _invalid("This question is answered by picking an option.", question)
    read = _read(text, question.whole)
    if isinstance(read, str):
        return _invalid(f"{read} This question wants a single number: {question.unit}.",
                        question)
    value, percent_typed = read
    if question.percent and percent_typed:
        value *= 100  # the parser read "1.5%" as 0.015; here the unit is percent
    expected = answer_text(question)
    if abs(value - question.answer) <= question.tolerance + 1e-12:
        return Feedback(True, f"Correct! {question.explanation}", expected=expected)
    near = [m for m in question.mistakes if abs(value - m.value) <= question.tolerance + 1e-12]
    if near:
        diagnosis = min(near, key=lambda m: abs(value - m.value)).explanation
    else:
        diagnosis = _hint(question, value)
    why = f"{diagnosis} " if diagnosis else ""
    shown = _show(value)
    return Feedback(False, f"Not quite: you gave {shown}. {why}The answer is {expected}. "
                           f"{question.explanation}", diagnosis=diagnosis, expected=expected)


def grade(question: Question, answer: object) -> Feedback:
    """``grade_choice`` or ``grade_numeric``, whichever fits the question."""
    if isinstance(question, ChoiceQuestion):
        return grade_choice(question, answer)
    return grade_numeric(question, answer)


def _is_right(result: bool | Feedback) -> bool:
    return result.correct if isinstance(result, Feedback) else bool(result)


def score(results: Sequence[bool | Feedback]) -> tuple[int, int, float]:
    """(number right, number answered, percent right); accepts bools or Feedback objects.

    >>> score([True, False, True, True])
    (3, 4, 75.0)
    """
    flags = [_is_right(r) for r in results]
    total = len(flags)
    right = sum(flags)
    return right, total, (100.0 * right / total if total else 0.0)


def summary_message(results: Sequence[bool | Feedback],
                    questions: Sequence[Question] | None = None,
                    pages: Container[int] | None = None) -> str:
    """A friendly sentence on the score; given the questions too, the lessons to revisit.

    ``pages`` holds the lesson numbers that have a page (the app passes its navigation); a
    missed topic without one is named, but never as a lesson to go back to.

    >>> summary_message([True, True, False, True])
    'You got 3 of 4 right (75%). Good progress.'
    """
    right, total, percent = score(results)
    if total == 0:
        return "No answers yet: pick a question to start."
    if right == total:
        verdict = "A perfect score!"
    elif percent >= 80:
        verdict = "Great work."
    elif percent >= 50:
        verdict = "Good progress."
    else:
        verdict = "Keep going: each question says which lesson or topic it comes from."
    text = f"You got {right} of {total} right ({percent:.0f}%). {verdict}"
    if questions is not None and len(questions) == total:
        missed = sorted({q.lesson for q, r in zip(questions, results) if not _is_right(r)})
        unwritten = [n for n in missed if pages is not None and n not in pages]
        missed = [n for n in missed if n not in unwritten]
        if missed:
            names = ", ".join(f"{n} ({LESSONS[n].topic})" for n in missed)
            text += f" Worth revisiting: lesson{'s' if len(missed) > 1 else ''} {names}."
        if unwritten:
            one = len(unwritten) == 1
            topics = " and ".join(LESSONS[n].topic for n in unwritten)
            text += (f" {topics} {'has' if one else 'have'} no lesson page yet: reread "
                     f"{'its explanation' if one else 'their explanations'} above.")
    return text
