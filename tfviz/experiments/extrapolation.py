"""Positions a model never trained on (lesson 3): the same sentences read further along.

The notes say a model cannot extrapolate past the lengths it was trained on; the usual answer
is that a formula (the sine table) can be evaluated at any position while a learned table has
no row past its last. Both are half of it. The experiment here reads held-out sentences
starting at position k instead of 0: k padding tokens go first, and the attention mask hides
them from every query, so the sentence's tokens see exactly what they see at position 0, only
their positions have moved by k. Our story models trained on sentences of at most
``positions_trained`` tokens, always starting at position 0, so from k = 1 on the sentence's
end sits at positions training never used, and the sentence starts where none did.

- an absolute scheme (sines, a learned table) gives every token new position vectors: the
  sine table's are computed, the learned table's rows past the trained ones are still their
  random start, and past ``max_seq_len`` there is no row at all (the model refuses the text);
- a relative scheme (RoPE, Shaw et al., T5's bias) never sees a position, only the distance
  i − j between a query and a key, and moving the whole sentence changes no distance: its loss
  is the same at every k, up to float32 rounding.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


def loss_at_offset(model, rows: Sequence[Sequence[int]], pad_id: int, k: int) -> float:
    """Mean next-token cross-entropy (nats) over every predicted token of ``rows``, each read
    at positions k, k+1, ... behind k masked padding tokens (right-padded to one width)."""
    rows = [list(r) for r in rows if len(r) >= 2]
    if not rows:
        raise ValueError("need at least one row of two or more tokens")
    width = max(map(len, rows))
    ids = torch.tensor([[pad_id] * k + r + [pad_id] * (width - len(r)) for r in rows])  # (B, k+W)
    mask = torch.tensor([[0] * k + [1] * len(r) + [0] * (width - len(r)) for r in rows])  # (B, k+W)
    with torch.no_grad():
        logits = model(ids, attention_mask=mask)[:, k:]  # (B, W, V): the sentences' own positions
    targets = torch.tensor([r[1:] + [-100] * (width - len(r)) for r in rows])  # (B, W-1)
    return float(F.cross_entropy(logits[:, :-1].double().reshape(-1, logits.shape[-1]),
                                 targets.reshape(-1), ignore_index=-100))


@dataclass(frozen=True)
class Shifted:
    offsets: tuple[int, ...]
    losses: tuple[float, ...]  # one per offset
    longest: int  # tokens in the longest row: at offset k it ends at position k + longest - 1

    @property
    def later_range(self) -> tuple[float, float]:
        """The lowest and highest loss once the sentences start after position 0.

        >>> Shifted((0, 1, 2), (2.0, 2.5, 2.25), 5).later_range
        (2.25, 2.5)
        """
        later = self.losses[1:]
        return min(later), max(later)

    @property
    def spread(self) -> float:
        """How far apart the losses lie, over every offset."""
        return max(self.losses) - min(self.losses)

    def worse_later(self, margin: float) -> bool:
        """Whether every later start costs more than ``margin`` over the start at position 0."""
        return self.later_range[0] > self.losses[0] + margin


def widest_spread(runs: Iterable[Shifted]) -> float:
    """The largest :attr:`Shifted.spread` of ``runs``."""
    return max(run.spread for run in runs)


def longest_row(runs: Iterable[Shifted]) -> int:
    """The longest row any of ``runs`` read."""
    return max(run.longest for run in runs)


def offsets_for(context: int, longest: int, steps: Sequence[int] = (0, 1, 2, 4, 8, 16, 32, 64)) -> list[int]:
    """The offsets read: ``steps`` that keep the longest row inside the context, then the last
    one that does (context - longest).

    >>> offsets_for(128, 21)
    [0, 1, 2, 4, 8, 16, 32, 64, 107]
    >>> offsets_for(24, 21)
    [0, 1, 2, 3]
    """
    last = context - longest
    if last < 0:
        raise ValueError(f"a row of {longest} tokens does not fit a context of {context}")
    return sorted({k for k in steps if k <= last} | {last})


def shifted_losses(model, rows: Sequence[Sequence[int]], pad_id: int, context: int) -> Shifted:
    """:func:`loss_at_offset` at every offset of :func:`offsets_for`."""
    longest = max(len(r) for r in rows)
    ks = offsets_for(context, longest)
    return Shifted(tuple(ks), tuple(loss_at_offset(model, rows, pad_id, k) for k in ks), longest)
