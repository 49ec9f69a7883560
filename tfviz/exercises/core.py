"""The shapes every exercise shares: answer boxes, steps, feedback, instances, specs.

An exercise is a spec with ``make(seed)``; ``make(None)`` gives the source's own numbers,
an int gives a fresh variant (the same int always gives the same numbers). An instance
holds the prompt, the data, the answer boxes and the worked steps, and grades an answer:

>>> f = answer_field("w", "weights", [0.8, 0.2], {"swap": ([0.2, 0.8], "Order swapped.")})
>>> inst = Instance("demo", "Demo", "Find the weights.", {}, (f,), ())
>>> inst.check("w", "0.8, 0.2").correct
True
>>> inst.check("w", "0.2 0.8").diagnosis
'Order swapped.'

A mistake that gives the right answer anyway is dropped when the box is built, so it can
never be reported; ``Instance.clean`` says whether every declared mistake survived and all
are told apart (generators draw again until it does).

A mistake may give another count of numbers than the box wants (a SwiGLU block's hidden
vector typed where its output belongs, the step after it skipped): such an answer is still
diagnosed, not only refused for its length:

>>> f = answer_field("y", "output", [1, 2], {"no_down": ([1, 0, 3], "Skipped W_down.")})
>>> Instance("demo", "Demo", "", {}, (f,), ()).check("y", "1 0 3").diagnosis
'Skipped W_down.'
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from tfviz.exercises.answers import DEFAULT_TOLERANCE, close, distinct, parse_numbers
from tfviz.exercises.feedback import Feedback
from tfviz.exercises.fmt import fmt_number, fmt_values, frozen_array
from tfviz.exercises.words import parse_words

__all__ = ["AnswerField", "Arrows", "ExerciseSpec", "Feedback", "Instance", "Mistake", "Step",
           "answer_field", "draw_clean", "fmt_number", "fmt_values", "frozen_array", "rng_for"]


@dataclass(frozen=True, eq=False)
class Mistake:
    """The answer a learner gets by one particular slip, and what to tell them."""

    name: str
    values: object  # np.ndarray of floats, or a tuple of words
    message: str


@dataclass(frozen=True, eq=False)
class AnswerField:
    """One answer box. ``expected`` is a float array (``shape`` says how to read it) or words."""

    name: str
    label: str
    expected: object
    shape: tuple[int, ...]
    tol: float = DEFAULT_TOLERANCE
    kind: Literal["numbers", "words"] = "numbers"
    unordered: bool = False
    mistakes: tuple[Mistake, ...] = ()
    declared: tuple[str, ...] = ()  # names of all mistakes asked for, kept or not

    @property
    def count(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def answer_text(self) -> str:
        return fmt_values(self.expected)

    @property
    def whole(self) -> bool:
        """Only whole numbers are right (a count, a parameter total): "1,342" is then 1342."""
        if self.kind == "words" or self.tol >= 1:
            return False
        exp = np.ravel(self.expected)
        return bool(np.isfinite(exp).all() and (exp == np.round(exp)).all())

    @property
    def format_hint(self) -> str:
        if self.kind == "words":
            return f"{self.count} word(s) or symbol(s), separated by spaces or commas"
        if len(self.shape) == 2:
            return (f"{self.count} numbers: a {self.shape[0]}×{self.shape[1]} matrix, row by row"
                    " (write -inf for −∞)")
        if self.count == 1:
            return "one number"
        return f"{self.count} numbers, separated by spaces or commas"

    @property
    def tolerance_text(self) -> str:
        if self.kind == "words":
            return "exact; capitals do not matter"
        return "exact" if self.tol < 0.5 and self.tol == 0 else f"±{fmt_number(self.tol, 4)}"

    def matches(self, got, target) -> bool:
        if self.kind == "words":
            return _words(got, self.unordered) == _words(target, self.unordered)
        g, t = list(got), list(np.ravel(target))
        if self.unordered:
            g, t = sorted(g), sorted(t)
        return close(g, t, self.tol)

    def differs(self, a, b) -> bool:
        if self.kind == "words":
            return _words(a, self.unordered) != _words(b, self.unordered)
        a, b = list(np.ravel(a)), list(np.ravel(b))
        if self.unordered:
            a, b = sorted(a), sorted(b)
        return distinct(a, b, self.tol)


def _words(values, unordered: bool) -> tuple[str, ...]:
    lowered = tuple(str(v).lower() for v in values)
    return tuple(sorted(lowered)) if unordered else lowered


def answer_field(name: str, label: str, expected, mistakes: Mapping[str, tuple] | None = None,
                 tol: float = DEFAULT_TOLERANCE, unordered: bool = False) -> AnswerField:
    """Build a box; ``mistakes`` maps a name to (values, message). Words if ``expected`` is a tuple
    of strings. Mistakes equal to the right answer (or undefined: NaN) are left out."""
    words = isinstance(expected, (tuple, list)) and all(isinstance(x, str) for x in expected)
    if words:
        exp, shape, kind = tuple(str(x) for x in expected), (len(expected),), "words"
    else:
        exp, kind = frozen_array(expected), "numbers"
        shape = exp.shape
    box = AnswerField(name, label, exp, shape, tol, kind, unordered)
    kept = []
    for key, (values, message) in (mistakes or {}).items():
        values = tuple(str(x) for x in values) if words else frozen_array(values)
        if not words and (np.isnan(values).any() or (np.shape(values) != shape
                                                     and np.size(values) == np.prod(shape))):
            continue  # undefined, or the same numbers in another shape: nothing to tell apart
        if box.differs(values, exp):
            kept.append(Mistake(key, values, message))
    return AnswerField(name, label, exp, shape, tol, kind, unordered, tuple(kept),
                       tuple(mistakes or {}))


@dataclass(frozen=True, eq=False)
class Step:
    """One step of the worked solution; ``values`` are the numbers it produces."""

    title: str
    formula_latex: str
    explanation: str
    values: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Arrows:
    """What the "flying arrows" picture needs: tokens and attention weights (heads × n × n)."""

    tokens: tuple[str, ...]
    weights: np.ndarray
    focus: int | None = None  # the query row the exercise asks about


@dataclass(frozen=True, eq=False)
class Instance:
    """One set of numbers for an exercise. ``data`` holds what the exercise gives (matrices,
    settings) by name; ``tokens`` are the words its rows stand for, ``focus`` the one it asks
    about (the row a worked step tints)."""

    exercise_id: str
    title: str
    prompt: str  # markdown, with every number needed
    data: Mapping[str, object]
    answer_fields: tuple[AnswerField, ...]
    steps: tuple[Step, ...]
    seed: int | None = None
    arrows: Arrows | None = None
    tokens: tuple[str, ...] = ()  # empty when the rows are not words
    focus: int | None = None  # None when the exercise asks about every row

    def field(self, name: str) -> AnswerField:
        for f in self.answer_fields:
            if f.name == name:
                return f
        raise KeyError(f"no answer box {name!r}; boxes: {[f.name for f in self.answer_fields]}")

    @property
    def clean(self) -> bool:
        """Every declared mistake kept in its box, and no two of them give the same answer."""
        for f in self.answer_fields:
            if len(f.mistakes) != len(f.declared):
                return False
            ms = f.mistakes
            if any(not f.differs(a.values, b.values) for i, a in enumerate(ms) for b in ms[i + 1:]):
                return False
        return True

    def check(self, field_name: str, text: object) -> Feedback:
        """Grade what the learner typed in one box. Never raises on odd input: text that is
        not an answer (or a box that does not exist) gets ``valid=False``."""
        try:
            f = self.field(field_name)
        except KeyError as err:
            return Feedback(False, str(err.args[0]), valid=False)
        if f.kind == "words":
            if f.count == 1 and isinstance(text, str) and len(text) < 200:
                text = re.sub(r"[\s,]+", "", text)  # "B B A" is the one token sequence "bba"
            parsed = parse_words(text, expected_count=f.count)
        else:
            parsed = parse_numbers(text, expected_count=f.count, whole=f.whole)
        if not parsed.ok:
            if (slip := _slip_of_another_count(f, text)) is not None:
                return slip
            return Feedback(False, f"{parsed.error} This box wants {f.format_hint}.", valid=False,
                            expected_shape=f.shape)
        got = parsed.values
        if f.matches(got, f.expected):
            return Feedback(True, f"Correct ({f.tolerance_text}).", expected_shape=f.shape)
        hits = [m for m in f.mistakes if f.matches(got, m.values)]
        if hits:
            return Feedback(False, "Not quite, but we can tell what happened.",
                            diagnosis=" ".join(m.message for m in hits),
                            mistake="+".join(m.name for m in hits), expected_shape=f.shape)
        return Feedback(False, "Not quite. " + _which_entries(f, got), expected_shape=f.shape)


def _slip_of_another_count(f: AnswerField, text: object) -> Feedback | None:
    """The diagnosis of an answer with the wrong count of numbers that is exactly what one of
    the box's slips gives (its count is not the box's); None for any other text."""
    others = [m for m in f.mistakes if f.kind == "numbers" and np.size(m.values) != f.count]
    if not others:
        return None
    parsed = parse_numbers(text, whole=f.whole)
    if not parsed.ok:
        return None
    hits = [m for m in others if close(parsed.values, np.ravel(m.values), f.tol)]
    if not hits:
        return None
    return Feedback(False, f"Not quite, but we can tell what happened (this box wants "
                           f"{f.format_hint}).", diagnosis=" ".join(m.message for m in hits),
                    mistake="+".join(m.name for m in hits), expected_shape=f.shape)


def _which_entries(f: AnswerField, got) -> str:
    if f.kind == "words" or f.unordered:
        return "Compare with the steps, one at a time."
    exp = np.ravel(f.expected)
    off = [i + 1 for i, (g, e) in enumerate(zip(got, exp)) if not close([g], [e], f.tol)]
    shown = ", ".join(map(str, off[:6])) + (", …" if len(off) > 6 else "")
    noun = "Entry" if len(off) == 1 else "Entries"
    return f"{noun} {shown} (counting from 1) are off by more than {f.tolerance_text}."


@dataclass(frozen=True)
class ExerciseSpec:
    id: str
    title: str
    lesson: int  # the lesson whose idea this practises (all are shown on lesson 20)
    summary: str
    build: Callable[[np.random.Generator | None, int | None], Instance]
    has_source: bool = True  # False: make(None) is our own example, the source has no numbers

    def make(self, seed: int | None = None) -> Instance:
        """None: the source's instance; an int (a class code): a variant, same int same numbers."""
        return self.build(None if seed is None else rng_for(self.id, seed), seed)


def rng_for(exercise_id: str, seed: int) -> np.random.Generator:
    """A generator fixed by (exercise, seed); crc32, unlike hash(), is the same every run."""
    return np.random.default_rng([zlib.crc32(exercise_id.encode()), int(seed) % 2**63])


def draw_clean(draw: Callable[[np.random.Generator], Instance], rng: np.random.Generator,
               tries: int = 200) -> Instance:
    """Call ``draw`` until it gives a clean instance (see :attr:`Instance.clean`)."""
    inst = draw(rng)
    for _ in range(tries):
        if inst.clean:
            return inst
        inst = draw(rng)
    return inst
