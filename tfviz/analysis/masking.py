"""Masks: which scores become −∞, and the padding that makes sentences into one batch.

The causal mask (the reference's :func:`~tfviz.reference.causal_mask`) lets query i see keys
j ≤ i; the model adds −∞ to every score above the diagonal, so softmax gives those keys
weight exactly 0:

>>> np.where(causal_mask(3), 0.0, -np.inf).tolist()
[[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]

A padding mask hides the filler tokens that make sentences of different length into one
rectangular batch: every query gets −∞ on the pad keys.

>>> padding_mask([[5, 6, 7], [8, 9]], pad_id=0)
(array([[5, 6, 7],
       [8, 9, 0]]), array([[1, 1, 1],
       [1, 1, 0]]))

The experiments that run a model with these masks (a padded batch, and the proof that a
decoder cannot peek at later tokens) live in ``tfviz/experiments/padding.py`` and
``tfviz/experiments/peeking.py``.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from tfviz.reference import causal_mask  # noqa: F401 (lesson 8 shows it as mk.causal_mask)
from tfviz.tokenizer.base import Tokenizer


def masked_cells(masked_scores: np.ndarray) -> np.ndarray:
    """Boolean map of the cells the model set to −∞ (True = hidden)."""
    return np.isneginf(masked_scores)


def hidden_per_map(masked_scores: np.ndarray) -> np.ndarray:
    """How many cells of each (query, key) map are −∞: ``masked_scores`` (..., n, n) -> (...).

    >>> hidden_per_map(np.where(causal_mask(3), 0.0, -np.inf)[None]).tolist()  # 3 above the diagonal
    [3]
    """
    return masked_cells(masked_scores).sum(axis=(-2, -1))


def hidden_counts(masked_scores: np.ndarray) -> list[int]:
    """The different numbers of −∞ cells among the maps, smallest first: one number when every
    layer and head hides the same cells.

    >>> m = np.where(causal_mask(3), 0.0, -np.inf)
    >>> hidden_counts(np.stack([m, m])), hidden_counts(np.stack([m, np.zeros((3, 3))]))
    ([3], [0, 3])
    """
    return sorted({int(c) for c in hidden_per_map(masked_scores).ravel()})


def padding_mask(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists to one length: (ids (B, T), attention_mask (B, T) with 1 = real)."""
    length = max(len(s) for s in sequences)
    ids = np.full((len(sequences), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), length), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = seq
        mask[row, :len(seq)] = 1
    return ids, mask


def replacement_candidates(ids: Sequence[int], vocab_size: int, exclude: int,
                           first_id: int = 7, n_extra: int = 40,
                           skip: Collection[int] = ()) -> list[int]:
    """Token ids to offer as replacements: the text's own tokens, then the first ``n_extra``
    ordinary ids of the vocabulary from ``first_id`` on, without ``exclude`` and the ids in
    ``skip`` (the special tokens, wherever the tokenizer keeps them).

    >>> replacement_candidates([9, 8, 9], vocab_size=12, exclude=8, n_extra=4)
    [9, 7, 10]
    >>> replacement_candidates([3, 11], vocab_size=12, exclude=3, first_id=0, n_extra=3, skip={11})
    [0, 1, 2]
    """
    seen: list[int] = []
    for i in [*ids, *range(first_id, min(vocab_size, first_id + n_extra))]:
        if i != exclude and i not in skip and i not in seen and 0 <= i < vocab_size:
            seen.append(int(i))
    return seen


def special_ids(tokenizer: Tokenizer) -> set[int]:
    """The ids of a tokenizer's special tokens. Ours keep them first (0..len(specials)-1); a
    checkpoint's tokenizer names its own, wherever they are (GPT-2's <|endoftext|> is 50256,
    the last id)."""
    named = getattr(tokenizer, "special_ids", None)
    return set(named.values()) if named is not None else set(range(len(tokenizer.specials)))


def first_ordinary_id(tokenizer: Tokenizer) -> int:
    """The first id that is not a special token (<pad>, <bos>, …): 7 for our byte-level
    tokenizers, 4 for the letters-only task tokenizer, 0 for GPT-2's (its one special token
    is its last id)."""
    taken = special_ids(tokenizer)
    return next(i for i in range(tokenizer.vocab_size) if i not in taken)
