"""RoPE's promise, tested with the engine's own rotation: q·k depends only on the distance.

Rotary embeddings turn each pair (x[2i], x[2i+1]) of a query or key by θ_i · position, with
θ_i = base^(−2i/d_head). Turning q by mθ and k by nθ changes their dot product only through
n − m. These functions rotate real vectors with ``tfviz.model.positional`` (the code the model
runs, float32), so the lesson's flat lines are the model's own numbers.

On a model trained with RoPE (gpt-tiny-rope), :func:`rope_pair` reads a query and a key of the
learner's text before and after the turn, :func:`turn_table` measures each pair's turn, and
:func:`shift_gap` moves the whole text along and measures how much layer 0's scores change.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tfviz.model.positional import apply_rope, rope_angles
from tfviz.trace import run_with_trace


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


# ----- a trained RoPE model (gpt-tiny-rope) on the learner's text --------------------------------
@dataclass(frozen=True)
class RopePair:
    """One head's query (token ``query``) and key (token ``key``) as a RoPE model computed them.

    ``q``/``k`` are the vectors before the turn (``hook_q``/``hook_k``), ``q_turned``/``k_turned``
    after it (``hook_rot_q``/``hook_rot_k``: turned by query·θ and key·θ), and ``score`` is the
    model's own q·k for the pair (``hook_scores_raw``, before the 1/√d_k factor).
    """

    layer: int
    head: int
    query: int
    key: int
    q: np.ndarray  # (dh,)
    k: np.ndarray  # (dh,)
    q_turned: np.ndarray  # (dh,)
    k_turned: np.ndarray  # (dh,)
    score: float


def rope_pair(trace, layer: int, head: int, query: int, key: int) -> RopePair:
    """Read one (query token, key token) pair of a RoPE model's trace; the key comes from the
    K/V head that query head reads (itself unless the model shares K/V heads)."""
    cfg = trace.config
    if cfg.positional != "rope":
        raise ValueError(f"{cfg.name} does not use RoPE (positional={cfg.positional!r})")
    kv_head = head // (cfg.n_heads // cfg.kv_heads)
    q, k = trace["q", layer][query, head], trace["k", layer][key, kv_head]  # (dh,) each
    qt, kt = trace["rot_q", layer][query, head], trace["rot_k", layer][key, kv_head]
    score = trace["scores_raw", layer][head, query, key]
    return RopePair(layer, head, query, key, *(np.asarray(v, dtype=np.float64) for v in (q, k, qt, kt)),
                    float(score))


def turn_table(pair: RopePair, base: float = 10000.0) -> list[dict]:
    """One row per pair of dimensions i: its speed θ_i and how far q was turned, in radians.

    "turned by" is the angle from q's pair before the turn to after it, measured on the model's
    own vectors; it equals (query position · θ_i) wrapped into (−π, π]. A pair with both values
    near zero has no direction, so its angles are blank.
    """
    dh = len(pair.q)
    rows = []
    for i in range(dh // 2):
        theta = base ** (-2 * i / dh)
        before = np.arctan2(pair.q[2 * i + 1], pair.q[2 * i])
        after = np.arctan2(pair.q_turned[2 * i + 1], pair.q_turned[2 * i])
        expected = float(np.angle(np.exp(1j * pair.query * theta)))  # m·θ_i in (−π, π]
        turned = float(np.angle(np.exp(1j * (after - before))))
        rows.append({"pair i": i, "θ_i (radians per step)": round(theta, 5),
                     "q angle before": round(float(before), 3), "q angle after": round(float(after), 3),
                     "turned by": round(turned, 3), f"{pair.query}·θ_i (wrapped)": round(expected, 3)})
    return rows


def shift_gap(model, ids, shift: int, filler_id: int, layer: int = 0) -> float:
    """Largest change of layer ``layer``'s raw scores between the tokens of ``ids`` when
    ``shift`` copies of ``filler_id`` are put in front (every token moves ``shift`` places on).

    In a RoPE model layer 0's q and k carry no position (nothing was added to the inputs), so
    only the turn sees where a token is, and the turn keeps only the distance: the gap is
    float32 rounding. A model that adds positions to its inputs changes its scores.
    """
    ids = [int(i) for i in ids]
    name = f"blocks.{layer}.attn.hook_scores_raw"
    plain = run_with_trace(model, ids, names=[name])[name]  # (H, T, T)
    moved = run_with_trace(model, [filler_id] * shift + ids, names=[name])[name][:, shift:, shift:]
    return float(np.abs(moved - plain).max())
