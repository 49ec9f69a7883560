"""What the teacher takes home from a live class: its answers as CSV, and a summary per
question. Nothing in either names a student (``LiveStore.export_rows`` keeps none).

>>> rows = [{"exercise": "layernorm", "box": "std", "correct": False, "slip": "variance",
...          "time": "2026-11-27T09:00:00Z"}]
>>> print(answers_csv(rows), end="")
exercise,box,correct,slip,time
layernorm,std,false,variance,2026-11-27T09:00:00Z
"""
from __future__ import annotations

import csv
import io

from tfviz.classroom.checkin import CheckinRow
from tfviz.classroom.live import StepSummary

ANSWER_COLUMNS = ("exercise", "box", "correct", "slip", "time")


def _csv(header, rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def answers_csv(rows: list[dict]) -> str:
    """One line per answer, oldest first."""
    return _csv(ANSWER_COLUMNS, ([r[c] if c != "correct" else str(r[c]).lower()
                                  for c in ANSWER_COLUMNS] for r in rows))


def summary_csv(steps: tuple[StepSummary, ...], checkin: tuple[CheckinRow, ...]) -> str:
    """One line per answer box (answered, right, share right, the three commonest slips), then
    one per check-in question (right and answered, before and after).

    >>> from tfviz.classroom.live import SlipCount
    >>> s = StepSummary("layernorm", "std", 4, 1, (SlipCount("variance", "gave the variance", 3),))
    >>> print(summary_csv((s,), (CheckinRow("why-scale", (1, 4), (3, 4)),)), end="")
    kind,question,box,answered,right,share right,most common slips,before right,before answered,\
after right,after answered
    exercise,layernorm,std,4,1,25%,3 gave the variance,,,,
    check-in,why-scale,,,,,,1,4,3,4
    """
    header = ("kind", "question", "box", "answered", "right", "share right", "most common slips",
              "before right", "before answered", "after right", "after answered")
    lines = [("exercise", s.exercise_id, s.step, s.answered, s.right,
              f"{100 * s.right / s.answered:.0f}%" if s.answered else "",
              "; ".join(f"{c.count} {c.label}" for c in s.slips[:3]), "", "", "", "")
             for s in steps]
    lines += [("check-in", c.question_id, "", "", "", "", "", *c.before, *c.after) for c in checkin]
    return _csv(header, lines)
