"""Waiting for the teacher's next move, cheaply: what a student's page long-polls.

A student's browser asks "tell me when class K7QM4XPD passes version 7" (an HTTP request that
the server holds open, ``tfviz.ui.live_route``). However many students of a class wait on one
server process, that process asks the store once every ``poll_s`` (a primary-key read), and
wakes them all when the version moves. So a teacher's move reaches every replica within
``poll_s``, each student's page within one reply after that, and nothing runs while the
teacher does not move: no script run per student per second.

Why polling the store rather than Redis pub/sub: it works the same on both backends (SQLite
has no notifications across processes), a replica that restarts or a message that is lost
cannot leave a student behind (the version is read, not delivered), and its cost does not grow
with the class: one read per class per process every ``poll_s``.

Only codes a student of this process has joined are answered (``allow``); any other code gets
the same "not here" reply, so the endpoint tells a guesser nothing the join box would not.

>>> import asyncio
>>> from tfviz.classroom.store import open_store
>>> store = open_store("sqlite://")
>>> code, key = store.start()
>>> watch = ClassWatch(store, poll_s=0.01)
>>> watch.allow(code)
>>> async def demo():
...     waiting = asyncio.create_task(watch.wait(code, after=1, timeout=5))
...     await asyncio.sleep(0.05)
...     store.update(code, key, layer=2)
...     return await waiting
>>> reply = asyncio.run(demo())
>>> reply["version"], reply["layer"], reply["lesson"]
(2, 2, 'home')
>>> asyncio.run(watch.wait("ZZZZZZZZ", after=0, timeout=1))
{'status': 'not here'}
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from tfviz.classroom.codes import parse_code
from tfviz.classroom.guard import LiveError, StoreDown

POLL_S = 0.1  # how often one process reads a watched class's version
WAIT_S = 20.0  # a request is answered after this at the latest (proxies time out idle ones)
ALLOW_S = 6 * 3600.0  # a code joined on this process is answered this long after the join
MAX_CLASSES = 1000  # classes one process watches at once, at most


#: what a reply tells the page besides the version: enough to move the charts' view at once
#: when nothing else changed (the page compares lesson, sentence, model and check-in), and the
#: pacing of the current question (its countdown's end on the store's clock, whether its
#: results are shown).
SHOWN = ("lesson", "text", "model", "layer", "head", "step", "checkin_phase", "question",
         "deadline", "revealed", "resets")


@dataclass
class _Watched:
    version: int = 0
    shown: dict = field(default_factory=dict)  # SHOWN of that version
    gone: str = ""  # why the class cannot be followed any more ("" while it can)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    waiters: int = 0
    task: asyncio.Task | None = None


class ClassWatch:
    """One per server process: the classes its students follow, watched by one task each."""

    def __init__(self, store, *, poll_s: float = POLL_S, clock=time.monotonic):
        self.store, self.poll_s, self._clock = store, poll_s, clock
        self._allowed: dict[str, float] = {}
        self._lock = threading.Lock()  # allow() is called from script threads
        self._watched: dict[str, _Watched] = {}  # touched only on the event loop

    def allow(self, code: str) -> None:
        """A student of this process joined ``code`` (or polled it): answer it from now on."""
        with self._lock:
            now = self._clock()
            self._allowed[code] = now
            if len(self._allowed) > MAX_CLASSES:
                for old in [c for c, t in self._allowed.items() if now - t > ALLOW_S]:
                    del self._allowed[old]

    def _is_allowed(self, code: str) -> bool:
        with self._lock:
            joined = self._allowed.get(code)
            return joined is not None and self._clock() - joined < ALLOW_S

    async def wait(self, code: object, after: int, timeout: float = WAIT_S) -> dict:
        """{"version": v, "lesson": ..., "layer": ...} (the class's SHOWN state) as soon as its
        version passes ``after`` (or at ``timeout``, as it is then); {"status": why} when it
        cannot be followed."""
        canonical = parse_code(code)
        if canonical is None or not self._is_allowed(canonical):
            return {"status": "not here"}
        w = self._watched.get(canonical)
        if w is None:
            if len(self._watched) >= MAX_CLASSES:
                return {"status": "busy"}
            w = self._watched[canonical] = _Watched(version=-1)
        w.waiters += 1
        try:
            if w.task is None or w.task.done():
                w.task = asyncio.get_running_loop().create_task(self._follow(canonical, w))
            deadline = asyncio.get_running_loop().time() + timeout
            while not w.gone and w.version <= after:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                event = w.changed
                try:
                    await asyncio.wait_for(event.wait(), left)
                except asyncio.TimeoutError:
                    break
            return {"status": w.gone} if w.gone else {"version": max(w.version, 0), **w.shown}
        finally:
            w.waiters -= 1

    async def _follow(self, code: str, w: _Watched) -> None:
        """Read the class's version every ``poll_s`` while anyone waits; wake them on a move."""
        idle_since = None
        while True:
            try:
                state = await asyncio.to_thread(self.store.state, code)
                version, gone = state.version, ""
                w.shown = {k: getattr(state, k) for k in SHOWN}
            except StoreDown:
                version, gone = w.version, ""  # keep waiting: the store comes back
            except LiveError as err:
                version, gone = w.version, str(err)
            if version != w.version or gone != w.gone:
                w.version, w.gone = version, gone
                w.changed.set()
                w.changed = asyncio.Event()
            if gone:
                self._watched.pop(code, None)
                return
            if w.waiters == 0:
                idle_since = idle_since or asyncio.get_running_loop().time()
                if asyncio.get_running_loop().time() - idle_since > 2 * WAIT_S:
                    self._watched.pop(code, None)
                    return
            else:
                idle_since = None
            await asyncio.sleep(self.poll_s)
