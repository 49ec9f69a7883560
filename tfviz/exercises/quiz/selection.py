"""Pick and order the questions of one quiz, deterministically from a seed.

The same seed always gives the same questions in the same order, with the same option order:
the question order comes from ``random.Random(seed)``, and each question's options are shuffled
by their own generator seeded with ``"{seed}:{id}"`` (string seeds are hashed with SHA-512, so
this does not depend on PYTHONHASHSEED, and a question keeps its option order whichever other
questions were drawn with it).

>>> [q.id for q in make_quiz(seed=1, n=3)] == [q.id for q in make_quiz(seed=1, n=3)]
True
>>> q = shuffle_options(question_by_id("soft-lookup"), seed=1)
>>> q.options[q.answer]
'A weighted average of all values, weighted by how well each key matches'
"""

from __future__ import annotations

import dataclasses
import operator
import random
from collections.abc import Iterable

from .bank import QUESTIONS
from .spec import SECTIONS, ChoiceQuestion, Question


def question_by_id(question_id: str) -> Question:
    """The bank's question with this id (KeyError if there is none)."""
    for q in QUESTIONS:
        if q.id == question_id:
            return q
    raise KeyError(question_id)


def _short_name(section: str) -> str:
    """The word a section is known by: 'The block' -> 'block', 'Efficiency and beyond' ->
    'efficiency'."""
    words = section.casefold().split()
    return words[1] if words[0] == "the" else words[0]


def resolve_sections(names: str | Iterable[str]) -> tuple[str, ...]:
    """Section names as in the curriculum, forgiving case and the short name.

    >>> resolve_sections(["attention", "Efficiency", "block"])
    ('Attention', 'Efficiency and beyond', 'The block')
    """
    if isinstance(names, str):
        names = [names]
    found = []
    for name in names:
        key = " ".join(str(name).casefold().split())
        hits = [s for s in SECTIONS if key in (s.casefold(), _short_name(s))]
        if not hits:
            raise ValueError(f"unknown section {name!r}; choose from {', '.join(SECTIONS)}")
        found.append(hits[0])
    return tuple(dict.fromkeys(found))


def shuffle_options(question: Question, seed: int) -> Question:
    """The same question with its options in a seed-dependent order, answer index remapped.

    Every choice question is shuffled: the bank lists the right option first, so a question
    left in bank order would give its answer away. Numeric questions come back unchanged.
    """
    if not isinstance(question, ChoiceQuestion):
        return question
    order = list(range(len(question.options)))  # order[new_position] = old_position
    random.Random(f"{operator.index(seed)}:{question.id}").shuffle(order)
    new_position = {old: new for new, old in enumerate(order)}
    return dataclasses.replace(
        question,
        options=tuple(question.options[old] for old in order),
        answer=new_position[question.answer],
        distractors={new_position[old]: text for old, text in question.distractors.items()},
    )


def make_quiz(seed: int, n: int | None = None, sections: list[str] | None = None,
              *, shuffle: bool = True) -> list[Question]:
    """``n`` questions (all when None or more than there are) in a seed-dependent order.

    ``sections`` limits the draw (names as in ``SECTIONS``; case and the short name such as
    "Efficiency" or "block" are forgiven; an unknown name raises ValueError). With ``shuffle``
    the options of choice questions are reordered too, with the answer index remapped.
    """
    seed = operator.index(seed)
    pool = list(QUESTIONS)
    if sections is not None:
        wanted = set(resolve_sections(sections))
        pool = [q for q in pool if q.section in wanted]
    if n is not None:
        n = operator.index(n)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
    random.Random(seed).shuffle(pool)
    chosen = pool if n is None else pool[:n]
    return [shuffle_options(q, seed) for q in chosen] if shuffle else chosen
