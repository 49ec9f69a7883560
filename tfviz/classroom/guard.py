"""The friendly errors of live sessions, and the per-client budget that slows guessing.

>>> b = Budget(limit=2, window=60.0)
>>> b.spend("10.0.0.9", 0.0); b.spend("10.0.0.9", 1.0); b.exhausted("10.0.0.9", 2.0)
True
>>> b.exhausted("10.0.0.9", 60.5), b.exhausted("10.0.0.7", 2.0), b.exhausted(None, 2.0)
(False, False, False)
"""
from __future__ import annotations

import collections
from collections.abc import Hashable

MAX_CLIENTS = 10_000  # clients remembered, at most (the oldest are forgotten first)


class LiveError(Exception):
    """A friendly reason, fit to show a student or teacher as it is (``str(err)``)."""


class UnknownCode(LiveError):
    pass


class SessionGone(LiveError):
    """The code was live, and has expired or been ended."""


class WrongKey(LiveError):
    pass


class TooManyTries(LiveError):
    pass


class ServerFull(LiveError):
    pass


class SessionFull(LiveError):
    pass


class BadValue(LiveError):
    pass


class Budget:
    """At most ``limit`` events per client in any ``window`` seconds (client None: unlimited)."""

    def __init__(self, limit: int, window: float):
        self.limit, self.window = limit, window
        self._seen: collections.OrderedDict[Hashable, collections.deque] = collections.OrderedDict()

    def _recent(self, client: Hashable, now: float) -> collections.deque:
        times = self._seen.get(client, collections.deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def exhausted(self, client: Hashable | None, now: float) -> bool:
        return client is not None and len(self._recent(client, now)) >= self.limit

    def spend(self, client: Hashable | None, now: float) -> None:
        if client is None:
            return
        times = self._recent(client, now)
        times.append(now)
        self._seen[client] = times
        self._seen.move_to_end(client)
        while len(self._seen) > MAX_CLIENTS:
            self._seen.popitem(last=False)
