"""One live class across replicas, measured without browsers (``bench_replicas --live``).

A teacher starts a class; ``learners`` headless students (``bench.headless``) join it with the
``?join=CODE`` link, each through nginx with its own replica cookie, and then do what a class
does while the teacher talks:

- their follower polls the store on the timer the page asks for (``st.fragment(run_every)``,
  sent as the frontend sends it), and every run that shows the teacher's newest move (the view
  script the follower draws carries the version it applied) times the **follow**: from the
  moment the store acknowledged the teacher's move to the moment this student's page has it;
- between polls, at a human pace, each student works the worked exercise the teacher is on,
  one answer box at a time (a right answer or a known slip, drawn from its own seeded
  generator): an answer counts as **sent** once the page says it was saved for the class.

The teacher moves the charts' layer, head and step every few seconds. It moves through the
store, as the teacher's page does on every move, from this process (so the teacher's own
browser costs the replicas nothing here). With ``kill_at``, one replica is SIGKILLed then:
its students' websockets drop, each reconnects through nginx (which sends it to the next live
replica) with the same link and joins again; those reconnects are counted apart from errors.
At the end the teacher's export is compared with what the students were told was saved:
``lost`` counts acknowledged answers missing from it.
"""
from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import re
import signal
import time
from dataclasses import dataclass, field

from bench.bench_class import ServerWatch, pct
from bench.headless import Session, http_get
from tfviz.exercises.fmt import fmt_values
from tfviz.exercises.registry import make_instance

EXERCISE = "flying-arrows"
ARRIVAL_S = 20.0  # students join over the first 20 s, as a room types the code off the projector
SAVED = "Saved for your class's dashboard (anonymously)."
# The follower's run draws the view move (tfviz/ui/assets/view_move.js) with its settings as
# JSON: the teacher's version it applies is their "stamp".
STAMP = re.compile(r'start\(window, \{.*"stamp": (\d+)')


@dataclass
class LiveResult:
    learners: int
    replicas: int
    seconds: float
    follows_ms: list[float] = field(default_factory=list)
    polls_ms: list[float] = field(default_factory=list)
    actions_ms: list[float] = field(default_factory=list)  # joins and answer checks
    sent: collections.Counter = field(default_factory=collections.Counter)  # acknowledged
    exported: collections.Counter = field(default_factory=collections.Counter)
    errors: list[str] = field(default_factory=list)
    reconnects: int = 0
    retries: int = 0  # reconnects that did not connect, tried again with the frontend's back-off
    cut: int = 0  # runs cut short by their replica's death (the learner reconnects)
    reconnects_ms: list[float] = field(default_factory=list)  # joins after a drop, apart
    rejoins_s: list[float] = field(default_factory=list)  # drop -> following again
    view_moves: int = 0  # moves the page made in the browser, with no run
    moves: int = 0
    cpu_s: float = float("nan")
    peak_mb: float = float("nan")

    @property
    def lost(self) -> int:
        return sum(max(0, n - self.exported[k]) for k, n in self.sent.items())

    def line(self) -> str:
        return (f"learners={self.learners} replicas={self.replicas} "
                f"follow_p95_ms={pct(self.follows_ms, .95):.0f} "
                f"answers_sent={sum(self.sent.values())} "
                f"answers_exported={sum(self.exported.values())} lost={self.lost} "
                f"errors={len(self.errors)} p95_ms={pct(self.actions_ms, .95):.0f} "
                f"rejoin_p95_s={pct(self.rejoins_s, .95) if self.rejoins_s else 0:.1f}")


class Teacher:
    """Moves the class through the store every ``pace`` seconds; remembers when each version
    was acknowledged."""

    def __init__(self, store, code: str, key: str, seed: int, pace=(3.0, 6.0)):
        self.store, self.code, self.key, self.pace = store, code, key, pace
        self.rng = random.Random(f"teacher-{seed}")
        self.at: dict[int, float] = {}  # version -> perf_counter when the store had it

    async def teach(self, until: float) -> None:
        while time.perf_counter() < until:
            await asyncio.sleep(self.rng.uniform(*self.pace))
            move = {"layer": self.rng.randrange(3), "head": self.rng.randrange(4),
                    "step": self.rng.randrange(6)}
            try:
                state = await asyncio.to_thread(self.store.update, self.code, self.key, **move)
            except Exception:  # the store refused: no move to time
                continue
            self.at.setdefault(state.version, time.perf_counter())


async def get_json(base: str, path: str, cookies: dict, timeout: float) -> tuple[int, dict]:
    """One HTTP GET through the proxy, as the page's fetch() sends it: (status, JSON body).
    A cookie the reply sets replaces the learner's (nginx names the live replica that answered
    for a dead one), as a browser's would."""
    status, set_cookies, body = await http_get(base, path, cookies, timeout, body=True)
    cookies.update(set_cookies)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, {}


class Student:
    def __init__(self, index: int, url: str, code: str, replica: str, seed: int,
                 pace: tuple[float, float], timeout: float):
        self.index, self.url, self.code, self.replica = index, url, code, replica
        self.cookies = {"tfviz_replica": replica}
        self.rng = random.Random(f"{seed}-{index}")
        self.pace, self.timeout = pace, timeout
        self.session: Session | None = None
        self.page = ""  # the URL path the student's page is on (home until the class moves it)
        self.lock = asyncio.Lock()  # one run at a time, as one browser tab sends them
        self.seen_version = 0
        self.answered: set[str] = set()  # boxes whose answer was acknowledged
        self.inst = make_instance(EXERCISE)

    def _watch(self):
        """The page's live-watch component as the last run drew it (None: not following)."""
        return next((w for w in self.session.widgets.values()
                     if w.kind == "bidi_component" and "live_watch" in w.label), None)

    async def join(self, r: LiveResult, teacher: Teacher, again: bool = False) -> bool:
        """Open the ?join= link; after a drop (``again``), the page the student was on, as a
        browser reconnects to the address it shows."""
        start = time.perf_counter()
        try:
            self.session, run = await Session.open(self.url, self.page, query=f"join={self.code}",
                                                   timeout=self.timeout, cookies=self.cookies)
        except Exception as exc:
            if again:  # a reconnect that did not connect: the frontend tries again, as here
                r.retries += 1
            else:
                r.errors.append(f"join: {type(exc).__name__}: {exc}")
            self.session = None
            return False
        (r.reconnects_ms if again else r.actions_ms).append((time.perf_counter() - start) * 1e3)
        self.cookies.update(self.session.cookies)  # what nginx and the replica set, kept
        if run.error and self.session.closed:  # its replica died under it: a drop, reconnect
            r.cut += 1
            return False
        if run.error:
            r.errors.append(f"join: {run.error}")
        self.page = next((p for p, (h, _) in self.session.pages.items()
                          if h == self.session.page_hash), self.page)
        if self._watch() is None:
            said = " ".join(t for t in run.texts if "class" in t.lower())[:200]
            r.errors.append(f"join: not following the class ({said or 'nothing said'})")
            return False
        if again:  # moves made while the page was reconnecting count, late
            self._saw(run, r, teacher)
        else:  # moves made before this student joined are not follows
            self.seen_version = json.loads(self._watch().element.json)["after"]
        return True

    def _saw(self, run, r: LiveResult, teacher: Teacher) -> None:
        """Time the follow of every teacher move this run shows for the first time."""
        stamps = [int(m[1]) for t in run.texts for m in [STAMP.search(t)] if m]
        if not stamps:
            return
        version = max(stamps)
        arrived = run.finished or time.perf_counter()
        for v in range(self.seen_version + 1, version + 1):
            if v in teacher.at:
                r.follows_ms.append((arrived - teacher.at[v]) * 1e3)
        self.seen_version = max(self.seen_version, version)

    async def _answer(self, r: LiveResult) -> None:
        boxes = [f for f in self.inst.answer_fields if f.name not in self.answered]
        if not boxes:
            return
        box = self.rng.choice(boxes)
        if self.rng.random() < 0.5 or not box.mistakes:
            value = fmt_values(box.expected)
        else:
            value = fmt_values(self.rng.choice(box.mistakes).values)
        s = self.session
        inputs = [w for w in s.page_widgets() if w.kind == "text_input" and w.label == box.label]
        checks = [w for w in s.page_widgets() if w.kind == "button" and w.label == "Check"]
        order = [f.name for f in self.inst.answer_fields]
        if not inputs or len(checks) != len(order):
            return  # not on the exercise (yet): nothing to answer
        inputs[0].value = value
        check = checks[order.index(box.name)]
        async with self.lock:
            run = await s.rerun(fragment_id=check.fragment_id, trigger=check)
        if run.error and (s.closed or "websocket dropped" in run.error):
            r.cut += 1  # its replica died under it: not sent, and not told it was saved
            return
        r.actions_ms.append(run.seconds * 1e3)
        if run.error:
            r.errors.append(f"answer: {run.error}")
        if SAVED in run.texts:
            self.answered.add(box.name)
            fb = self.inst.check(box.name, value)
            r.sent[(box.name, fb.correct, None if fb.correct else fb.mistake)] += 1

    async def _follow(self, r: LiveResult, teacher: Teacher, until: float) -> None:
        """What the page's live-watch component does: hold a request open until the class
        moves, then start one run of the follower, which applies the move."""
        after = None
        while time.perf_counter() < until and self.session and not self.session.closed:
            w = self._watch()
            if w is None:
                return
            data = json.loads(w.element.json)
            after = data["after"] if after is None else max(after, data["after"])
            left = max(0.1, until - time.perf_counter())
            try:
                _, said = await get_json(self.url, f"/{data['path']}?after={after}",
                                         self.cookies, min(left, 25.0))
            except (OSError, asyncio.TimeoutError, ValueError, IndexError):
                return  # the replica is gone or the class ended: the caller reconnects
            version = said.get("version", 0)
            if said.get("status") in (None, "busy") and version <= after:
                continue
            if "version" in said and all(said.get(k) == v for k, v in data["same"].items()):
                # A view move: the page's script makes it in the browser (live_watch.js).
                arrived = time.perf_counter()
                r.follows_ms += [(arrived - teacher.at[v]) * 1e3
                                 for v in range(max(after, self.seen_version) + 1, version + 1)
                                 if v in teacher.at]
                self.seen_version = after = max(self.seen_version, version)
                r.view_moves += 1
                continue
            w.value = json.dumps({"moved": str(said.get("version", said.get("status")))})
            after = None
            async with self.lock:
                run = await self.session.rerun(fragment_id=w.fragment_id)
            if not self.session.closed:
                r.polls_ms.append(run.seconds * 1e3)
                if run.error:
                    r.errors.append(f"follow: {run.error}")
                self._saw(run, r, teacher)

    async def _work(self, r: LiveResult, until: float) -> None:
        while time.perf_counter() < until and self.session and not self.session.closed:
            await asyncio.sleep(self.rng.uniform(*self.pace))
            if time.perf_counter() < until and not self.session.closed:
                await self._answer(r)

    async def _dropped(self) -> None:
        while self.session is not None and not self.session.closed:
            await asyncio.sleep(0.1)

    async def _healthy(self, attempt: int) -> bool:
        """Wait as Streamlit's frontend does before it opens a websocket again, then ask the
        server's health check once: its retry delays are 100 ms, then 100 ms × 2^(n-1) up to
        4 s, each but the first times a random 0.7-1.0 (so that a room of pages that lost their
        server together do not all come back in the same instant)."""
        delay = 0.1 if attempt <= 1 else min(4.0, 0.1 * 2 ** (attempt - 1)) * \
            (0.7 + 0.3 * self.rng.random())
        await asyncio.sleep(delay)
        try:
            status, _ = await get_json(self.url, "/_stcore/health", self.cookies, self.timeout)
        except (OSError, asyncio.TimeoutError, ValueError, IndexError):
            return False
        return status == 200

    async def attend(self, r: LiveResult, teacher: Teacher, until: float) -> None:
        await asyncio.sleep(self.rng.uniform(0, ARRIVAL_S))
        again, dropped_at, attempt = False, None, 0
        try:
            while time.perf_counter() < until:
                if again:  # as the frontend: retry the health check with back-off and jitter
                    attempt += 1
                    if not await self._healthy(attempt):
                        continue
                if await self.join(r, teacher, again):
                    if dropped_at is not None:
                        r.rejoins_s.append(time.perf_counter() - dropped_at)
                    dropped_at, attempt = None, 0
                    # Until the websocket drops (its replica died) or the class is over, as a
                    # browser tab notices a drop at once and reconnects.
                    tasks = [asyncio.create_task(c) for c in (
                        self._follow(r, teacher, until), self._work(r, until), self._dropped())]
                    _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                    for t in pending:
                        t.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                if time.perf_counter() >= until:
                    break
                r.reconnects += 1  # the websocket dropped (its replica died), or the join failed
                again = True
                dropped_at = dropped_at or time.perf_counter()
                if self.session is not None:
                    await self.session.close()
        finally:
            if self.session is not None:
                await self.session.close()


async def run_live(url: str, store, learners: int, seconds: float, *, replicas: list[str],
                   seed: int = 0, pace=(8.0, 20.0), timeout: float = 30.0,
                   kill_at: float | None = None, kill_pid: int | None = None,
                   server_pids: list[int] | None = None) -> LiveResult:
    """The class on ``url`` (nginx in front of ``replicas``), its store opened by ``store``."""
    code, key = store.start(lesson="exercises")
    r = LiveResult(learners, len(replicas), seconds)
    watch = ServerWatch(server_pids or [])
    watch.start()
    t0 = time.perf_counter()
    teacher = Teacher(store, code, key, seed)
    students = [Student(i, url, code, replicas[i % len(replicas)], seed, pace, timeout)
                for i in range(learners)]

    async def kill() -> None:
        await asyncio.sleep(kill_at)
        os.kill(kill_pid, signal.SIGKILL)

    tasks = [teacher.teach(t0 + seconds - 3)] + [s.attend(r, teacher, t0 + seconds) for s in students]
    if kill_at is not None and kill_pid is not None:
        tasks.append(kill())
    await asyncio.gather(*tasks)
    watch.stop()
    r.cpu_s, r.peak_mb, r.moves = watch.cpu, watch.peak_mb, len(teacher.at)
    r.seconds = time.perf_counter() - t0
    for row in store.export_rows(code, key):
        if row["exercise"] == EXERCISE:
            r.exported[(row["box"], row["correct"], row["slip"] or None)] += 1
    store.end(code, key)
    return r


def table(r: LiveResult) -> str:
    def row(name, values):
        return (f"| {name} | {len(values)} | {pct(values, .5):.0f} | {pct(values, .95):.0f} | "
                f"{max(values, default=float('nan')):.0f} |")
    return "\n".join(["| what | n | p50 ms | p95 ms | max ms |", "|---|---:|---:|---:|---:|",
                      row("follow (teacher's move -> student's page)", r.follows_ms),
                      row("the follower's run after a move", r.polls_ms),
                      row("join or answer", r.actions_ms),
                      row("join again after a drop (apart)", r.reconnects_ms),
                      row("rejoin: drop -> following again", [s * 1e3 for s in r.rejoins_s])])


__all__ = ["LiveResult", "run_live", "table"]
