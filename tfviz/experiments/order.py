"""Without positions, attention is order-blind: reorder the tokens and the outputs just follow.

A model with no position information computes, for each token, the same output whatever order
the other tokens come in (each token sees the same crowd), so reordering the input only
reorders the output rows. The experiment builds such a model (a fresh, separate one; the shared
model is never touched), runs the tokens as typed and in a new order
(:func:`tfviz.analysis.positions.permutation`), and measures the gap.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.trace import run_with_trace


def positionless_model(cfg: ModelConfig) -> Transformer:
    """A fresh, seeded model with ``cfg``'s shape but no position information at all.

    Mixture-of-experts capacity is lifted too: with a capacity, the tokens that come first claim
    an expert's places, which would smuggle order back in through the router. A RoPE model's
    rotary settings (rotary_dim, rope_scaling) go with its positions.
    """
    bare = cfg.replace(name=f"{cfg.name}-no-positions", positional="none", rotary_dim=None,
                       rope_scaling=None, moe_capacity_factor=None, dropout=0.0)
    return Transformer(bare).eval()


@dataclass(frozen=True)
class PermutationCheck:
    """Outputs for the tokens in their order and in a new order.

    ``permuted[r]`` belongs to token ``order[r]``; if the model is order-blind it equals
    ``original[order[r]]`` and ``max_gap`` is rounding noise.
    """

    order: np.ndarray  # (T,)
    original: np.ndarray  # (T, d) last block's output for the tokens as typed
    permuted: np.ndarray  # (T, d) the same for the reordered tokens
    max_gap: float


def permutation_check(model: Transformer, ids, order) -> PermutationCheck:
    """Run ``ids`` and ``ids[order]`` through ``model`` with no causal mask; compare outputs.

    The causal mask is switched off for both runs, because "only look left" is itself a hint
    about order. An encoder-decoder model keeps the original ids as its source both times.
    """
    ids = np.asarray(ids, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    opts = RunOptions(causal=False)
    extra = {"enc_ids": ids} if model.cfg.arch == "encoder-decoder" else {}
    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    original = run_with_trace(model, ids, options=opts, names=[last], **extra)[last]
    permuted = run_with_trace(model, ids[order], options=opts, names=[last], **extra)[last]
    gap = float(np.abs(permuted - original[order]).max()) if len(ids) else 0.0
    return PermutationCheck(order, original, permuted, gap)
