"""Numbers for the positions lesson: sine tables, similarity by distance, RoPE and ALiBi demos.

The tables come from the engine itself (``tfviz.model.positional``), turned into numpy, so the
lesson shows exactly what the model adds.

>>> robot = sinusoid_table(4, 4, base=100)        # "I am a Robot", d = 4, n = 100
>>> robot[2].round(2).tolist()
[0.91, -0.42, 0.2, 0.98]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.model.positional import alibi_bias, alibi_slopes, apply_rope, rope_angles, sinusoidal_table
from tfviz.trace import run_with_trace

ROBOT = ("I", "am", "a", "Robot")


def sinusoid_table(n_positions: int, d: int, base: float = 10000.0) -> np.ndarray:
    """(n_positions, d): PE(k, 2i) = sin(k / base^(2i/d)), PE(k, 2i+1) = cos(same angle)."""
    return sinusoidal_table(n_positions, d, base).numpy().astype(np.float64)


def formula_table(words=ROBOT, d: int = 4, base: float = 100.0) -> list[dict[str, str]]:
    """One row per word: its position k and every entry written as formula = value.

    >>> formula_table(d=4, base=100)[1]["P(k,0)"]
    'sin(1/1) = 0.84'
    >>> formula_table(d=4, base=100)[3]["P(k,3)"]
    'cos(3/10) = 0.96'
    """
    table = sinusoid_table(len(words), d, base)
    rows = []
    for k, word in enumerate(words):
        row = {"word": str(word), "k": str(k)}
        for j in range(d):
            i = j // 2
            denom = float(base) ** (2 * i / d)
            fn = "sin" if j % 2 == 0 else "cos"
            row[f"P(k,{j})"] = f"{fn}({k}/{denom:.4g}) = {table[k, j]:.2f}"
        rows.append(row)
    return rows


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows: (n, d) -> (n, n), 1.0 on the diagonal."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = v / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def similarity_by_distance(vectors: np.ndarray) -> np.ndarray:
    """Mean cosine similarity of position vectors k and k + delta, for delta = 0 .. n-1.

    For a sine table this depends only on delta (every pair at that distance agrees); for a
    learned table it is an average. [[1, 0], [0, 1], [-1, 0]] -> [1.0, 0.0, -1.0].
    """
    sim = cosine_matrix(vectors)
    n = sim.shape[0]
    return np.array([np.diagonal(sim, offset=delta).mean() for delta in range(n)])


def rope_rotate(vector: np.ndarray, position: int, base: float = 10000.0) -> np.ndarray:
    """One head vector (d_head,) rotated as RoPE rotates it at ``position`` (engine code)."""
    v = torch.as_tensor(np.asarray(vector, dtype=np.float32))
    cos, sin = rope_angles(torch.tensor([position]), v.shape[-1], base)  # (1, dh/2) each
    return apply_rope(v[None, None, None, :], cos, sin)[0, 0, 0].numpy().astype(np.float64)


def rope_scores(q: np.ndarray, k: np.ndarray, distance: int, query_positions,
                base: float = 10000.0) -> list[dict]:
    """q at position m and k at position m - distance, both rotated; their dot product per m.

    The rows all carry the same score: after RoPE, q·k depends only on how far apart the two
    tokens are, not on where they sit in the sentence.
    """
    rows = []
    for m in query_positions:
        m = int(m)
        qr, kr = rope_rotate(q, m, base), rope_rotate(k, m - distance, base)
        rows.append({"query position": m, "key position": m - distance,
                     "distance": distance, "q·k after rotation": float(qr @ kr)})
    return rows


def rope_pair_angles(position: int, d_head: int, base: float = 10000.0) -> np.ndarray:
    """The angle (radians) each pair of dimensions is turned by at ``position``: (d_head/2,)."""
    cos, sin = rope_angles(torch.tensor([position]), d_head, base)
    return np.arctan2(sin[0].numpy(), cos[0].numpy()).astype(np.float64)


def alibi(n_heads: int, n_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """ALiBi slopes (H,) and biases (H, n, n) = -slope_h * |i - j| (engine code).

    >>> slopes, bias = alibi(2, 3)
    >>> slopes.tolist(), bias[0, 0].tolist()
    ([0.0625, 0.00390625], [-0.0, -0.0625, -0.125])
    """
    pos = torch.arange(n_positions)
    slopes = alibi_slopes(n_heads).numpy().astype(np.float64)
    return slopes, alibi_bias(n_heads, pos, pos).numpy().astype(np.float64)


# ----- without positions, attention is order-blind ------------------------------------------

def positionless_model(cfg: ModelConfig) -> Transformer:
    """A fresh, seeded model with ``cfg``'s shape but no position information at all.

    Mixture-of-experts capacity is lifted too: with a capacity, the tokens that come first claim
    an expert's places, which would smuggle order back in through the router.
    """
    bare = cfg.replace(name=f"{cfg.name}-no-positions", positional="none",
                       moe_capacity_factor=None, dropout=0.0)
    return Transformer(bare).eval()


def permutation(n: int, kind: str = "reverse", seed: int = 0) -> np.ndarray:
    """A reordering of 0..n-1: "reverse", "rotate" (first token to the end) or "shuffle".

    >>> permutation(4, "reverse").tolist(), permutation(4, "rotate").tolist()
    ([3, 2, 1, 0], [1, 2, 3, 0])
    """
    if kind == "reverse":
        return np.arange(n)[::-1].copy()
    if kind == "rotate":
        return np.roll(np.arange(n), -1)
    if kind == "shuffle":
        return np.random.default_rng(seed).permutation(n)
    raise ValueError(f"unknown permutation {kind!r}")


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
