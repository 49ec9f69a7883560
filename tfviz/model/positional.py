"""Position information: sinusoidal tables, rotary embeddings (RoPE) and ALiBi slopes.

Sinusoidal, with base n and model width d:
    PE(k, 2i)   = sin(k / n^(2i/d))
    PE(k, 2i+1) = cos(k / n^(2i/d))

>>> t = sinusoidal_table(4, 4, base=100)     # "I am a Robot"
>>> [round(float(v), 2) for v in t[1]]
[0.84, 0.54, 0.1, 1.0]

(cos 0.1 = 0.995004 rounds up to 1.0 on any CPU: float32's error, ~1e-7, is 40 times smaller
than its distance to 0.995.)
"""
from __future__ import annotations

import torch
from torch import Tensor


def sinusoidal_table(n_positions: int, d: int, base: float = 10000.0) -> Tensor:
    """(n_positions, d) table; column 2i holds sin, column 2i+1 holds cos of the same angle."""
    k = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = k / base ** (two_i / d)  # (n, ceil(d/2))
    table = torch.zeros(n_positions, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d // 2])
    return table.float()


def rope_angles(positions: Tensor, d_head: int, base: float = 10000.0) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotation angle for each (position, pair of dimensions): (T, d_head/2)."""
    inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)  # (dh/2,)
    angle = positions.float()[:, None] * inv_freq[None, :]  # (T, dh/2)
    return angle.cos(), angle.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x[2i], x[2i+1]) of every head by its position's angle.

    x: (B, T, H, dh); cos, sin: (T, dh/2). Dot products of rotated q and k then depend only on
    the distance between the two positions.
    """
    even, odd = x[..., 0::2], x[..., 1::2]  # (B, T, H, dh/2) each
    c, s = cos[None, :, None, :], sin[None, :, None, :]  # (1, T, 1, dh/2)
    rotated = torch.stack((even * c - odd * s, even * s + odd * c), dim=-1)  # (B, T, H, dh/2, 2)
    return rotated.flatten(-2)  # (B, T, H, dh)


def alibi_slopes(n_heads: int) -> Tensor:
    """Head h gets slope 2^(-8(h+1)/H): a geometric series from gentle to steep."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


def alibi_bias(n_heads: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """(H, Tq, Tk) penalty -slope_h * |i - j| added to the scaled scores."""
    distance = (q_pos[:, None] - k_pos[None, :]).abs().float()  # (Tq, Tk)
    return -alibi_slopes(n_heads)[:, None, None] * distance[None]


