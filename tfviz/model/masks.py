"""Which key positions each query position may attend to.

``sparse_pattern`` draws the non-causal part of a pattern as a boolean (n, n) array, True
where attention is allowed; causality is applied on top by the model, so one pattern serves
an encoder (bidirectional) and a decoder (causal) alike. (The numpy causal mask is
:func:`tfviz.reference.causal_mask`; the model builds its own in torch, in transformer.py.)

>>> sparse_pattern("sliding", 5, window=1).astype(int)
array([[1, 1, 0, 0, 0],
       [1, 1, 1, 0, 0],
       [0, 1, 1, 1, 0],
       [0, 0, 1, 1, 1],
       [0, 0, 0, 1, 1]])
"""
from __future__ import annotations

import numpy as np


def sparse_pattern(kind: str, n: int, *, window: int = 3, dilation: int = 2, n_global: int = 1,
                   n_random: int = 2, stride: int = 4, seed: int = 0) -> np.ndarray:
    """Allowed (query i, key j) pairs for one of the long-sequence attention patterns.

    full:    every pair.
    sliding: |i - j| <= window (receptive field grows by window per layer).
    dilated: |i - j| <= window * dilation and (i - j) divisible by dilation.
    global:  sliding, plus the first n_global tokens see and are seen by everyone (Longformer).
    bigbird: global, plus n_random keys per query drawn with a fixed seed.
    strided: |i - j| < stride, or (i - j) divisible by stride (Sparse Transformer).
    """
    i = np.arange(n)[:, None]  # (n, 1)
    j = np.arange(n)[None, :]  # (1, n)
    dist = np.abs(i - j)  # (n, n)
    if kind == "full":
        return np.ones((n, n), dtype=bool)
    if kind == "sliding":
        return dist <= window
    if kind == "dilated":
        return (dist <= window * dilation) & (dist % dilation == 0)
    if kind in ("global", "bigbird"):
        allowed = (dist <= window) | (i < n_global) | (j < n_global)
        if kind == "bigbird":
            rng = np.random.default_rng(seed)
            for row in range(n):
                allowed[row, rng.choice(n, size=min(n_random, n), replace=False)] = True
        return allowed
    if kind == "strided":
        return (dist < stride) | (dist % stride == 0)
    raise ValueError(f"unknown attention pattern {kind!r}")
