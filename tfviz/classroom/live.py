"""Live class sessions, held in the server's memory and keyed by a join code.

A teacher starts a session and gets two strings: a **join code** to put on the projector and a
**teacher key** that stays in the teacher's browser. Anyone with the code can read where the
teacher is (lesson, step, sentence, model, layer, head) and send answers anonymously; only the
key can move the class or read the answers back.

>>> clock = iter(range(0, 10**6, 10)).__next__  # a fake clock: 10 s per call
>>> store = LiveStore(clock=clock)
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

The join code and the teacher key, and why 8 characters are enough, are in
``tfviz.classroom.codes``; what a session keeps of the teacher's place, and the checks on it, in
``tfviz.classroom.state``.

A session dies ``IDLE_HOURS`` after the teacher's last action (students polling do not keep
it alive), or when the teacher ends it; its answers go with it. The state lives in this
process: with several server replicas, a class must run on one of them (the proxy pins
browsers by cookie, not by join code; README, "Serving a class").
"""
from __future__ import annotations

import collections
import dataclasses
import hmac
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from tfviz.classroom.catalog import STEPS, normal_slip, slip_label
from tfviz.classroom.codes import CODE_LENGTH, format_code, new_code, new_key, parse_code
from tfviz.classroom.guard import (BadValue, Budget, LiveError, ServerFull, SessionFull,  # noqa: F401
                                   SessionGone, TooManyTries, UnknownCode, WrongKey)
from tfviz.classroom.state import LiveState, validated

IDLE_HOURS = 4.0  # a long lecture, with a break
MAX_SESSIONS = 200  # per server process; far more classes than one server can teach at once
EVICT_IDLE_MINUTES = 30  # when full, a session idle this long may give way to a new one
MAX_ANSWERS = 10_000  # per session: 300 students × 33 answer boxes, first tries
MAX_SLIP_KINDS = 24  # distinct slips counted per answer box (more: counted as undiagnosed)
MAX_FAILED_JOINS = 20  # wrong codes a client may try per FAILED_WINDOW_S
FAILED_WINDOW_S = 600.0
MAX_STARTS = 10  # sessions a client may start per START_WINDOW_S
START_WINDOW_S = 3600.0
REMEMBER_GONE_S = 24 * 3600.0  # how long an ended code still says "ended" rather than "unknown"
MAX_REMEMBERED = 10_000  # ended codes and clients remembered, at most

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


@dataclass
class _Tally:
    answered: int = 0
    right: int = 0
    slips: collections.Counter = dataclasses.field(default_factory=collections.Counter)


@dataclass
class _Session:
    key: str
    state: LiveState
    last_teacher: float
    answers: dict[tuple[str, str], _Tally] = dataclasses.field(default_factory=dict)
    n_answers: int = 0


class LiveStore:
    """Every live session of this server process. Thread-safe: one lock guards it all (every
    call is a few dictionary operations). Shared by all browser sessions on purpose
    (``tfviz.ui.live_session`` keeps one in ``st.cache_resource``); only these methods change
    it."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 idle_hours: float = IDLE_HOURS, max_sessions: int = MAX_SESSIONS,
                 max_answers: int = MAX_ANSWERS, evict_idle_minutes: float = EVICT_IDLE_MINUTES,
                 max_failed_joins: int = MAX_FAILED_JOINS, max_starts: int = MAX_STARTS):
        self._clock = clock
        self._idle = idle_hours * 3600.0
        self._max_sessions, self._max_answers = max_sessions, max_answers
        self._evict_idle = evict_idle_minutes * 60.0
        self._failed = Budget(max_failed_joins, FAILED_WINDOW_S)
        self._starts = Budget(max_starts, START_WINDOW_S)
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._gone: collections.OrderedDict[str, tuple[str, float]] = collections.OrderedDict()

    # -- housekeeping (called with the lock held) --
    def _sweep(self, now: float) -> None:
        for code in [c for c, s in self._sessions.items() if now - s.last_teacher >= self._idle]:
            self._forget(code, "expired", now)
        while self._gone and (now - next(iter(self._gone.values()))[1] >= REMEMBER_GONE_S
                              or len(self._gone) > MAX_REMEMBERED):
            self._gone.popitem(last=False)

    def _forget(self, code: str, why: str, now: float) -> None:
        del self._sessions[code]  # its state and answers go with it
        self._gone[code] = (why, now)
        self._gone.move_to_end(code)

    def _find(self, code: object, client: Hashable | None, now: float) -> _Session:
        if self._failed.exhausted(client, now):
            raise TooManyTries("Too many codes that did not work. Wait a few minutes, then type "
                               "the code exactly as the projector shows it.")
        canonical = parse_code(code)
        if canonical in self._sessions:
            return self._sessions[canonical]
        if canonical in self._gone:
            why = self._gone[canonical][0]
            raise SessionGone("Your teacher has ended this live session." if why == "ended" else
                              f"This live session has closed: sessions close after "
                              f"{self._idle / 3600:g} hours without the teacher. Ask your "
                              "teacher for a new code.")
        self._failed.spend(client, now)
        if canonical is None:
            raise UnknownCode(f"A join code is {CODE_LENGTH} letters and digits, like "
                              "K7QM-4XPD. Check it against the projector.")
        raise UnknownCode(f"No live class has the code {format_code(canonical)}. Check it "
                          "against the projector.")

    def _teacher(self, code: object, key: object, now: float) -> _Session:
        session = self._find(code, None, now)
        if not isinstance(key, str) or not hmac.compare_digest(
                key.encode("utf-8", "surrogatepass"), session.key.encode()):
            raise WrongKey("Only the teacher who started this session can move the class.")
        session.last_teacher = now
        return session

    # -- the teacher --
    def start(self, client: Hashable | None = None, **state) -> tuple[str, str]:
        """A new session at ``state`` (see ``validated``) -> (join code, teacher key)."""
        settings = validated(state)
        with self._lock:
            now = self._clock()
            self._sweep(now)
            if self._starts.exhausted(client, now):
                raise TooManyTries("You have started many live sessions lately. Wait a while, "
                                   "or use one you started.")
            if len(self._sessions) >= self._max_sessions:
                oldest = min(self._sessions, key=lambda c: self._sessions[c].last_teacher)
                if now - self._sessions[oldest].last_teacher < self._evict_idle:
                    raise ServerFull("This server is teaching as many live classes as it can. "
                                     "Try again in a few minutes.")
                self._forget(oldest, "expired", now)
            self._starts.spend(client, now)
            code = new_code()
            while code in self._sessions or code in self._gone:
                code = new_code()
            state = LiveState(code, version=1, updated=now, **settings)
            self._sessions[code] = _Session(new_key(), state, now)
            return code, self._sessions[code].key

    def update(self, code: str, key: str, **changes) -> LiveState:
        """Move the class (teacher key only); the version grows only if something changed."""
        settings = validated(changes)
        with self._lock:
            now = self._clock()
            self._sweep(now)
            session = self._teacher(code, key, now)
            old = session.state
            if any(getattr(old, k) != v for k, v in settings.items()):
                session.state = dataclasses.replace(old, **settings, version=old.version + 1,
                                                    updated=now)
            return session.state

    def summary(self, code: str, key: str) -> tuple[StepSummary, ...]:
        """What the class answered, box by box in the exercises' order (teacher key only)."""
        with self._lock:
            now = self._clock()
            self._sweep(now)
            session = self._teacher(code, key, now)
            rows = []
            for exercise_id, steps in STEPS.items():
                for step in steps:
                    tally = session.answers.get((exercise_id, step))
                    if tally is None:
                        continue
                    slips = sorted(tally.slips.items(), key=lambda kv: (-kv[1], kv[0]))
                    rows.append(StepSummary(exercise_id, step, tally.answered, tally.right,
                                            tuple(SlipCount(s, slip_label(s), n) for s, n in slips)))
            return tuple(rows)

    def end(self, code: str, key: str) -> None:
        """Close the session now; its answers are dropped."""
        with self._lock:
            now = self._clock()
            self._sweep(now)
            self._teacher(code, key, now)
            self._forget(parse_code(code), "ended", now)

    # -- the students --
    def state(self, code: object, client: Hashable | None = None) -> LiveState:
        """Where the teacher is (anyone with the code). Raises a LiveError with a friendly
        reason for a wrong, expired or ended code."""
        with self._lock:
            now = self._clock()
            self._sweep(now)
            return self._find(code, client, now).state

    def submit_answer(self, code: object, exercise_id: str, step: str, correct: bool,
                      slip: str | None = None, client: Hashable | None = None) -> None:
        """Count one answer to one box. Nothing about the student is kept; the page sends each
        student's first graded try per box once (see ``tfviz.ui.live``)."""
        if exercise_id not in STEPS or step not in STEPS[exercise_id]:
            raise BadValue("That answer box is not one of the exercises'.")
        if not isinstance(correct, bool):
            raise BadValue("An answer is either right or not.")
        named = None if correct or slip is None else normal_slip(slip)
        if slip is not None and not correct and named is None:
            raise BadValue("That is not a slip the exercises diagnose.")
        with self._lock:
            now = self._clock()
            self._sweep(now)
            session = self._find(code, client, now)
            if session.n_answers >= self._max_answers:
                raise SessionFull("This live session has taken all the answers it can hold.")
            tally = session.answers.setdefault((exercise_id, step), _Tally())
            session.n_answers += 1
            tally.answered += 1
            tally.right += correct
            if named is not None and (named in tally.slips or len(tally.slips) < MAX_SLIP_KINDS):
                tally.slips[named] += 1

    def __len__(self) -> int:
        with self._lock:
            self._sweep(self._clock())
            return len(self._sessions)
