"""Which exercises a learner has solved: a small immutable value for session state.

>>> p = Progress().solve("flying-arrows").solve("layernorm")
>>> p.is_solved("layernorm"), p.count
(True, 2)
>>> Progress.from_list(p.to_list()) == p
True
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    solved: frozenset[str] = frozenset()

    def solve(self, exercise_id: str) -> "Progress":
        """A new value with ``exercise_id`` added (this one is unchanged)."""
        return Progress(self.solved | {str(exercise_id)})

    def forget(self, exercise_id: str) -> "Progress":
        return Progress(self.solved - {exercise_id})

    def is_solved(self, exercise_id: str) -> bool:
        return exercise_id in self.solved

    @property
    def count(self) -> int:
        return len(self.solved)

    def fraction(self, all_ids: Iterable[str]) -> float:
        """Share of ``all_ids`` solved (ids outside that list do not count); 0.0 for none."""
        ids = set(all_ids)
        return len(self.solved & ids) / len(ids) if ids else 0.0

    def to_list(self) -> list[str]:
        return sorted(self.solved)

    @classmethod
    def from_list(cls, ids: Iterable[str]) -> "Progress":
        return cls(frozenset(str(i) for i in ids))
