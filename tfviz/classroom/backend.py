"""What a live-class backend is: the data half of the store, with no rules and no words.

``tfviz.classroom.live.LiveStore`` holds the rules (who may do what, the limits, what a learner
is told); a backend holds the data and makes each step atomic across every process that opens
it. Two implement :class:`Backend`: ``sqlite_store.SQLiteStore`` (one file, one machine) and
``redis_store.RedisStore`` (replicas on several machines). A backend never builds a sentence for
a learner: it answers with an :class:`Outcome`, and ``live`` says it in words.

Records are plain dicts: ``code``, ``key``, ``state`` (a ``LiveState`` as a dict), ``status``
(``"live"``, ``"ended"``, ``"expired"``), ``last_teacher``, ``gone_at``, ``started``.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class NoSuchClass(LookupError):
    """``change`` found no record of the code (never created, or swept). Not a learner's
    message: ``live`` says it in words."""


class Outcome(enum.Enum):
    """What became of an answer sent to the store."""

    OK = "ok"  # stored for good
    GONE = "gone"  # the class is not live (ended, expired, or never was)
    FULL = "full"  # the class holds as many answers as it may
    LATE = "late"  # the countdown on that question had reached zero


@dataclass(frozen=True)
class Tally:
    """The counts of one class's answers, kept by the backend (SQL ``GROUP BY``, a Redis hash
    updated with each answer), so reading them is one read, not a scan in Python.

    ``boxes``: (exercise, box) -> (answered, right); ``slips``: (exercise, box, slip) -> count;
    ``total``: answers stored; ``not_downloaded``: of them, how many arrived after the teacher's
    last download of the answers (all of them before any download)."""

    boxes: dict[tuple[str, str], tuple[int, int]]
    slips: dict[tuple[str, str, str], int]
    total: int
    not_downloaded: int


@dataclass(frozen=True)
class Presence:
    """Who is in the room, counted, never named: students whose page said "here" since a time,
    how many of them have "I'm lost" on, and the answers to one box."""

    present: int
    lost: int
    answered: int


@runtime_checkable
class Backend(Protocol):
    """The data of every live class. Each method is one atomic step of the backend; any failure
    of the backend itself (unreachable, locked too long, disk full) raises ``StoreDown`` with
    nothing written."""

    url: str  # where the data lives, any password masked

    def durability(self) -> str:
        """What an acknowledged write survives, in words (for ``python -m ...store``)."""

    # -- classes --
    def get(self, code: str) -> dict | None:
        """The record of ``code``, or None."""

    def create(self, rec: dict) -> bool:
        """Store a new live record, and count it among the live ones, in one step; False (and
        nothing written) when its code is taken."""

    def change(self, code: str, fn: Callable[[dict], dict]) -> dict:
        """Read the record, apply ``fn``, write the result, with no other writer in between;
        ``fn`` may raise to write nothing. Raises NoSuchClass when there is no record."""

    def live_count(self, since: float) -> tuple[int, tuple[str, float] | None]:
        """(live classes whose teacher acted after ``since``, (code, last action) of the
        oldest of them or None)."""

    def sweep(self, now: float, idle_s: float, remember_s: float, budget_s: float,
              present_s: float) -> None:
        """Close classes idle ``idle_s``; forget closed classes, and their answers, ``remember_s``
        after they closed; forget rate-limit tries older than ``budget_s`` and "here" marks
        older than ``present_s``."""

    # -- answers --
    def add_answer(self, code: str, row: dict, *, alive_since: float, max_answers: int,
                   max_slip_kinds: int, late_after: float) -> Outcome:
        """Store one answer row (exercise, box, correct, slip, t) if the class is live (teacher
        acted after ``alive_since``), not full, and the row's box is not the class's current
        question with a countdown that ended more than ``late_after`` seconds before ``t``.
        A slip beyond the box's ``max_slip_kinds`` distinct ones is stored as none."""

    def answers(self, code: str) -> list[dict]:
        """Every answer row of the class, oldest first."""

    def export(self, code: str) -> list[dict]:
        """Every answer row, oldest first, and mark them downloaded, in one step."""

    def tally(self, code: str) -> Tally:
        """The class's counts, in one read."""

    def drop_answers(self, code: str) -> None:
        """Forget every answer of the class (and its counts)."""

    def drop_box(self, code: str, exercise: str, box: str) -> int:
        """Forget the answers to one box (and their counts); how many were forgotten."""

    # -- the room --
    def seen(self, code: str, student: str, now: float, lost: bool | None) -> None:
        """Note that ``student`` (an opaque token, nothing else about them) is here at ``now``;
        set their "I'm lost" to ``lost`` unless it is None."""

    def presence(self, code: str, since: float, box: tuple[str, str] | None) -> Presence:
        """Counted in one read: students seen after ``since``, those of them lost, answers
        to ``box``."""

    # -- rate limits --
    def recent(self, kind: str, client, since: float) -> int:
        """Tries of ``kind`` the client spent after ``since``."""

    def spend(self, kind: str, client, now: float, window: float) -> None:
        """Note one try of ``kind`` at ``now`` (and forget the client's tries older than
        ``window``)."""
