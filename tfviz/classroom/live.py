"""Live class sessions, kept in a store that every server process shares, keyed by a join code.

A teacher starts a session and gets two strings: a **join code** to put on the projector and a
**teacher key** that stays in the teacher's browser; only the key can move the class or read the
answers back. Anyone with the code can read where the teacher is (lesson, step, sentence, model,
layer, head) and send answers anonymously.

>>> from tfviz.classroom.store import open_store
>>> clock = iter(range(0, 10**6, 10)).__next__  # a fake clock: 10 s per call
>>> store = open_store("sqlite://", clock=clock)  # sqlite:// alone: a private in-memory file
>>> code, key = store.start(lesson="self-attention", text="flying arrows")
>>> len(code), code == parse_code(format_code(code).lower())
(8, True)
>>> store.update(code, key, layer=2, head=9).layer, store.state(code).head
(2, 9)
>>> store.update(code, "a guess", layer=0)
Traceback (most recent call last):
...
tfviz.classroom.guard.WrongKey: Only the teacher who started this session can move the class.
>>> store.submit_answer(code, "flying-arrows", "weights", False, "no_scale")
>>> store.summary(code, key)[0].lines()
['1 answered, 0 right', '1 forgot to divide by √d_k']
>>> [(r["exercise"], r["box"], r["correct"], r["slip"]) for r in store.export_rows(code, key)]
[('flying-arrows', 'weights', False, 'no_scale')]

This module holds the rules (who may do what, the limits, the friendly messages); a backend
holds the data (``tfviz.classroom.sqlite_store``, ``tfviz.classroom.redis_store``: see
``tfviz.classroom.store`` for how to open one). Every rule is checked against the backend's
data of the moment, inside the backend's own atomic step where two processes could race: two
replicas serving one class see one session.

A session dies ``IDLE_HOURS`` after the teacher's last action (students polling do not keep it
alive), or when the teacher ends it; its answers go with it. Times are wall-clock seconds
(``time.time``), the one clock every process shares.
"""
from __future__ import annotations

import collections
import dataclasses
import hmac
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from tfviz.classroom.catalog import STEPS, normal_slip, slip_label
from tfviz.classroom.checkin import (CHECKIN, PHASES, CheckinRow, checkin_rows,
                                     validated_checkin)
from tfviz.classroom.codes import CODE_LENGTH, format_code, new_code, new_key, parse_code
from tfviz.classroom.guard import (BadValue, LiveError, ServerFull, SessionFull,  # noqa: F401
                                   SessionGone, StoreDown, TooManyTries, UnknownCode, WrongKey)
from tfviz.classroom.state import LiveState, validated

IDLE_HOURS = 4.0  # a long lecture, with a break
MAX_SESSIONS = 200  # per store; far more classes than one machine can teach at once
EVICT_IDLE_MINUTES = 30  # when full, a session idle this long may give way to a new one
MAX_ANSWERS = 20_000  # per session: 400 students × 33 answer boxes, first tries, + check-ins
MAX_SLIP_KINDS = 24  # distinct slips counted per answer box (more: counted as undiagnosed)
MAX_FAILED_JOINS = 20  # wrong codes a client may try per FAILED_WINDOW_S
FAILED_WINDOW_S = 600.0
MAX_STARTS = 10  # sessions a client may start per START_WINDOW_S
START_WINDOW_S = 3600.0
REMEMBER_GONE_S = 24 * 3600.0  # how long an ended code still says "ended" rather than "unknown"


@dataclass(frozen=True)
class SlipCount:
    slip: str  # e.g. "no_scale"; two slips that give the same numbers: "divide_dk+no_scale"
    label: str  # "forgot to divide by √d_k"
    count: int


@dataclass(frozen=True)
class StepSummary:
    """One answer box of one exercise: how many answered, how many right, the slips seen
    (most common first)."""

    exercise_id: str
    step: str
    answered: int
    right: int
    slips: tuple[SlipCount, ...]

    def lines(self, top: int = 3) -> list[str]:
        return [f"{self.answered} answered, {self.right} right",
                *(f"{s.count} {s.label}" for s in self.slips[:top])]


@dataclass(frozen=True)
class Limits:
    """The store's bounds, the same for every process that opens it (tests make them small)."""

    idle_s: float = IDLE_HOURS * 3600.0
    max_sessions: int = MAX_SESSIONS
    max_answers: int = MAX_ANSWERS
    evict_idle_s: float = EVICT_IDLE_MINUTES * 60.0
    max_failed_joins: int = MAX_FAILED_JOINS
    max_starts: int = MAX_STARTS
    max_slip_kinds: int = MAX_SLIP_KINDS


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def summarise(rows) -> tuple[StepSummary, ...]:
    """Answer rows (``exercise``, ``box``, ``correct``, ``slip``) -> one summary per box, in
    the exercises' order; rows of other kinds (check-ins) are left out."""
    answered: collections.Counter = collections.Counter()
    right: collections.Counter = collections.Counter()
    slips: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        box = (r["exercise"], r["box"])
        answered[box] += 1
        right[box] += bool(r["correct"])
        if r["slip"]:
            slips[box][r["slip"]] += 1
    out = []
    for exercise_id, steps in STEPS.items():
        for step in steps:
            if (exercise_id, step) in answered:
                seen = sorted(slips[exercise_id, step].items(), key=lambda kv: (-kv[1], kv[0]))
                out.append(StepSummary(exercise_id, step, answered[exercise_id, step],
                                       right[exercise_id, step],
                                       tuple(SlipCount(s, slip_label(s), n) for s, n in seen)))
    return tuple(out)


class LiveStore:
    """Every live session in one backend. Shared by all browser sessions of a process on
    purpose (``tfviz.ui.live_session`` keeps one in ``st.cache_resource``) and by every
    process that opens the same backend; only these methods change it."""

    def __init__(self, backend, *, clock: Callable[[], float] = time.time,
                 limits: Limits = Limits()):
        self.backend, self._clock, self.limits = backend, clock, limits

    @property
    def url(self) -> str:
        """Where the data lives (any password masked)."""
        return self.backend.url

    # -- reading a session --
    def _gone_message(self, why: str) -> str:
        if why == "ended":
            return "Your teacher has ended this live session."
        return (f"This live session has closed: sessions close after {self.limits.idle_s / 3600:g} "
                "hours without the teacher. Ask your teacher for a new code.")

    def _status(self, rec: dict | None, now: float) -> tuple[str, str]:
        """(``live`` | ``ended`` | ``expired`` | ``unknown``, why) of a record at ``now``."""
        if rec is None:
            return "unknown", ""
        if rec["status"] == "live":
            if now - rec["last_teacher"] < self.limits.idle_s:
                return "live", ""
            gone_at, why = rec["last_teacher"] + self.limits.idle_s, "expired"
        else:
            gone_at, why = rec["gone_at"], rec["status"]
        return ("unknown", "") if now - gone_at >= REMEMBER_GONE_S else (why, why)

    def _find(self, code: object, client: Hashable | None, now: float) -> dict:
        b = self.backend
        if client is not None and b.recent("join", client, now - FAILED_WINDOW_S) >= \
                self.limits.max_failed_joins:
            raise TooManyTries("Too many codes that did not work. Wait a few minutes, then type "
                               "the code exactly as the projector shows it.")
        canonical = parse_code(code)
        rec = b.get(canonical) if canonical else None
        status, why = self._status(rec, now)
        if status == "live":
            return rec
        if status != "unknown":
            raise SessionGone(self._gone_message(why))
        if client is not None:
            b.spend("join", client, now, FAILED_WINDOW_S)
        if canonical is None:
            raise UnknownCode(f"A join code is {CODE_LENGTH} letters and digits, like "
                              "K7QM-4XPD. Check it against the projector.")
        raise UnknownCode(f"No live class has the code {format_code(canonical)}. Check it "
                          "against the projector.")

    def _check_key(self, rec: dict, key: object) -> None:
        if not isinstance(key, str) or not hmac.compare_digest(
                key.encode("utf-8", "surrogatepass"), rec["key"].encode()):
            raise WrongKey("Only the teacher who started this session can move the class.")

    def _teacher_change(self, code: object, key: object, change: Callable[[dict], None]) -> dict:
        """Check the key, then apply ``change`` to the record in one atomic step of the
        backend, and note the teacher's action (it keeps the session alive)."""
        now = self._clock()
        self._check_key(self._find(code, None, now), key)

        def apply(rec: dict) -> dict:
            if self._status(rec, now)[0] != "live":  # closed between the read and the write
                raise SessionGone(self._gone_message(self._status(rec, now)[1] or "ended"))
            rec["last_teacher"] = now
            change(rec)
            return rec

        return self.backend.change(parse_code(code), apply)

    # -- the teacher --
    def start(self, client: Hashable | None = None, **state) -> tuple[str, str]:
        """A new session at ``state`` (see ``validated``) -> (join code, teacher key)."""
        settings = validated(state)
        b, now = self.backend, self._clock()
        b.sweep(now, self.limits.idle_s, REMEMBER_GONE_S, START_WINDOW_S)
        if client is not None and b.recent("start", client, now - START_WINDOW_S) >= \
                self.limits.max_starts:
            raise TooManyTries("You have started many live sessions lately. Wait a while, "
                               "or use one you started.")
        count, oldest = b.live_count(now - self.limits.idle_s)
        if count >= self.limits.max_sessions:
            if oldest is None or now - oldest[1] < self.limits.evict_idle_s:
                raise ServerFull("This server is teaching as many live classes as it can. "
                                 "Try again in a few minutes.")
            b.change(oldest[0], lambda rec: {**rec, "status": "expired", "gone_at": now})
            b.drop_answers(oldest[0])
        if client is not None:
            b.spend("start", client, now, START_WINDOW_S)
        while True:
            code, key = new_code(), new_key()
            state = dataclasses.asdict(LiveState(code, version=1, updated=now, **settings))
            rec = {"code": code, "key": key, "state": state, "last_teacher": now,
                   "started": now, "status": "live", "gone_at": None}
            if b.create(rec):  # False: that code is taken (live or remembered); draw again
                return code, key

    def update(self, code: str, key: str, **changes) -> LiveState:
        """Move the class (teacher key only); the version grows only if something changed."""
        settings = validated(changes)
        now = self._clock()

        def change(rec: dict) -> None:
            old = rec["state"]
            if any(old[k] != v for k, v in settings.items()):
                rec["state"] = {**old, **settings, "version": old["version"] + 1, "updated": now}

        return LiveState.of(self._teacher_change(code, key, change)["state"])

    def end(self, code: str, key: str) -> None:
        """Close the session now; its answers are dropped."""
        now = self._clock()

        def change(rec: dict) -> None:
            rec["status"], rec["gone_at"] = "ended", now

        self._teacher_change(code, key, change)
        self.backend.drop_answers(parse_code(code))

    def summary(self, code: str, key: str) -> tuple[StepSummary, ...]:
        """What the class answered, box by box in the exercises' order (teacher key only)."""
        self._teacher_change(code, key, lambda rec: None)
        return summarise(self.backend.answers(parse_code(code)))

    def export_rows(self, code: str, key: str) -> list[dict]:
        """Every answer of the class, one dict each, oldest first (teacher key only): exercise,
        box, correct, slip ("" for none), time (UTC, ISO 8601). Nothing names a student."""
        self._teacher_change(code, key, lambda rec: None)
        return [{"exercise": r["exercise"], "box": r["box"], "correct": bool(r["correct"]),
                 "slip": r["slip"] or "", "time": _iso(r["t"])}
                for r in self.backend.answers(parse_code(code))]

    # -- the check-in: a few quiz questions, asked before and after a lesson --
    def open_checkin(self, code: str, key: str, questions, phase: str) -> LiveState:
        """Ask the class ``questions`` (3-5 quiz question ids) now, as the ``phase``
        ("before" or "after") of a lesson; the students see them at once."""
        asked = validated_checkin(questions, phase)
        now = self._clock()

        def change(rec: dict) -> None:
            old = rec["state"]
            rec["state"] = {**old, "checkin": list(asked), "checkin_phase": phase,
                            "version": old["version"] + 1, "updated": now}

        return LiveState.of(self._teacher_change(code, key, change)["state"])

    def close_checkin(self, code: str, key: str) -> LiveState:
        """Stop taking check-in answers (what was sent stays)."""
        now = self._clock()

        def change(rec: dict) -> None:
            old = rec["state"]
            if old["checkin_phase"]:
                rec["state"] = {**old, "checkin_phase": "", "version": old["version"] + 1,
                                "updated": now}

        return LiveState.of(self._teacher_change(code, key, change)["state"])

    def checkin_summary(self, code: str, key: str) -> tuple[CheckinRow, ...]:
        """Each question asked: how many answered and got it right, before and after."""
        self._teacher_change(code, key, lambda rec: None)
        return checkin_rows(self.backend.answers(parse_code(code)))

    # -- the students --
    def state(self, code: object, client: Hashable | None = None) -> LiveState:
        """Where the teacher is (anyone with the code). Raises a LiveError with a friendly
        reason for a wrong, expired or ended code."""
        return LiveState.of(self._find(code, client, self._clock())["state"])

    def submit_answer(self, code: object, exercise_id: str, step: str, correct: bool,
                      slip: str | None = None, client: Hashable | None = None) -> None:
        """Count one answer to one box; returns once it is stored for good. Nothing about the
        student is kept; the page sends each student's first graded try per box once (see
        ``tfviz.ui.live``)."""
        if exercise_id not in STEPS or step not in STEPS[exercise_id]:
            raise BadValue("That answer box is not one of the exercises'.")
        if not isinstance(correct, bool):
            raise BadValue("An answer is either right or not.")
        named = None if correct or slip is None else normal_slip(slip)
        if slip is not None and not correct and named is None:
            raise BadValue("That is not a slip the exercises diagnose.")
        self._add(code, client, exercise_id, step, correct, named)

    def submit_checkin(self, code: object, phase: str, question_id: str, correct: bool,
                       client: Hashable | None = None) -> None:
        """Count one answer to a question of the check-in open now."""
        if not isinstance(correct, bool):
            raise BadValue("An answer is either right or not.")
        state = self.state(code, client)
        if phase != state.checkin_phase or question_id not in state.checkin:
            raise BadValue("That check-in has closed; your teacher may open another.")
        self._add(code, client, CHECKIN[phase], question_id, correct, None)

    def _add(self, code, client, exercise, box, correct, slip) -> None:
        now = self._clock()
        rec = self._find(code, client, now)
        row = {"exercise": exercise, "box": box, "correct": correct, "slip": slip, "t": now}
        result = self.backend.add_answer(rec["code"], row, alive_since=now - self.limits.idle_s,
                                         max_answers=self.limits.max_answers,
                                         max_slip_kinds=self.limits.max_slip_kinds)
        if result == "full":
            raise SessionFull("This live session has taken all the answers it can hold.")
        if result == "gone":
            raise SessionGone(self._gone_message("ended"))

    def __len__(self) -> int:
        """Live sessions now."""
        return self.backend.live_count(self._clock() - self.limits.idle_s)[0]


__all__ = ["LiveStore", "Limits", "StepSummary", "SlipCount", "CheckinRow", "PHASES",
           "summarise", "LiveError", "StoreDown"]
