"""Which key positions each query position may attend to.

``sparse_pattern`` draws a pattern as an encoder reads it: a boolean (n, n) array, True where
attention is allowed in both directions, as the papers draw them. A decoder applies the causal
triangle on top (:func:`pattern_mask` with ``causal=True``), so one pattern serves both. (The
numpy causal mask is :func:`tfviz.reference.causal_mask`; the model builds its own in torch, in
transformer.py.) ``reach_by_layer`` and ``reach_matrix`` compose a pattern
over layers: which positions a token has read after L layers, read either way.

>>> sparse_pattern("sliding", 5, window=1).astype(int)
array([[1, 1, 0, 0, 0],
       [1, 1, 1, 0, 0],
       [0, 1, 1, 1, 0],
       [0, 0, 1, 1, 1],
       [0, 0, 0, 1, 1]])
"""
from __future__ import annotations

import numpy as np

from tfviz.reference import causal_mask


def sparse_pattern(kind: str, n: int, *, window: int = 3, dilation: int = 2, n_global: int = 1,
                   n_random: int = 2, stride: int = 4, seed: int = 0) -> np.ndarray:
    """Allowed (query i, key j) pairs for one of the long-sequence attention patterns.

    full:    every pair.
    sliding: |i - j| <= window. Our window is one-sided: 2·window + 1 keys both ways, where
             Longformer's w and BigBird's w count the whole window (w/2 a side).
    dilated: |i - j| <= window * dilation and (i - j) divisible by dilation.
    global:  sliding, plus the first n_global tokens see and are seen by everyone (Longformer;
             BigBird-ITC, where existing tokens are made global).
    bigbird: global, plus n_random keys per query drawn with a fixed seed.
    strided: |i - j| <= stride, or (i - j) divisible by stride: the union of Sparse
             Transformer's two halves of heads (:func:`strided_halves`), all one layer reads
             (|i - j| = stride is divisible by it, so this is also |i - j| < stride or divisible).
    block:   ⌊i / N⌋ = ⌊j / N⌋ with N = stride: each query reads the block of N positions it
             belongs to, and nothing else (the notes' block-local pattern; the local half of
             Child et al.'s "fixed" pattern, whose block length is their stride l).

    >>> sparse_pattern("block", 5, stride=2).astype(int)
    array([[1, 1, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [0, 0, 1, 1, 0],
           [0, 0, 1, 1, 0],
           [0, 0, 0, 0, 1]])
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
        return (dist <= stride) | (dist % stride == 0)
    if kind == "block":
        return i // stride == j // stride
    raise ValueError(f"unknown attention pattern {kind!r}")


def strided_halves(n: int, stride: int, *, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Sparse Transformer's two kinds of head as (n, n) masks (read as a decoder reads them
    with ``causal``): half the heads read a local window, the other half every stride-th
    position ((i - j) divisible by stride). The local half is Child et al.'s (2019)
    A(1)_i = {t, ..., i} with t = max(0, i - l), l the stride: the previous l positions and the
    query itself, |i - j| <= l. A layer has both halves, so together its heads read
    ``sparse_pattern("strided", …)``.

    >>> local, step = strided_halves(5, 2)
    >>> local[4].astype(int), step[4].astype(int)  # what the last token reads in each half
    (array([0, 0, 1, 1, 1]), array([1, 0, 1, 0, 1]))
    """
    dist = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])  # (n, n)
    keep = causal_mask(n) if causal else np.ones((n, n), dtype=bool)  # (n, n)
    return (dist <= stride) & keep, (dist % stride == 0) & keep


def local_halves_differ(n: int, stride: int, *, causal: bool = False) -> int:
    """In how many (query, key) pairs Child et al.'s local window (:func:`strided_halves`)
    and the notes' local block (``pattern_mask("block", …)``) disagree.

    >>> local_halves_differ(4, 2)  # the window holds 14 pairs (all but 0-3 and 3-0), the blocks 8 of them
    6
    """
    local, _ = strided_halves(n, stride, causal=causal)
    return int((local != pattern_mask("block", n, causal=causal, stride=stride)).sum())


# Composing masks costs n² booleans per layer; past this the lesson's picture is unreadable anyway.
MAX_POSITIONS = 2048


def _check(n: int, n_layers: int, window: int = 0, dilation: int = 1, stride: int = 1,
           **_: int) -> None:
    if n_layers < 0 or window < 0 or dilation < 1 or stride < 1:
        raise ValueError(f"need n_layers >= 0, window >= 0, dilation >= 1 and stride >= 1, got "
                         f"n_layers={n_layers}, window={window}, dilation={dilation}, "
                         f"stride={stride}")
    if not 1 <= n <= MAX_POSITIONS:
        raise ValueError(f"composing masks needs a sequence of 1 to {MAX_POSITIONS} positions, "
                         f"got {n}")


def pattern_mask(kind: str, n: int, *, causal: bool, **pattern: int) -> np.ndarray:
    """(n, n) bool: the pattern as an encoder reads it (``causal=False``, both directions) or
    as a decoder reads it (``causal=True``, only keys j <= i).

    >>> pattern_mask("global", 4, causal=False, window=0).astype(int)  # position 0 is global
    array([[1, 1, 1, 1],
           [1, 1, 0, 0],
           [1, 0, 1, 0],
           [1, 0, 0, 1]])
    >>> pattern_mask("global", 4, causal=True, window=0).astype(int)  # it now reads only itself
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [1, 0, 1, 0],
           [1, 0, 0, 1]])
    """
    allowed = sparse_pattern(kind, n, **pattern)  # (n, n)
    return allowed & causal_mask(n) if causal else allowed


def causal_pattern(kind: str, n: int, **pattern: int) -> np.ndarray:
    """(n, n) bool: the pattern with the causal triangle applied, as a decoder uses it."""
    return pattern_mask(kind, n, causal=True, **pattern)


def _reach_rows(kind: str, n: int, n_layers: int, query: int, pattern: dict,
                causal: bool = True) -> list[np.ndarray]:
    """Row ``query`` of M¹, M², … (M the pattern), stopping once a power repeats itself."""
    _check(n, n_layers, **pattern)
    if not 0 <= query < n:
        raise ValueError(f"query {query} is not a position of a {n}-token sequence")
    allowed = pattern_mask(kind, n, causal=causal, **pattern)  # (n, n)
    weights = allowed.astype(np.float32)  # (n, n): float so one layer is one BLAS product
    row = np.zeros(len(allowed), dtype=bool)  # (n,)
    row[query] = True  # after 0 layers a token holds only itself
    rows = []
    for _ in range(n_layers):
        nxt = (row.astype(np.float32) @ weights) > 0  # (n,): j, if some reached k may read j
        rows.append(nxt)
        if np.array_equal(nxt, row):  # a fixed point: every later layer reaches the same
            break
        row = nxt
    return rows


def reach_by_layer(kind: str, n: int, n_layers: int, *, query: int | None = None,
                   causal: bool = True, **pattern: int) -> np.ndarray:
    """Which positions token ``query`` (default: the last) reaches after 1, 2, …, n_layers layers.

    One layer lets position i read the keys its mask M allows (with ``causal``, as a decoder
    reads the pattern: only j <= i; without, as an encoder: both ways). The next layer reads
    those positions, which have already read theirs, so after l layers a token holds every j
    joined to it by l allowed steps: row i of the boolean matrix power Mˡ. Every pattern lets a
    token see itself, so row l also holds all it reached sooner. ``pattern`` takes
    :func:`sparse_pattern`'s keywords (window, dilation, n_global, …).
    Returns a bool array of shape (n_layers, n).

    >>> reach_by_layer("sliding", 6, 2, window=2).astype(int)  # the last token: 2 back a layer
    array([[0, 0, 0, 1, 1, 1],
           [0, 1, 1, 1, 1, 1]])
    >>> reach_by_layer("global", 6, 2, window=0, causal=False).sum(1)  # via the global token 0
    array([2, 6])
    >>> reach_by_layer("global", 6, 2, window=0).sum(1)  # causal: token 0 has read only itself
    array([2, 2])
    """
    query = n - 1 if query is None else query
    rows = _reach_rows(kind, n, n_layers, query, pattern, causal)
    out = np.zeros((n_layers, n), dtype=bool)  # (L, n)
    if rows:
        out[:len(rows)] = np.stack(rows)  # (len(rows), n)
        out[len(rows):] = rows[-1]  # past a fixed point nothing changes
    return out


def reach_matrix(kind: str, n: int, n_layers: int, *, causal: bool = True,
                 **pattern: int) -> np.ndarray:
    """(n_layers, n, n) bool: entry [l-1, i, j] says whether query i has read position j,
    directly or through others, after l layers: the boolean powers M¹ … Mᴸ of the pattern
    (with ``causal``, as a decoder reads it). :func:`reach_by_layer` is one row of this.

    >>> reach_matrix("global", 4, 2, window=0, causal=False).sum((1, 2))  # 16: all pairs
    array([10, 16])
    """
    _check(n, n_layers, **pattern)
    allowed = pattern_mask(kind, n, causal=causal, **pattern)  # (n, n)
    weights = allowed.astype(np.float32)  # (n, n)
    out = np.zeros((n_layers, n, n), dtype=bool)  # (L, n, n)
    held = allowed
    for layer in range(n_layers):
        out[layer] = held
        if layer + 1 < n_layers:
            nxt = (held.astype(np.float32) @ weights) > 0  # (n, n): i read k, and k read j
            if np.array_equal(nxt, held):  # a fixed point: every later layer is the same
                out[layer + 1:] = held
                break
            held = nxt
    return out
