"""Masks, and an experiment that proves a decoder cannot peek at later tokens.

The causal mask adds −∞ to every score above the diagonal (key j later than query i), so
softmax gives those keys weight exactly 0:

>>> causal_mask_matrix(3).tolist()
[[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]

A padding mask hides the filler tokens that make sentences of different length into one
rectangular batch: every query gets −∞ on the pad keys.

>>> padding_mask([[5, 6, 7], [8, 9]], pad_id=0)
(array([[5, 6, 7],
       [8, 9, 0]]), array([[1, 1, 1],
       [1, 1, 0]]))

The no-peeking proof: run the text, change one later token, run again, and compare the
logits at every position. In a decoder, positions before the change do not move at all.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.config import RunOptions
from tfviz.tokenizer.base import Tokenizer
from tfviz.trace import Trace, run_with_trace


def causal_mask_matrix(n: int) -> np.ndarray:
    """(n, n) additive mask: 0 where query i may see key j (j ≤ i), −∞ above the diagonal."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return np.where(j <= i, 0.0, -np.inf)


def masked_cells(masked_scores: np.ndarray) -> np.ndarray:
    """Boolean map of the cells the model set to −∞ (True = hidden)."""
    return np.isneginf(masked_scores)


def padding_mask(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists to one length: (ids (B, T), attention_mask (B, T) with 1 = real)."""
    length = max(len(s) for s in sequences)
    ids = np.full((len(sequences), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), length), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = seq
        mask[row, :len(seq)] = 1
    return ids, mask


@dataclass(frozen=True)
class PaddingDemo:
    tokens: tuple[tuple[str, ...], ...]  # per sentence, padded with "<pad>"
    ids: np.ndarray  # (2, T)
    mask: np.ndarray  # (2, T) 1 = real token
    trace: Trace  # batched trace: patterns are (2, heads, T, T)
    max_change: float  # real tokens: |padded run − the sentence run alone|, largest logit change


def padding_demo(model, id_lists: Sequence[Sequence[int]], token_lists: Sequence[Sequence[str]],
                 pad_id: int = 0, pad_token: str = "<pad>") -> PaddingDemo:
    """Run several sentences as one padded batch (the model is only read, never changed).

    Also runs each sentence alone and reports how far its real tokens' logits moved because
    of the padding: with a correct mask, only float round-off (about 1e-6).
    """
    ids, mask = padding_mask(id_lists, pad_id)
    enc = {}
    if model.cfg.arch == "encoder-decoder":  # the source sentence is the same padded batch
        enc = {"enc_ids": ids, "enc_attention_mask": mask}
    trace = run_with_trace(model, ids, attention_mask=mask, **enc)
    change = 0.0
    for row, seq in enumerate(id_lists):
        alone_enc = {"enc_ids": list(seq)} if enc else {}
        alone = run_with_trace(model, list(seq), names=["logits"], **alone_enc).logits
        change = max(change, float(np.abs(trace.logits[row, :len(seq)] - alone).max()))
    tokens = tuple(tuple(toks) + (pad_token,) * (ids.shape[1] - len(toks)) for toks in token_lists)
    return PaddingDemo(tokens, ids, mask, trace, change)


@dataclass(frozen=True)
class PeekResult:
    position: int  # the position whose token was replaced
    old_id: int
    new_id: int
    change: np.ndarray  # (n,) max |Δ logit| at every position
    earlier: np.ndarray  # (n,) bool: positions before the change (their change is the proof)
    drops_changed: np.ndarray | None = None  # (n,) bool, MoE only: a slot dropped in one run only

    @property
    def max_earlier_change(self) -> float:
        return float(self.change[:self.position].max()) if self.position > 0 else 0.0

    @property
    def verdict(self) -> str:
        """Why earlier positions did or did not move:

        "sealed"    not at all (0.0 exactly): nothing flowed backwards;
        "capacity"  an MoE expert was full, and the later token took an earlier token's place
                    in it: real information flow, through routing rather than attention;
        "sees"      earlier positions read the later token through attention (an encoder, or
                    the causal mask switched off).
        The MoE layer is batch-invariant by construction (tfviz/model/moe.py), so rounding alone
        never moves an earlier position.
        """
        if self.max_earlier_change == 0.0:
            return "sealed"
        if self.drops_changed is not None and self.drops_changed[:self.position].any():
            return "capacity"
        return "sees"


def _dropped(tr: Trace) -> np.ndarray:
    """(n, layers·k) bool: which expert slots of each position were dropped, layer by layer."""
    return np.concatenate([v for k, v in tr.activations.items() if k.endswith("mlp.hook_dropped")], -1)


def peek_experiment(model, ids: Sequence[int], position: int, new_id: int,
                    causal: bool | None = None, enc_ids: Sequence[int] | None = None,
                    moe_top_k: int | None = None) -> PeekResult:
    """Replace the token at ``position`` by ``new_id`` and measure how every position's logits move.

    ``causal`` overrides the model's mask for both runs (None keeps the model's own). For an
    encoder-decoder model only the decoder's input changes; the encoder keeps reading
    ``enc_ids`` (default: the original ``ids``), so the experiment isolates the decoder's mask.
    For an MoE model it also records which positions lost an expert slot to the capacity
    limit in each run, so a leak through routing can be told from one through attention.
    """
    options = RunOptions(causal=causal, moe_top_k=moe_top_k)
    ids = [int(i) for i in ids]
    changed = list(ids)
    changed[position] = int(new_id)
    source = ids if enc_ids is None else [int(i) for i in enc_ids]
    enc = {"enc_ids": source} if model.cfg.arch == "encoder-decoder" else {}
    names = ["logits"] + [f"blocks.{i}.mlp.hook_dropped" for i in range(model.cfg.n_layers)
                          if model.cfg.is_moe]
    a = run_with_trace(model, ids, names=names, options=options, **enc)
    b = run_with_trace(model, changed, names=names, options=options, **enc)
    change = np.abs(a.logits.astype(np.float64) - b.logits).max(axis=-1)  # (n,)
    drops = (_dropped(a) != _dropped(b)).any(-1) if model.cfg.is_moe else None  # (n,)
    return PeekResult(position, ids[position], int(new_id), change,
                      np.arange(len(ids)) < position, drops)


def replacement_candidates(ids: Sequence[int], vocab_size: int, exclude: int,
                           first_id: int = 7, n_extra: int = 40) -> list[int]:
    """Token ids to offer as replacements: the text's own tokens, then the first ``n_extra``
    ordinary ids of the vocabulary (after the special tokens), without ``exclude``.

    >>> replacement_candidates([9, 8, 9], vocab_size=12, exclude=8, n_extra=4)
    [9, 7, 10]
    """
    seen: list[int] = []
    for i in [*ids, *range(first_id, min(vocab_size, first_id + n_extra))]:
        if i != exclude and i not in seen and 0 <= i < vocab_size:
            seen.append(int(i))
    return seen


def first_ordinary_id(tokenizer: Tokenizer) -> int:
    """The first id after a tokenizer's special tokens (<pad>, <bos>, …): 7 for our byte-level
    tokenizers, 4 for the letters-only task tokenizer."""
    return len(tokenizer.specials)
