"""Position information: sinusoidal tables, rotary embeddings (RoPE), ALiBi slopes, and the
distance indices of Shaw et al.'s relative positions and of T5's bucketed bias.

RoPE turns each pair of a head's query and key dimensions by position x theta_i, with
theta_i = base^(-2i/d); which dimensions form a pair is ``ModelConfig.rope_pairs``.

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

import math

import torch
from torch import Tensor

from tfviz.config import RopePairs, RopeScaling


def sinusoidal_table(n_positions: int, d: int, base: float = 10000.0) -> Tensor:
    """(n_positions, d) table; column 2i holds sin, column 2i+1 holds cos of the same angle."""
    k = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = k / base ** (two_i / d)  # (n, ceil(d/2))
    table = torch.zeros(n_positions, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d // 2])
    return table.float()


def rope_inv_freq(dim: int, base: float = 10000.0, scaling: RopeScaling | None = None, *,
                  transformers_order: bool = False) -> Tensor:
    """The angle each pair of dimensions turns per position: theta_i = base^(-2i/dim), (dim/2,),
    stretched by ``scaling`` (a :class:`~tfviz.config.RopeScaling`) when given.

    linear: theta_i / factor. llama3: by wavelength 2 pi / theta_i, short ones kept, long ones
    divided by factor, those between blended (``tfviz.reference.rope_inv_freq`` has the formula).

    float32 gives the same formula two sets of last bits: base^(-2i/dim), as our own models were
    trained with, and transformers' 1 / base^(2i/dim), used with ``transformers_order`` (a
    checkpoint's RoPE, ``rope_pairs="halves"``) and for every scaled RoPE, so that a Llama's or
    a Qwen's frequencies are its own to the bit. They differ by an ulp in a few entries.

    >>> [round(float(t), 4) for t in rope_inv_freq(4, base=100.0)]
    [1.0, 0.1]
    """
    if scaling is None and not transformers_order:
        return base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (dim/2,)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))  # (dim/2,)
    if scaling is None:
        return inv_freq
    if scaling.kind == "linear":
        return inv_freq / scaling.factor
    # llama3: keep wavelengths below old/high, divide those above old/low, blend in between
    old = scaling.original_max_position_embeddings
    low_wavelen, high_wavelen = old / scaling.low_freq_factor, old / scaling.high_freq_factor
    wavelen = 2 * math.pi / inv_freq  # (dim/2,)
    scaled = torch.where(wavelen > low_wavelen, inv_freq / scaling.factor, inv_freq)
    smooth = (old / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
    smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled
    between = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(between, smoothed, scaled)  # (dim/2,)


def rope_angles(positions: Tensor, d_head: int, base: float = 10000.0,
                scaling: RopeScaling | None = None, *,
                transformers_order: bool = False) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotation angle for each (position, pair of dimensions): (T, d_head/2).

    ``d_head`` is the number of dimensions that turn (a partial rotary model's rotary_dim);
    ``transformers_order``: see :func:`rope_inv_freq`.
    """
    inv_freq = rope_inv_freq(d_head, base, scaling, transformers_order=transformers_order)  # (dh/2,)
    angle = positions.float()[:, None] * inv_freq[None, :]  # (T, dh/2)
    return angle.cos(), angle.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, pairs: RopePairs = "adjacent") -> Tensor:
    """Turn each pair of dimensions of every head by its position's angle.

    x: (B, T, H, dh); cos, sin: (T, r/2) for the first r <= dh dimensions (the rest pass as
    they are: partial rotary). ``pairs`` "adjacent" turns (x[2i], x[2i+1]) by angle i;
    "halves" turns (x[i], x[i + r/2]), Llama's rotate_half. Dot products of rotated q and k then
    depend only on the distance between the two positions.
    """
    r = 2 * cos.shape[-1]
    if r < x.shape[-1]:  # partial rotary: only the first r dimensions turn
        return torch.cat((apply_rope(x[..., :r], cos, sin, pairs), x[..., r:]), dim=-1)  # (B, T, H, dh)
    c, s = cos[None, :, None, :], sin[None, :, None, :]  # (1, T, 1, r/2)
    if pairs == "halves":
        first, second = x[..., : r // 2], x[..., r // 2:]  # (B, T, H, r/2) each
        return torch.cat((first * c - second * s, second * c + first * s), dim=-1)  # (B, T, H, r)
    even, odd = x[..., 0::2], x[..., 1::2]  # (B, T, H, dh/2) each
    rotated = torch.stack((even * c - odd * s, even * s + odd * c), dim=-1)  # (B, T, H, dh/2, 2)
    return rotated.flatten(-2)  # (B, T, H, dh)


def alibi_slopes(n_heads: int) -> Tensor:
    """Head h gets slope 2^(-8(h+1)/H): a geometric series from gentle to steep."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)])


def alibi_bias(n_heads: int, q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """(H, Tq, Tk) penalty -slope_h * |i - j| added to the scaled scores."""
    distance = (q_pos[:, None] - k_pos[None, :]).abs().float()  # (Tq, Tk)
    return -alibi_slopes(n_heads)[:, None, None] * distance[None]




def relative_distance(q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """(Tq, Tk) long: j - i for query position i and key position j (negative: the key is
    earlier). Shaw et al. and T5 both read the distance this way round.

    >>> relative_distance(torch.tensor([2]), torch.arange(4)).tolist()
    [[-2, -1, 0, 1]]
    """
    return k_pos[None, :].long() - q_pos[:, None].long()  # (Tq, Tk)


def shaw_index(q_pos: Tensor, k_pos: Tensor, clip: int) -> Tensor:
    """(Tq, Tk) row of Shaw et al.'s tables for each pair: clip(j - i, -k, k) + k, in 0 .. 2k.

    Row k is distance 0; every key more than k places away shares the edge row.

    >>> shaw_index(torch.tensor([5]), torch.arange(7), clip=2).tolist()   # j - i = -5 .. 1
    [[0, 0, 0, 0, 1, 2, 3]]
    """
    return relative_distance(q_pos, k_pos).clamp(-clip, clip) + clip  # (Tq, Tk)


def t5_bucket(relative_position: Tensor, bidirectional: bool, n_buckets: int = 32,
              max_distance: int = 128) -> Tensor:
    """T5's bucket of each distance j - i (same shape, long), in 0 .. n_buckets - 1.

    bidirectional (an encoder): half the buckets for keys after the query, half for the rest.
    causal (a decoder): every bucket for keys at or before the query; later keys (masked
    anyway) fall into bucket 0. Of one direction's buckets, the first half are the distances
    0, 1, 2, ... one each; the rest cover log-spaced ranges up to ``max_distance``, and every
    distance past it shares the last bucket. Written with the operations, in the order and the
    float32 of transformers' ``T5Attention._relative_position_bucket`` (the tests compare the
    two), so a trained T5's buckets would be its own.

    >>> t5_bucket(-torch.tensor([0, 1, 15, 16, 20, 40, 127, 128, 500]), False).tolist()
    [0, 1, 15, 16, 17, 23, 31, 31, 31]
    """
    buckets = torch.zeros_like(relative_position)
    n = n_buckets
    if bidirectional:
        n //= 2
        buckets = buckets + (relative_position > 0).long() * n  # keys after the query: upper half
        distance = relative_position.abs()
    else:
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))  # earlier keys
    exact = n // 2
    is_small = distance < exact
    if_large = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact)
                        * (n - exact)).long()  # log-spaced; log 0 = -inf only where is_small
    if_large = torch.min(if_large, torch.full_like(if_large, n - 1))
    return buckets + torch.where(is_small, distance, if_large)
