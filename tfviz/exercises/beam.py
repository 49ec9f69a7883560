"""Beam search on a small tree of next-token probabilities, kept step by step.

A tree maps a prefix (a string of one-letter tokens) to the probabilities of the next token:
``{"": {"A": 0.6, "B": 0.4}, "A": {...}, "B": {...}, "AA": {...}, ...}``. A sequence's score
is the product of its conditional probabilities; after every step only the ``width`` best
prefixes survive. ``width=1`` is greedy decoding.

>>> tree = {"": {"A": 0.6, "B": 0.4}, "A": {"A": 0.5, "B": 0.5}, "B": {"A": 0.9, "B": 0.1}}
>>> beam_search(tree, 2, 2).best
('BA', 0.36)
>>> beam_search(tree, 2, 1).best
('AA', 0.3)
>>> first_difference("AA", "BA")
1
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class BeamRun:
    """``kept[t]`` are the prefixes (with scores) alive after step t+1, best first.

    Every score is stored once, rounded to 12 decimals, and read from there: a product such as
    .95 · .55 · .7 = .36575 comes out of floating point as .3657499…, and two copies rounded
    differently would show one probability as 0.3657 in one line and 0.3658 in the next.
    """

    kept: tuple[tuple[tuple[str, float], ...], ...]
    candidates: tuple[tuple[tuple[str, float], ...], ...]

    @property
    def best(self) -> tuple[str, float]:
        return self.kept[-1][0]


def beam_search(tree: dict, steps: int, width: int,
                rank: Literal["product", "last"] = "product") -> BeamRun:
    """Run ``steps`` steps keeping ``width`` prefixes.

    rank="product" scores a prefix by the product of its probabilities (the right way);
    rank="last" ranks candidates by their last conditional probability only (a slip).
    Reported scores are always products.
    """
    alive: list[tuple[str, float, float]] = [("", 1.0, 1.0)]  # prefix, product, last prob
    kept, cands = [], []
    for _ in range(steps):
        grown = [(p + tok, prod * q, q) for p, prod, _ in alive for tok, q in tree[p].items()]
        key = (lambda c: c[1]) if rank == "product" else (lambda c: c[2])
        grown.sort(key=key, reverse=True)
        cands.append(tuple((s, round(prod, 12)) for s, prod, _ in grown))
        alive = grown[:width]
        kept.append(cands[-1][:width])
    return BeamRun(tuple(kept), tuple(cands))


def all_paths(tree: dict, steps: int) -> list[tuple[str, float]]:
    """Every full sequence with its probability, best first (what an exhaustive search sees)."""
    return list(beam_search(tree, steps, width=10**6).kept[-1])


def path_probs(tree: dict, seq: str) -> list[float]:
    """The conditional probabilities along ``seq``: "BA" -> [P(B), P(A | B)]."""
    return [tree[seq[:i]][seq[i]] for i in range(len(seq))]


def first_difference(a: str, b: str) -> int | None:
    """The step (counting from 1) where two sequences first pick different tokens, or None.

    >>> first_difference("BAB", "BBA"), first_difference("AB", "AB")
    (2, None)
    """
    for step, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            return step
    return None if len(a) == len(b) else min(len(a), len(b)) + 1
