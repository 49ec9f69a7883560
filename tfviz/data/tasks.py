"""Algorithmic tasks small enough to train in seconds and to read attention patterns on.

Each example is (source, target), tuples of symbols from a small alphabet:

    reverse:  (a, c, b) -> (b, c, a)
    sort:     (c, a, b) -> (a, b, c)          (alphabet order)
    copy:     (c, a, b) -> (c, a, b)

A decoder-only model sees ``<bos> source <sep> target <eos>``. For copy that is a
random prefix followed by itself, the pattern induction heads learn: "find where the
current token appeared before and predict what followed it".

Held out, for all seeds at once: whether a source is held out depends only on a hash
of the source itself, so train and held-out examples are disjoint even when drawn
with different seeds or lengths.

    >>> make_reverse(2, seed=0, lengths=(3, 3)) == make_reverse(2, seed=0, lengths=(3, 3))
    True
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

LETTERS = tuple("abcdefghijklmnop")  # 16 symbols
DIGITS = tuple("0123456789")
SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>")
HELDOUT_FRACTION = 0.1
Example = tuple[tuple[str, ...], tuple[str, ...]]
Split = Literal["train", "heldout"]


@dataclass(frozen=True)
class TaskVocab:
    """Fixed vocabulary: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<sep>`` 3, then the alphabet.

    >>> v = TaskVocab(("a", "b"))
    >>> v.encode(["<bos>", "b", "a"])
    [1, 5, 4]
    >>> v.decode([1, 5, 4, 0, 0], skip_special=True)
    ['b', 'a']
    """

    alphabet: tuple[str, ...] = LETTERS
    tokens: tuple[str, ...] = field(init=False)
    pad_id, bos_id, eos_id, sep_id = 0, 1, 2, 3  # class constants, not fields

    def __post_init__(self) -> None:
        if not self.alphabet or len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError("alphabet must be non-empty with no repeats")
        if set(self.alphabet) & set(SPECIALS):
            raise ValueError("alphabet must not contain special tokens")
        object.__setattr__(self, "tokens", SPECIALS + tuple(self.alphabet))

    @property
    def size(self) -> int:
        return len(self.tokens)

    def encode(self, symbols: Sequence[str]) -> list[int]:
        index = {t: i for i, t in enumerate(self.tokens)}
        return [index[s] for s in symbols]

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> list[str]:
        out = [self.tokens[i] for i in ids]
        return [t for t in out if t not in SPECIALS] if skip_special else out

    def sequence(self, source: Sequence[str], target: Sequence[str]) -> list[str]:
        """(a, b) -> (b, a) becomes ["<bos>", "a", "b", "<sep>", "b", "a", "<eos>"]."""
        return ["<bos>", *source, "<sep>", *target, "<eos>"]


def is_heldout(source: Sequence[str], fraction: float = HELDOUT_FRACTION) -> bool:
    """Deterministic membership of the held-out split, from a hash of the symbols."""
    digest = hashlib.blake2b("\x1f".join(source).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 10_000 < fraction * 10_000


def _make(
    target_of: Callable[[tuple[str, ...]], tuple[str, ...]],
    n: int,
    seed: int,
    lengths: tuple[int, int],
    alphabet: Sequence[str],
    split: Split,
    heldout_fraction: float,
) -> list[Example]:
    lo, hi = lengths
    if not 1 <= lo <= hi:
        raise ValueError(f"lengths must satisfy 1 <= low <= high, got {lengths}")
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    alphabet = tuple(alphabet)
    TaskVocab(alphabet)  # validates the alphabet
    rng = random.Random(seed)
    want_heldout = split == "heldout"
    out: list[Example] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 1000 * (n + 10):
            raise ValueError(f"could not find {n} {split} sources; use longer sequences or a bigger alphabet")
        source = tuple(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))
        if is_heldout(source, heldout_fraction) == want_heldout:
            out.append((source, target_of(source)))
    return out


def make_reverse(n: int, seed: int, lengths: tuple[int, int] = (3, 8), alphabet: Sequence[str] = LETTERS,
                 split: Split = "train", heldout_fraction: float = HELDOUT_FRACTION) -> list[Example]:
    """Reverse the source: (a, c, b) -> (b, c, a)."""
    return _make(lambda s: s[::-1], n, seed, lengths, alphabet, split, heldout_fraction)


def make_sort(n: int, seed: int, lengths: tuple[int, int] = (3, 8), alphabet: Sequence[str] = LETTERS,
              split: Split = "train", heldout_fraction: float = HELDOUT_FRACTION) -> list[Example]:
    """Sort by position in the alphabet: (c, a, b) -> (a, b, c)."""
    rank = {s: i for i, s in enumerate(alphabet)}
    return _make(lambda s: tuple(sorted(s, key=rank.__getitem__)), n, seed, lengths, alphabet, split,
                 heldout_fraction)


def make_copy(n: int, seed: int, lengths: tuple[int, int] = (3, 8), alphabet: Sequence[str] = LETTERS,
              split: Split = "train", heldout_fraction: float = HELDOUT_FRACTION) -> list[Example]:
    """Copy the source: (c, a, b) -> (c, a, b), i.e. a random prefix repeated (induction heads)."""
    return _make(lambda s: s, n, seed, lengths, alphabet, split, heldout_fraction)
