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
alive), or when the teacher ends it; its answers stay a day for its teacher to download, then
are swept with it (by ``start`` and by each process's sweeper). Times are wall-clock seconds
(``time.time``), the one clock every process shares.
"""
from __future__ import annotations

import collections
import dataclasses
import hmac
import secrets
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from tfviz.classroom.backend import Backend, NoSuchClass, Outcome, Tally
from tfviz.classroom.catalog import STEPS, normal_slip, slip_label
from tfviz.classroom.checkin import CHECKIN, PHASES, CheckinRow, validated_checkin
from tfviz.classroom.codes import CODE_LENGTH, format_code, new_code, new_key, parse_code
from tfviz.classroom.guard import (BadValue, LiveError, ServerFull, SessionFull,  # noqa: F401
                                   SessionGone, StoreDown, TimeUp, TooManyTries, UnknownCode,
                                   WrongKey)
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
REMEMBER_GONE_S = 24 * 3600.0  # how long a closed class says "ended" (not "unknown") and its
#                                 teacher can still download its answers; then both are swept
PRESENT_S = 30.0  # a student whose page said "here" this recently is counted in the room
LATE_GRACE_S = 2.0  # an answer to a question whose countdown reached zero this little before it
#                     arrived still counts: the page's clock and the trip to the server
MAX_COUNTDOWN_S = 3600  # a countdown runs 1 s to an hour
TOUCH_S = 60.0  # a teacher's reading (the dashboard's poll) keeps the class alive, writing at
#                 most once in this long: a poll is a read, not a write with an fsync
STUDENT_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


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


@dataclass(frozen=True)
class Room:
    """The room as the teacher's dashboard and the projector show it, counted, never named:
    students here (seen in the last ``PRESENT_S``), those of them with "I'm lost" on, answers
    to the current question, and the pacing of that question."""

    present: int
    lost: int
    answered: int
    question: tuple[str, ...]  # (exercise, box) asked now, or ()
    seconds_left: float | None  # of its countdown; None without one, 0 once it reached zero
    revealed: bool  # whether the class may see the results


class _StillBusy(Exception):
    """The class picked for eviction was used again before it could be closed."""


def new_student() -> str:
    """A random token a student's page makes once and sends with "here" and "I'm lost": the
    room counts tokens, and nothing else about a student reaches the store. Never sent with
    an answer, so answers stay unlinked to it."""
    return secrets.token_urlsafe(12)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def tally_rows(rows) -> Tally:
    """Answer rows -> their counts, scanned in Python: the reference the backends' own counts
    (SQL ``GROUP BY``, Redis hashes) are tested against."""
    boxes: dict[tuple[str, str], list[int]] = {}
    slips: collections.Counter = collections.Counter()
    for r in rows:
        c = boxes.setdefault((r["exercise"], r["box"]), [0, 0])
        c[0] += 1
        c[1] += bool(r["correct"])
        if r["slip"]:
            slips[r["exercise"], r["box"], r["slip"]] += 1
    return Tally({b: tuple(c) for b, c in boxes.items()}, dict(slips), len(rows), len(rows))


def summarise(counts: Tally | list) -> tuple[StepSummary, ...]:
    """A class's counts (or its answer rows) -> one summary per box, in the exercises' order;
    rows of other kinds (check-ins) are left out."""
    tally = counts if isinstance(counts, Tally) else tally_rows(counts)
    slips: dict[tuple[str, str], list] = collections.defaultdict(list)
    for (exercise_id, step, slip), n in tally.slips.items():
        slips[exercise_id, step].append((slip, n))
    out = []
    for exercise_id, steps in STEPS.items():
        for step in steps:
            if (exercise_id, step) in tally.boxes:
                answered, right = tally.boxes[exercise_id, step]
                seen = sorted(slips[exercise_id, step], key=lambda kv: (-kv[1], kv[0]))
                out.append(StepSummary(exercise_id, step, answered, right,
                                       tuple(SlipCount(s, slip_label(s), n) for s, n in seen)))
    return tuple(out)


def checkin_summary_of(tally: Tally, asked: tuple[str, ...] = ()) -> tuple[CheckinRow, ...]:
    """The check-in's rows of a class's counts: the questions ``asked`` now first, in their
    order, then any others asked earlier, by name."""
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    for phase, exercise in CHECKIN.items():
        for (ex, question), (answered, right) in tally.boxes.items():
            if ex == exercise:
                counts.setdefault(question, {p: (0, 0) for p in PHASES})[phase] = (right, answered)
    order = sorted(counts, key=lambda q: (asked.index(q) if q in asked else len(asked), q))
    return tuple(CheckinRow(q, counts[q]["before"], counts[q]["after"]) for q in order)


class LiveStore:
    """Every live session in one backend. Shared by all browser sessions of a process on
    purpose (``tfviz.ui.live_session`` keeps one in ``st.cache_resource``) and by every
    process that opens the same backend; only these methods change it.

    What the pages call:

    - the teacher: ``start``, ``update``, ``open_checkin``, ``close_checkin``; the room and its
      pacing: ``room``, ``ask``, ``start_countdown``, ``stop_countdown``, ``reveal``,
      ``reset_question``; reading: ``summary``, ``checkin_summary``, ``export_rows``; ending:
      ``not_downloaded`` (for the confirmation), then ``end``;
    - a student: ``state`` (and ``seconds_left`` of it), ``heartbeat``, ``set_lost``,
      ``submit_answer``, ``submit_checkin``.
    """

    def __init__(self, backend: Backend, *, clock: Callable[[], float] = time.time,
                 limits: Limits = Limits()):
        self.backend, self._clock, self.limits = backend, clock, limits

    @property
    def url(self) -> str:
        """Where the data lives (any password masked)."""
        return self.backend.url

    # -- what a learner or teacher is told (the backends say none of it) --
    def _gone_message(self, why: str) -> str:
        if why == "ended":
            return "Your teacher has ended this live session."
        return (f"This live session has closed: sessions close after {self.limits.idle_s / 3600:g} "
                "hours without the teacher. Ask your teacher for a new code.")

    def _refused(self, outcome: Outcome) -> LiveError | None:
        """The words for an answer the store did not take (None when it took it)."""
        if outcome is Outcome.OK:
            return None
        if outcome is Outcome.FULL:
            return SessionFull("This live session has taken all the answers it can hold.")
        if outcome is Outcome.LATE:
            return TimeUp("Time was up for this question: the countdown reached zero before "
                          "your answer arrived, so it was not counted. Your teacher may "
                          "start it again.")
        return SessionGone(self._gone_message("ended"))

    # -- reading a session --
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

    def _find(self, code: object, client: Hashable | None, now: float,
              closed_ok: bool = False) -> dict:
        b = self.backend
        if client is not None and b.recent("join", client, now - FAILED_WINDOW_S) >= \
                self.limits.max_failed_joins:
            raise TooManyTries("Too many codes that did not work. Wait a few minutes, then type "
                               "the code exactly as the projector shows it.")
        canonical = parse_code(code)
        rec = b.get(canonical) if canonical else None
        status, why = self._status(rec, now)
        if status == "live" or (closed_ok and status != "unknown"):
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

        try:
            return self.backend.change(parse_code(code), apply)
        except NoSuchClass:  # swept between the read and the write
            raise SessionGone(self._gone_message("ended")) from None

    def _teacher_read(self, code: object, key: object, closed_ok: bool = False) -> dict:
        """The record, once the key is checked: a read. A live class's teacher reading it counts
        as an action at most once per ``TOUCH_S`` (so a dashboard left open keeps the class
        alive, and a poll is not a write). ``closed_ok``: an ended or expired class's teacher
        may still read it for ``REMEMBER_GONE_S``."""
        now = self._clock()
        rec = self._find(code, None, now, closed_ok=closed_ok)
        self._check_key(rec, key)
        if self._status(rec, now)[0] == "live" and now - rec["last_teacher"] >= TOUCH_S:
            rec = self._teacher_change(code, key, lambda rec: None)
        return rec

    def _state_change(self, code: str, key: str, fields: Callable[[dict], dict]) -> LiveState:
        """Set the state's ``fields(old state)`` as the teacher; the version grows only if
        something changed."""
        now = self._clock()

        def change(rec: dict) -> None:
            old = rec["state"]
            new = fields(old)
            if any(old.get(k) != v for k, v in new.items()):
                rec["state"] = {**old, **new, "version": old["version"] + 1, "updated": now}

        return LiveState.of(self._teacher_change(code, key, change)["state"])

    # -- the teacher --
    def start(self, client: Hashable | None = None, **state) -> tuple[str, str]:
        """A new session at ``state`` (see ``validated``) -> (join code, teacher key)."""
        settings = validated(state)
        b, now = self.backend, self._clock()
        self.sweep(now)
        if client is not None and b.recent("start", client, now - START_WINDOW_S) >= \
                self.limits.max_starts:
            raise TooManyTries("You have started many live sessions lately. Wait a while, "
                               "or use one you started.")
        self._make_room(now)
        if client is not None:
            b.spend("start", client, now, START_WINDOW_S)
        while True:
            code, key = new_code(), new_key()
            state = dataclasses.asdict(LiveState(code, version=1, updated=now, **settings))
            rec = {"code": code, "key": key, "state": state, "last_teacher": now,
                   "started": now, "status": "live", "gone_at": None}
            if b.create(rec):  # False: that code is taken (live or remembered); draw again
                return code, key

    def _make_room(self, now: float) -> None:
        """Below the cap, nothing to do; at it, the oldest class idle ``evict_idle_s`` gives
        way (closed, its answers kept for its day). Whether it is still idle is checked again
        inside the atomic step that closes it: its teacher may act between the read and the
        write, and then it stays (another may be idle, so look again, a few times)."""
        b = self.backend
        for _ in range(3):
            count, oldest = b.live_count(now - self.limits.idle_s)
            if count < self.limits.max_sessions:
                return
            if oldest is None or now - oldest[1] < self.limits.evict_idle_s:
                break

            def evict(rec: dict) -> dict:
                if rec["status"] == "live" and now - rec["last_teacher"] < self.limits.evict_idle_s:
                    raise _StillBusy
                if rec["status"] != "live":
                    return rec  # closed meanwhile: its place is free already
                return {**rec, "status": "expired", "gone_at": now}

            try:
                b.change(oldest[0], evict)
                return
            except NoSuchClass:
                return
            except _StillBusy:
                continue
        raise ServerFull("This server is teaching as many live classes as it can. "
                         "Try again in a few minutes.")

    def sweep(self, now: float | None = None) -> None:
        """Close idle classes, forget those closed ``REMEMBER_GONE_S`` ago with their answers,
        and old tries and "here" marks. ``start`` calls it; so does each server process's
        sweeper thread (``tfviz.classroom.sweeper``), so nothing waits for the next start."""
        now = self._clock() if now is None else now
        self.backend.sweep(now, self.limits.idle_s, REMEMBER_GONE_S, START_WINDOW_S, PRESENT_S)

    def update(self, code: str, key: str, **changes) -> LiveState:
        """Move the class (teacher key only); the version grows only if something changed."""
        settings = validated(changes)
        return self._state_change(code, key, lambda old: settings)

    def end(self, code: str, key: str) -> None:
        """Close the session now. Its answers stay for ``REMEMBER_GONE_S`` (a day), readable
        with the teacher key (``export_rows``, ``summary(..., closed_ok=True)``), then are
        swept: a mis-click loses nothing. Ask ``not_downloaded`` first, to name in the
        confirmation what has not been downloaded."""
        now = self._clock()

        def change(rec: dict) -> None:
            rec["status"], rec["gone_at"] = "ended", now

        self._teacher_change(code, key, change)

    def not_downloaded(self, code: str, key: str) -> int:
        """Answers the class holds that arrived after the teacher's last ``export_rows`` (all
        of them before the first): what "End" would leave behind unsaved. Works on an ended
        class too, for its day."""
        self._teacher_read(code, key, closed_ok=True)
        return self.backend.tally(parse_code(code)).not_downloaded

    def summary(self, code: str, key: str, *, closed_ok: bool = False) -> tuple[StepSummary, ...]:
        """What the class answered, box by box in the exercises' order (teacher key only): one
        read of the counts the backend keeps. A closed class raises SessionGone unless
        ``closed_ok`` (then it is readable for its day)."""
        self._teacher_read(code, key, closed_ok=closed_ok)
        return summarise(self.backend.tally(parse_code(code)))

    def export_rows(self, code: str, key: str) -> list[dict]:
        """Every answer of the class, one dict each, oldest first (teacher key only): exercise,
        box, correct, slip ("" for none), time (UTC, ISO 8601). Nothing names a student. Marks
        them downloaded (see ``not_downloaded``). Works for a day after the class ended."""
        self._teacher_read(code, key, closed_ok=True)
        return [{"exercise": r["exercise"], "box": r["box"], "correct": bool(r["correct"]),
                 "slip": r["slip"] or "", "time": _iso(r["t"])}
                for r in self.backend.export(parse_code(code))]

    # -- the room and its pacing --
    def room(self, code: str, key: str) -> Room:
        """The dashboard's and projector's poll (teacher key only), one read of the store:
        students here, lost, answers to the current question, its countdown and whether the
        results are shown."""
        now = self._clock()
        state = self._teacher_read(code, key)["state"]
        question = tuple(state.get("question") or ())
        seen = self.backend.presence(parse_code(code), now - PRESENT_S, question or None)
        return Room(seen.present, seen.lost, seen.answered, question,
                    self._left(state.get("deadline") or 0.0, now),
                    bool(state.get("revealed")))

    def ask(self, code: str, key: str, exercise_id: str | None, step: str | None = None
            ) -> LiveState:
        """Make one answer box the current question (``None``: no question), with no countdown
        and its results hidden; every student's page sees it with the next version."""
        if exercise_id is None:
            question: list = []
        elif exercise_id in STEPS and step in STEPS[exercise_id]:
            question = [exercise_id, step]
        else:
            raise BadValue("That answer box is not one of the exercises'.")
        return self._state_change(code, key, lambda old: {
            "question": question, "deadline": 0.0, "revealed": False})

    def start_countdown(self, code: str, key: str, seconds: int) -> LiveState:
        """Give the current question ``seconds`` (1 to ``MAX_COUNTDOWN_S``) from now; every
        student reads the end in ``state(code).deadline`` (``seconds_left``), and answers to
        that question arriving after it are refused in words (``TimeUp``). Starting it again
        restarts it."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
                not 1 <= seconds <= MAX_COUNTDOWN_S:
            raise BadValue(f"A countdown runs from 1 second to {MAX_COUNTDOWN_S // 60} minutes.")
        now = self._clock()

        def fields(old: dict) -> dict:
            if not old.get("question"):
                raise BadValue("Pick the question first: the countdown runs on it.")
            return {"deadline": now + float(seconds)}

        return self._state_change(code, key, fields)

    def stop_countdown(self, code: str, key: str) -> LiveState:
        """Take the countdown off the current question: answers are taken again."""
        return self._state_change(code, key, lambda old: {"deadline": 0.0})

    def seconds_left(self, state: LiveState) -> float | None:
        """Of ``state``'s countdown by the store's clock (the one every replica shares): None
        without one, 0 once it reached zero."""
        return self._left(state.deadline, self._clock())

    @staticmethod
    def _left(deadline: float, now: float) -> float | None:
        return max(0.0, deadline - now) if deadline else None

    def reveal(self, code: str, key: str, shown: bool = True) -> LiveState:
        """Show the current question's results to the class (``shown=False`` hides them again).
        Hidden is the default, and asking a new question hides them."""
        return self._state_change(code, key, lambda old: {"revealed": bool(shown)})

    def reset_question(self, code: str, key: str, exercise_id: str, step: str) -> int:
        """Forget the answers to one box (teacher key only) -> how many were forgotten. The
        state counts the reset (``LiveState.resets_of``), so a student's page may send that
        box again; if it is the current question, its countdown stops and its results hide."""
        if exercise_id not in STEPS or step not in STEPS[exercise_id]:
            raise BadValue("That answer box is not one of the exercises'.")
        self._teacher_read(code, key)
        dropped = self.backend.drop_box(parse_code(code), exercise_id, step)

        def fields(old: dict) -> dict:
            resets = {(e, b): n for e, b, n in old.get("resets") or ()}
            resets[exercise_id, step] = resets.get((exercise_id, step), 0) + 1
            out: dict = {"resets": [[e, b, n] for (e, b), n in resets.items()]}
            if list(old.get("question") or ()) == [exercise_id, step]:
                out.update(deadline=0.0, revealed=False)
            return out

        self._state_change(code, key, fields)
        return dropped

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
        return self._state_change(code, key, lambda old: {"checkin_phase": ""})

    def checkin_summary(self, code: str, key: str, *, closed_ok: bool = False
                        ) -> tuple[CheckinRow, ...]:
        """Each question asked: how many answered and got it right, before and after."""
        rec = self._teacher_read(code, key, closed_ok=closed_ok)
        return checkin_summary_of(self.backend.tally(parse_code(code)),
                                  tuple(rec["state"].get("checkin") or ()))

    # -- the students --
    def state(self, code: object, client: Hashable | None = None) -> LiveState:
        """Where the teacher is (anyone with the code). Raises a LiveError with a friendly
        reason for a wrong, expired or ended code."""
        return LiveState.of(self._find(code, client, self._clock())["state"])

    def heartbeat(self, code: object, student: str, client: Hashable | None = None) -> None:
        """A student's page says "here" (every ~10 s is plenty: ``PRESENT_S`` is 30 s).
        ``student`` is the page's ``new_student()`` token. Cheap: no fsync on SQLite."""
        self._seen(code, student, None, client)

    def set_lost(self, code: object, student: str, lost: bool,
                 client: Hashable | None = None) -> None:
        """A student turns "I'm lost" on or off (it counts as "here" too). The teacher's count
        drops when they turn it off or leave (``PRESENT_S`` without a heartbeat)."""
        if not isinstance(lost, bool):
            raise BadValue("“I'm lost” is either on or off.")
        self._seen(code, student, lost, client)

    def _seen(self, code, student, lost, client) -> None:
        if not isinstance(student, str) or not 8 <= len(student) <= 64 or \
                not set(student) <= STUDENT_TOKEN:
            raise BadValue("This page lost its seat in the class; reload it to join again.")
        now = self._clock()
        rec = self._find(code, client, now)
        self.backend.seen(rec["code"], student, now, lost)

    def submit_answer(self, code: object, exercise_id: str, step: str, correct: bool,
                      slip: str | None = None, client: Hashable | None = None) -> None:
        """Count one answer to one box; returns once it is stored for good. Nothing about the
        student is kept; the page sends each student's first graded try per box once (see
        ``tfviz.ui.live``), and again after the teacher resets that box. Refused with
        ``TimeUp`` after the box's countdown reached zero."""
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
        outcome = self.backend.add_answer(rec["code"], row, alive_since=now - self.limits.idle_s,
                                          max_answers=self.limits.max_answers,
                                          max_slip_kinds=self.limits.max_slip_kinds,
                                          late_after=LATE_GRACE_S)
        if (err := self._refused(outcome)) is not None:
            raise err

    def __len__(self) -> int:
        """Live sessions now."""
        return self.backend.live_count(self._clock() - self.limits.idle_s)[0]


__all__ = ["LiveStore", "Limits", "StepSummary", "SlipCount", "CheckinRow", "PHASES", "Room",
           "summarise", "new_student", "LiveError", "StoreDown", "TimeUp"]
