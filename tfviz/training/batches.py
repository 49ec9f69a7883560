"""Turn token rows into the tensors each training objective needs.

A row is one sentence (or one task example) as a list of ids. Rows of different lengths are
padded on the right with ``<pad>`` (id 0), and targets there are ``IGNORE`` so the loss skips them.

Next-token prediction (gpt-tiny, moe-tiny): the input is the row, the target the row moved
one place left.

>>> x, y = lm_batch([[7, 8, 2], [9, 2]])
>>> x.tolist(), y.tolist()
([[7, 8, 2], [9, 2, 0]], [[8, 2, -100], [2, -100, -100]])

Masked LM (bert-tiny): see ``mlm_batch``; an ``Antecedent`` row adds one labelled position
(the pronoun, whose target is the noun it stands for). Reversal (reverse-encdec): see
``seq2seq_batch``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

IGNORE = -100  # F.cross_entropy's ignore_index
MLM_SELECT, MLM_MASK, MLM_RANDOM = 0.15, 0.8, 0.1  # BERT: 15% chosen; 80% [MASK], 10% random, 10% kept


def pad(rows: Sequence[Sequence[int]], value: int = 0, length: int | None = None) -> Tensor:
    """(B, T) tensor, rows padded on the right: [[5], [6, 7]] -> [[5, 0], [6, 7]]."""
    T = length or max(len(r) for r in rows)
    out = torch.full((len(rows), T), value, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
    return out


def lm_batch(rows: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """(inputs, targets), both (B, T): target[t] = input[t + 1], IGNORE past each row's end."""
    x = pad(rows, pad_id)
    y = pad([list(r[1:]) for r in rows], IGNORE, length=x.shape[1])
    return x, y


class MlmDraw(NamedTuple):
    """One BERT masking draw over a batch, every decision kept (all (B, T))."""

    x: Tensor  # the rows, padded
    real: Tensor  # True at real tokens, False at padding
    chosen: Tensor  # the positions the loss is computed at
    kind: Tensor  # at chosen positions: MASKED, RANDOM or KEPT (-1 elsewhere)
    random_ids: Tensor  # the replacement at positions whose kind is RANDOM


MASKED, RANDOM, KEPT = 0, 1, 2  # what a chosen position becomes


def mlm_draw(rows: Sequence[Sequence[int]], gen: torch.Generator, *, vocab_size: int,
             first_ordinary: int = 7, pad_id: int = 0) -> MlmDraw:
    """The decisions of BERT's masking, drawn from ``gen`` (``mlm_batch`` applies them).

    In each row, round(15% of its tokens) positions are chosen (at least one), uniformly.
    Each chosen position becomes [MASK] with probability 0.8, a random ordinary token
    (id >= first_ordinary, never a special) with 0.1, and stays as it is with 0.1. A random
    token may happen to be the original one; its kind still says RANDOM.
    """
    x = pad(rows, pad_id)  # (B, T)
    lengths = torch.tensor([len(r) for r in rows])  # (B,)
    real = torch.arange(x.shape[1])[None, :] < lengths[:, None]  # (B, T)
    n_chosen = (lengths.double() * MLM_SELECT).round().clamp(min=1).long()  # (B,)
    # A random rank for every real position; the n_chosen lowest ranks are chosen.
    score = torch.rand(x.shape, generator=gen).masked_fill(~real, 2.0)  # (B, T)
    rank = score.argsort(dim=1).argsort(dim=1)  # (B, T) place of each position in the order
    chosen = rank < n_chosen[:, None]  # (B, T)
    u = torch.rand(x.shape, generator=gen)  # one draw decides mask / random / keep
    random_ids = torch.randint(first_ordinary, vocab_size, x.shape, generator=gen)
    kind = torch.full_like(x, KEPT)  # (B, T)
    kind[u < MLM_MASK] = MASKED
    kind[u >= MLM_MASK + MLM_RANDOM] = RANDOM
    kind[~chosen] = -1
    return MlmDraw(x, real, chosen, kind, random_ids)


class Antecedent(NamedTuple):
    """A row whose pronoun must name its noun (bert-tiny's coreference statements).

    ``ids`` is masked like any row; then, at ``position`` (the pronoun "it"), the input is
    the pronoun itself whatever the draw decided, and the target is ``label`` (the id of the
    noun "it" stands for) instead of the pronoun.
    """

    ids: Sequence[int]
    position: int
    label: int


def row_ids(row: Sequence[int] | Antecedent) -> Sequence[int]:
    """The token ids of a plain row or of an ``Antecedent`` row."""
    return row.ids if isinstance(row, Antecedent) else row


def mlm_batch(rows: Sequence[Sequence[int] | Antecedent], gen: torch.Generator, *, mask_id: int,
              vocab_size: int, first_ordinary: int = 7, pad_id: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """(inputs, targets, attention_mask) for masked-language modelling, as in BERT.

    ``mlm_draw`` decides: round(15%) of each row's positions are chosen (at least one); of
    the chosen, 80% become [MASK], 10% a random ordinary token, 10% stay as they are.
    Targets hold the original id at chosen positions, IGNORE elsewhere, so the loss is only
    on chosen positions.

    >>> g = torch.Generator().manual_seed(0)
    >>> x, y, m = mlm_batch([[10, 11, 12, 13, 14, 15, 16]], g, mask_id=4, vocab_size=20)
    >>> int((y != -100).sum())        # round(0.15 * 7) = 1 position chosen
    1

    An ``Antecedent`` row is drawn exactly like its plain ids (the same draw, the same
    generator state afterwards); only its labelled position is then set: input kept, target
    the noun. Here "it" (13) must name the noun 11:

    >>> x, y, _ = mlm_batch([Antecedent([10, 11, 12, 13, 14, 15, 16], 3, 11)],
    ...                     torch.Generator().manual_seed(0), mask_id=4, vocab_size=20)
    >>> int(x[0, 3]), int(y[0, 3])
    (13, 11)
    """
    d = mlm_draw([row_ids(r) for r in rows], gen, vocab_size=vocab_size, first_ordinary=first_ordinary,
                 pad_id=pad_id)
    inputs = torch.where(d.kind == MASKED, torch.full_like(d.x, mask_id), d.x)
    inputs = torch.where(d.kind == RANDOM, d.random_ids, inputs)
    targets = torch.where(d.chosen, d.x, torch.full_like(d.x, IGNORE))
    for i, row in enumerate(rows):
        if isinstance(row, Antecedent):
            inputs[i, row.position] = d.x[i, row.position]
            targets[i, row.position] = row.label
    return inputs, targets, d.real.long()


def seq2seq_batch(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], bos_id: int, eos_id: int,
                  pad_id: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(enc_ids, enc_mask, dec_in, dec_target) for teacher forcing.

    The decoder reads ``<bos> target`` and must predict ``target <eos>``:

    >>> e, m, d, t = seq2seq_batch([([4, 5, 6], [6, 5, 4])], bos_id=1, eos_id=2)
    >>> d.tolist(), t.tolist()
    ([[1, 6, 5, 4]], [[6, 5, 4, 2]])
    """
    enc = pad([s for s, _ in pairs], pad_id)  # (B, S)
    enc_mask = pad([[1] * len(s) for s, _ in pairs], 0, length=enc.shape[1])  # (B, S)
    dec_in = pad([[bos_id, *t] for _, t in pairs], pad_id)  # (B, T)
    dec_tgt = pad([[*t, eos_id] for _, t in pairs], IGNORE, length=dec_in.shape[1])  # (B, T)
    return enc, enc_mask, dec_in, dec_tgt
