"""A fake clock for tests of code that takes a ``clock`` (a callable returning seconds), such
as tfviz.classroom.live.LiveStore: time moves only when a test advances it."""
from __future__ import annotations


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float = 0.0, seconds: float = 0.0) -> None:
        self.now += hours * 3600 + seconds
