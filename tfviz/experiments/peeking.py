"""The no-peeking proof: a decoder's earlier positions cannot see a later token.

Run the text, change one later token, run again, and compare the logits at every position.
In a decoder, positions before the change do not move at all (a change of exactly 0.0).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.config import RunOptions
from tfviz.trace import run_with_trace


@dataclass(frozen=True)
class PeekResult:
    position: int  # the position whose token was replaced
    old_id: int
    new_id: int
    change: np.ndarray  # (n,) max |Δ logit| at every position
    earlier: np.ndarray  # (n,) bool: positions before the change (their change is the proof)

    @property
    def max_earlier_change(self) -> float:
        return float(self.change[:self.position].max()) if self.position > 0 else 0.0

    @property
    def verdict(self) -> str:
        """Why earlier positions did or did not move:

        "sealed"    not at all (0.0 exactly): nothing flowed backwards;
        "sees"      earlier positions read the later token through attention (an encoder, or
                    the causal mask switched off).
        The MoE layer is batch-invariant by construction and counts its capacity per prefix
        (tfviz/model/moe.py), so neither rounding nor a full expert ever moves an earlier
        position of a decoder.
        """
        return "sealed" if self.max_earlier_change == 0.0 else "sees"


def peek_experiment(model, ids: Sequence[int], position: int, new_id: int,
                    causal: bool | None = None, enc_ids: Sequence[int] | None = None,
                    moe_top_k: int | None = None) -> PeekResult:
    """Replace the token at ``position`` by ``new_id`` and measure how every position's logits move.

    ``causal`` overrides the model's mask for both runs (None keeps the model's own). For an
    encoder-decoder model only the decoder's input changes; the encoder keeps reading
    ``enc_ids`` (default: the original ``ids``), so the experiment isolates the decoder's mask.
    """
    options = RunOptions(causal=causal, moe_top_k=moe_top_k)
    ids = [int(i) for i in ids]
    changed = list(ids)
    changed[position] = int(new_id)
    source = ids if enc_ids is None else [int(i) for i in enc_ids]
    enc = {"enc_ids": source} if model.cfg.arch == "encoder-decoder" else {}
    a = run_with_trace(model, ids, names=["logits"], options=options, **enc)
    b = run_with_trace(model, changed, names=["logits"], options=options, **enc)
    change = np.abs(a.logits.astype(np.float64) - b.logits).max(axis=-1)  # (n,)
    return PeekResult(position, ids[position], int(new_id), change, np.arange(len(ids)) < position)
