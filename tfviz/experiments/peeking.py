"""The no-peeking proof: a decoder's earlier positions cannot see a later token.

Run the text, change one later token, run again, and compare the logits at every position.
In a decoder, positions before the change do not move at all (a change of exactly 0.0).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.config import RunOptions
from tfviz.trace import Trace, run_with_trace


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
