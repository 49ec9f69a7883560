"""A queue of symbol pairs by count, for BPE training, where counts change after each merge.

Finding the top pair by scanning every count costs time proportional to the number of
distinct pairs at every step. Instead we keep a heap and, whenever a count changes,
push a fresh entry; out-of-date entries are thrown away when they reach the top
("lazy deletion"). Order: highest count first, ties to the smallest pair.

    >>> q = PairQueue({("a", "b"): 3, ("b", "c"): 3, ("c", "d"): 1})
    >>> q.top(2)
    [(('a', 'b'), 3), (('b', 'c'), 3)]
    >>> q.update({("a", "b"): -2, ("c", "d"): +4})  # returns pairs whose count hit zero
    []
    >>> q.top(2)
    [(('c', 'd'), 5), (('b', 'c'), 3)]
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

Pair = tuple[str, str]


class PairQueue:
    def __init__(self, counts: Mapping[Pair, int]):
        self.counts: dict[Pair, int] = {p: c for p, c in counts.items() if c > 0}
        self._heap = [(-c, p) for p, c in self.counts.items()]
        heapq.heapify(self._heap)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def update(self, deltas: Mapping[Pair, int]) -> list[Pair]:
        """Add ``deltas`` to the counts; returns the pairs whose count dropped to zero."""
        gone = []
        for p, d in deltas.items():
            if d == 0:
                continue
            c = self.counts.get(p, 0) + d
            if c > 0:
                self.counts[p] = c
                heapq.heappush(self._heap, (-c, p))
            else:
                self.counts.pop(p, None)
                gone.append(p)
        if len(self._heap) > 4 * len(self.counts) + 1024:  # too many stale entries: rebuild
            self._heap = [(-c, p) for p, c in self.counts.items()]
            heapq.heapify(self._heap)
        return gone

    def top(self, k: int, keep_ties: bool = False) -> list[tuple[Pair, int]]:
        """The ``k`` best (pair, count) without removing them; with ``keep_ties`` also every
        further pair whose count equals the k-th, so a list never cuts a tie in half."""
        out: list[tuple[Pair, int]] = []
        while self._heap:
            neg, p = self._heap[0]
            if len(out) >= k and not (keep_ties and -neg == out[-1][1]):
                break
            heapq.heappop(self._heap)
            if self.counts.get(p) == -neg and (not out or out[-1][0] != p):
                out.append((p, -neg))
        for p, c in out:
            heapq.heappush(self._heap, (-c, p))
        return out
