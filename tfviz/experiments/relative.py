"""Run a model with Shaw et al.'s relative positions over a batch of texts and keep only its
position terms q_i · a^K_{j−i} (``hook_rel_scores``), for lesson 3's "what each head came to
prefer" (:func:`tfviz.analysis.relative_positions.shaw_preferences` averages them).

The texts go in as one batch padded on the right, with an attention mask, so a padded row
computes what it would alone: a decoder's real tokens never see the pads after them, and an
encoder's are told to ignore them.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.trace import run_with_trace


def position_terms(model, id_lists: Sequence[Sequence[int]], pad_id: int = 0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(rel_scores (L, B, H, T, T), lengths (B,)) of the texts ``id_lists``, T the longest.

    >>> from tfviz.config import ModelConfig
    >>> from tfviz.model import Transformer
    >>> terms, lengths = position_terms(Transformer(ModelConfig(positional="relative", n_layers=1)),
    ...                                 [[5, 6, 7], [8, 9]])
    >>> terms.shape, lengths.tolist()
    ((1, 2, 4, 3, 3), [3, 2])
    """
    if model.cfg.positional != "relative":
        raise ValueError(f"{model.cfg.name} does not use Shaw et al.'s relative positions "
                         f"(positional={model.cfg.positional!r})")
    lengths = np.array([len(ids) for ids in id_lists], dtype=np.int64)
    T = int(lengths.max())
    ids = np.full((len(id_lists), T), pad_id, dtype=np.int64)  # (B, T)
    for b, row in enumerate(id_lists):
        ids[b, :len(row)] = row
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int64)  # (B, T): 1 = real token
    names = [f"blocks.{i}.attn.hook_rel_scores" for i in range(model.cfg.n_layers)]
    tr = run_with_trace(model, ids, attention_mask=mask, names=names)
    return np.stack([tr[name] for name in names]), lengths  # (L, B, H, T, T)
