"""Scaled dot-product attention by hand, keeping every intermediate matrix.

Plain numpy, no framework: a notebook or a page can show each step as it is.

    q = X W_q,  k = X W_k,  v = X W_v          (n × d_k, n × d_k, n × d_v)
    scores = q kᵀ                              (n × n)
    scaled = scores / √d_k                     (or unchanged when scale=False)
    masked = scaled with −∞ above the diagonal (decoder; unchanged for an encoder)
    weights = softmax of each row              (each row sums to 1)
    output = weights v                         (n × d_v)

"flying arrows": X = [[0,1,1,1,1,0], [1,1,0,-1,-1,1]], and the query, key and value
take dimensions 1–2, 3–4 and 5–6 of each word:

>>> X = [[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]]
>>> r = solve_attention(X, select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5]))
>>> r.scores[0].tolist()
[1.0, -1.0]
>>> r.weights[0].round(4).tolist()
[0.8044, 0.1956]
>>> r.output[0].round(4).tolist()
[0.6089, 0.1956]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz import reference
from tfviz.reference import causal_mask


def select(d_in: int, dims) -> np.ndarray:
    """The d_in × len(dims) matrix that copies the chosen input dimensions (0-based).

    >>> select(4, [0, 2]).tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """
    out = np.zeros((d_in, len(dims)))
    for col, dim in enumerate(dims):
        out[dim, col] = 1.0
    return out


@dataclass(frozen=True)
class AttentionSteps(reference.AttentionSteps):
    """The reference's steps (scores, scaled, masked, weights, output) plus the projections
    q, k, v that fed them and the switches used."""

    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_v)
    causal: bool
    scale: bool

    @property
    def d_k(self) -> int:
        return self.q.shape[1]


def solve_attention(X, W_q, W_k, W_v, causal: bool = False, scale: bool = True) -> AttentionSteps:
    """One head of self-attention on X (n × d_in); each W is d_in × d_k (W_v: d_in × d_v).

    The projections are done here; the rest is the reference's :func:`~tfviz.reference.attention`.
    """
    X = np.atleast_2d(np.asarray(X, dtype=float))  # (n, d_in)
    q = X @ np.asarray(W_q, dtype=float)  # (n, d_k)
    k = X @ np.asarray(W_k, dtype=float)  # (n, d_k)
    v = X @ np.asarray(W_v, dtype=float)  # (n, d_v)
    s = reference.attention(q, k, v, mask=causal_mask(len(X)) if causal else None, scale=scale)
    return AttentionSteps(s.scores, s.scaled, s.masked, s.weights, s.output, q, k, v, causal, scale)


@dataclass(frozen=True)
class MultiHeadSteps:
    """``heads[i]`` is head i's :class:`AttentionSteps`; ``concat`` joins their outputs."""

    heads: tuple[AttentionSteps, ...]
    concat: np.ndarray  # (n, h * d_v)
    output: np.ndarray  # (n, d_out): concat @ W_o, or concat itself without W_o


def solve_multihead(X, heads, W_o=None, causal: bool = False, scale: bool = True) -> MultiHeadSteps:
    """Several heads side by side; ``heads`` is a list of (W_q, W_k, W_v).

    >>> X = np.eye(2)
    >>> r = solve_multihead(X, [(np.eye(2), np.eye(2), np.eye(2))] * 2)
    >>> r.concat.shape
    (2, 4)
    """
    results = tuple(solve_attention(X, wq, wk, wv, causal, scale) for wq, wk, wv in heads)
    if not results:
        raise ValueError("need at least one head")
    concat = np.concatenate([r.output for r in results], axis=1)  # (n, h * d_v), heads in order
    output = concat @ np.asarray(W_o, dtype=float) if W_o is not None else concat.copy()
    return MultiHeadSteps(results, concat, output)
