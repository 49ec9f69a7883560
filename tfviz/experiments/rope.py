"""RoPE's promise, tested with the engine's own rotation: q·k depends only on the distance.

Rotary embeddings turn each pair (x[2i], x[2i+1]) of a query or key by θ_i · position, with
θ_i = base^(−2i/d_head). Turning q by mθ and k by nθ changes their dot product only through
n − m. These functions rotate real vectors with ``tfviz.model.positional`` (the code the model
runs, float32), so the lesson's flat lines are the model's own numbers.
"""
from __future__ import annotations

import numpy as np
import torch

from tfviz.model.positional import apply_rope, rope_angles


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
