"""Turn token rows into the tensors each training objective needs.

A row is one sentence (or one task example) as a list of ids. Rows of different lengths are
padded on the right with ``<pad>`` (id 0), and targets there are ``IGNORE`` so the loss skips them.

Next-token prediction (gpt-tiny, moe-tiny): the input is the row, the target the row moved
one place left.

>>> x, y = lm_batch([[7, 8, 2], [9, 2]])
>>> x.tolist(), y.tolist()
([[7, 8, 2], [9, 2, 0]], [[8, 2, -100], [2, -100, -100]])

Masked LM (bert-tiny): see ``mlm_batch``. Reversal (reverse-encdec): see ``seq2seq_batch``.
"""
from __future__ import annotations

from collections.abc import Sequence

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


def mlm_batch(rows: Sequence[Sequence[int]], gen: torch.Generator, *, mask_id: int, vocab_size: int,
              first_ordinary: int = 7, pad_id: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """(inputs, targets, attention_mask) for masked-language modelling, as in BERT.

    In each row, round(15% of its tokens) positions are chosen (at least one). Of the chosen,
    80% become [MASK], 10% a random ordinary token (id >= first_ordinary, never a special),
    10% stay as they are. Targets hold the original id at chosen positions, IGNORE elsewhere,
    so the loss is only on chosen positions.

    >>> g = torch.Generator().manual_seed(0)
    >>> x, y, m = mlm_batch([[10, 11, 12, 13, 14, 15, 16]], g, mask_id=4, vocab_size=20)
    >>> int((y != -100).sum())        # round(0.15 * 7) = 1 position chosen
    1
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
    inputs = torch.where(chosen & (u < MLM_MASK), torch.full_like(x, mask_id), x)
    inputs = torch.where(chosen & (u >= MLM_MASK + MLM_RANDOM), random_ids, inputs)
    targets = torch.where(chosen, x, torch.full_like(x, IGNORE))
    return inputs, targets, real.long()


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
