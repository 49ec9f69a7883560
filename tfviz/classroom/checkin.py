"""The check-in: a few quiz questions a teacher asks the class before a lesson and again after
it, to see what the lesson changed.

The teacher picks 3-5 questions of the quiz (``tfviz.exercises.quiz``) and opens them for a
phase; the students answer on the quiz page, and each student's first graded try per question
and phase reaches the store as an answer row of the exercise ``check-in:before`` or
``check-in:after``. The teacher sees, per question, the share right before and after:

>>> rows = [{"exercise": "check-in:before", "box": "q1", "correct": c} for c in (1, 0, 0, 0)]
>>> rows += [{"exercise": "check-in:after", "box": "q1", "correct": c} for c in (1, 1, 0)]
>>> rows += [{"exercise": "flying-arrows", "box": "scores", "correct": 1}]  # not a check-in
>>> (row,) = checkin_rows(rows)
>>> row.before, row.after, row.change_text()
((1, 4), (2, 3), '25% → 67%')
"""
from __future__ import annotations

from dataclasses import dataclass

from tfviz.classroom.guard import BadValue

PHASES = ("before", "after")
CHECKIN = {phase: f"check-in:{phase}" for phase in PHASES}  # the answer rows' exercise
MIN_QUESTIONS, MAX_QUESTIONS = 3, 5


def validated_checkin(questions: object, phase: object) -> tuple[str, ...]:
    """The question ids, checked against the quiz bank; raises BadValue with a reason."""
    from tfviz.exercises.quiz import QUESTIONS

    known = {q.id for q in QUESTIONS}
    if phase not in PHASES:
        raise BadValue("A check-in is asked before or after a lesson.")
    if not isinstance(questions, (list, tuple)) or not all(isinstance(q, str) for q in questions):
        raise BadValue("Pick the check-in's questions from the quiz.")
    asked = tuple(dict.fromkeys(questions))  # in the teacher's order, each once
    if not MIN_QUESTIONS <= len(asked) <= MAX_QUESTIONS:
        raise BadValue(f"A check-in asks {MIN_QUESTIONS} to {MAX_QUESTIONS} questions; "
                       f"you picked {len(asked)}.")
    if unknown := [q for q in asked if q not in known]:
        raise BadValue(f"The quiz has no question “{unknown[0][:40]}”.")
    return asked


@dataclass(frozen=True)
class CheckinRow:
    """One question of the check-in: (right, answered) before and after the lesson."""

    question_id: str
    before: tuple[int, int]
    after: tuple[int, int]

    @staticmethod
    def share(right_answered: tuple[int, int]) -> str:
        """(1, 4) -> '25%'; nobody answered -> '–'."""
        right, answered = right_answered
        return f"{100 * right / answered:.0f}%" if answered else "–"

    def change_text(self) -> str:
        return f"{self.share(self.before)} → {self.share(self.after)}"


def checkin_rows(rows) -> tuple[CheckinRow, ...]:
    """Answer rows -> one CheckinRow per question asked, in the order first answered."""
    counts: dict[str, dict[str, list[int]]] = {}
    for r in rows:
        for phase, exercise in CHECKIN.items():
            if r["exercise"] == exercise:
                c = counts.setdefault(r["box"], {p: [0, 0] for p in PHASES})[phase]
                c[0] += bool(r["correct"])
                c[1] += 1
    return tuple(CheckinRow(q, tuple(c["before"]), tuple(c["after"])) for q, c in counts.items())
