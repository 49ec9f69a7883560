"""What a quiz question is: two frozen dataclasses that check themselves on construction.

* ``ChoiceQuestion`` -- 3 to 5 options, the index of the right one, an explanation of why it is
  right, and ``distractors``: for every wrong option, its own reason why it is wrong. The bank
  writes these with ``choice(...)``, which puts each wrong option beside its feedback, so a
  reason can never end up under the wrong option.
* ``NumericQuestion`` -- a value, an absolute tolerance, a unit/format hint, an explanation, and
  ``mistakes``: wrong values that a specific slip produces (forgot the scale, used degrees, ...),
  so the grader can say which step went wrong.

The section of a question follows from its lesson number (``LESSONS``, from the one
curriculum table in ``tfviz.curriculum``), so the two can never disagree.

>>> q = NumericQuestion(id="demo", lesson=19, prompt="Patches in a 32x32 image, P=16?",
...                     answer=32 * 32 / 16**2, tolerance=0.5, unit="a whole number",
...                     explanation="N = HW/P^2 = 4.")
>>> q.section, q.kind
('Efficiency and beyond', 'numeric')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Literal, Mapping, Union

from tfviz import reference
from tfviz.curriculum import LESSONS, SECTIONS, Section  # noqa: F401 (SECTIONS: for the quiz package)


def _section_of(lesson: int) -> Section:
    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; expected 1..{max(LESSONS)}")
    return LESSONS[lesson].section


def _check_common(q: "ChoiceQuestion | NumericQuestion") -> None:
    if not q.id or q.id.strip() != q.id:
        raise ValueError(f"question id must be a non-empty trimmed string, got {q.id!r}")
    expected = _section_of(q.lesson)
    if q.section == "":
        object.__setattr__(q, "section", expected)  # filled in from the lesson
    elif q.section != expected:
        raise ValueError(f"{q.id}: lesson {q.lesson} belongs to {expected!r}, not {q.section!r}")
    if not q.prompt.strip():
        raise ValueError(f"{q.id}: empty prompt")
    if not q.explanation.strip():
        raise ValueError(f"{q.id}: empty explanation")


@dataclass(frozen=True)
class ChoiceQuestion:
    """A multiple-choice question; ``answer`` indexes ``options``.

    Every wrong option has its own entry in ``distractors``, and no two share a text (nor
    repeat the explanation): a learner who picks it reads why *that* option is wrong. Options
    are always shown shuffled (see ``selection.shuffle_options``), so their order here carries
    no meaning; the bank lists the right one first.
    """

    id: str
    lesson: int
    prompt: str
    options: tuple[str, ...]
    answer: int
    explanation: str
    # option index -> why that option is wrong; read-only after construction
    distractors: Mapping[int, str] = field(default_factory=dict, hash=False)
    section: Section | Literal[""] = ""  # derived from the lesson when left empty

    kind: ClassVar[Literal["choice"]] = "choice"

    def __post_init__(self) -> None:
        _check_common(self)
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "distractors", MappingProxyType(dict(self.distractors)))
        if not 3 <= len(self.options) <= 5:
            raise ValueError(f"{self.id}: needs 3-5 options, has {len(self.options)}")
        if len(set(self.options)) != len(self.options):
            raise ValueError(f"{self.id}: duplicate options")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"{self.id}: answer index {self.answer} out of range")
        for i, text in self.distractors.items():
            if not 0 <= i < len(self.options) or i == self.answer or not text.strip():
                raise ValueError(f"{self.id}: bad distractor entry {i!r}")
        missing = [self.options[i] for i in range(len(self.options))
                   if i != self.answer and i not in self.distractors]
        if missing:
            raise ValueError(f"{self.id}: no feedback for the wrong option(s) {missing}")
        texts = [_plain(t) for t in (self.explanation, *self.distractors.values())]
        if len(set(texts)) != len(texts):
            raise ValueError(f"{self.id}: two options share one feedback text")


def _plain(text: str) -> str:
    """Text compared for sameness: case and spacing ignored."""
    return " ".join(text.casefold().split())


def choice(id: str, lesson: int, prompt: str, right: str, explanation: str,
           wrong: Mapping[str, str]) -> ChoiceQuestion:
    """A choice question written option by option: the right one with the explanation of why
    it is right, then each wrong option beside the feedback written for it.

    >>> q = choice("demo", 4, "2 + 2?", right="4", explanation="Two and two make four.",
    ...            wrong={"3": "One short.", "22": "That writes the digits side by side."})
    >>> q.options, q.answer, q.distractors[2]
    (('4', '3', '22'), 0, 'That writes the digits side by side.')
    """
    return ChoiceQuestion(id=id, lesson=lesson, prompt=prompt, options=(right, *wrong),
                          answer=0, explanation=explanation,
                          distractors=dict(enumerate(wrong.values(), start=1)))


@dataclass(frozen=True)
class KnownMistake:
    """A wrong value that a particular slip produces, and what that slip was."""

    value: float
    explanation: str


@dataclass(frozen=True)
class NumericQuestion:
    """A question answered with one number, right when within ``tolerance`` of ``answer``.

    ``percent=True`` means the answer is itself a percentage: "12" and "12%" both mean 12.
    """

    id: str
    lesson: int
    prompt: str
    answer: float
    tolerance: float
    unit: str  # format hint shown beside the input box
    explanation: str
    mistakes: tuple[KnownMistake, ...] = ()
    section: Section | Literal[""] = ""
    percent: bool = False

    kind: ClassVar[Literal["numeric"]] = "numeric"

    def __post_init__(self) -> None:
        _check_common(self)
        object.__setattr__(self, "mistakes", tuple(self.mistakes))
        object.__setattr__(self, "answer", float(self.answer))
        if not (math.isfinite(self.answer) and math.isfinite(self.tolerance)):
            raise ValueError(f"{self.id}: answer and tolerance must be finite")
        if self.tolerance <= 0:
            raise ValueError(f"{self.id}: tolerance must be positive")
        for m in self.mistakes:
            if abs(m.value - self.answer) <= self.tolerance:
                raise ValueError(f"{self.id}: known mistake {m.value} is within tolerance")

    @property
    def whole(self) -> bool:
        """Only one whole number is right (196 ± 0.5): a near miss is never a rounding slip,
        and "16,384" can only mean 16384."""
        return self.answer.is_integer() and self.tolerance < 1 and not self.percent

    @property
    def count(self) -> bool:
        """A whole number that counts things, as the box tells the learner ("a whole number")."""
        return self.whole and "whole number" in self.unit


Question = Union[ChoiceQuestion, NumericQuestion]


def softmax(*scores: float) -> tuple[float, ...]:
    """The reference's softmax of a few scores, as plain floats for writing answers as
    formulas: (14, 12) -> (0.8808, 0.1192)."""
    return tuple(float(p) for p in reference.softmax(scores))


def softmax_first(*scores: float) -> float:
    """Weight of the first score: ``softmax_first(14, 12)`` -> 0.8808."""
    return softmax(*scores)[0]
