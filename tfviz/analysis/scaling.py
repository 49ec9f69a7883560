"""Why attention divides its scores by √d_k, as experiments you can rerun.

If every component of q and k is an independent number with mean 0 and variance 1, then
q · k = Σ_i q_i k_i is a sum of d_k terms that each have variance 1, so it has variance d_k
(its typical size grows like √d_k). Dividing by √d_k brings the variance back to 1.

>>> rows = dot_product_variance([16, 64], n_samples=20000, seed=0)
>>> [round(r.var_raw / r.d_k, 1) for r in rows]       # about 1 · d_k
[1.0, 1.0]
>>> [round(r.var_scaled, 1) for r in rows]            # about 1
[1.0, 1.0]

Large scores push softmax towards one-hot, and a one-hot softmax has (almost) zero gradient:
its Jacobian ∂p/∂s = diag(p) − p pᵀ is all zeros when p is one-hot.

>>> softmax_jacobian(np.array([1.0, 0.0])).tolist()
[[0.0, 0.0], [0.0, 0.0]]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tfviz.reference import softmax


@dataclass(frozen=True)
class VarianceRow:
    d_k: int
    var_raw: float  # empirical variance of q · k
    var_scaled: float  # empirical variance of q · k / √d_k
    theory_raw: float  # d_k
    theory_scaled: float  # 1


def dot_product_variance(d_ks, n_samples: int = 4000, seed: int = 0) -> list[VarianceRow]:
    """Sample n_samples pairs (q, k) of standard-normal vectors for each d_k; measure Var(q·k)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d_k in d_ks:
        q = rng.standard_normal((n_samples, d_k))  # (samples, d_k)
        k = rng.standard_normal((n_samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,) one dot product per pair
        rows.append(VarianceRow(int(d_k), float(dots.var()), float((dots / math.sqrt(d_k)).var()),
                                float(d_k), 1.0))
    return rows


def softmax_jacobian(p) -> np.ndarray:
    """∂p_i/∂s_j for p = softmax(s): diag(p) − p pᵀ, an (n, n) matrix."""
    p = np.asarray(p, dtype=np.float64)
    return np.diag(p) - np.outer(p, p)


def max_gradient(p) -> float:
    """Largest |∂p_i/∂s_j| of a softmax output p: 0.25 at most (two keys at 0.5), 0 if one-hot.

    >>> max_gradient([0.5, 0.5])
    0.25
    """
    return float(np.abs(softmax_jacobian(p)).max())


def entropy(p, axis: int = -1) -> np.ndarray:
    """Shannon entropy in bits; 0 · log 0 counts as 0. A uniform row over n keys gives log2 n.

    >>> float(entropy([0.25, 0.25, 0.25, 0.25]))
    2.0
    """
    p = np.asarray(p, dtype=np.float64)
    logs = np.log2(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=axis)


@dataclass(frozen=True)
class SaturationRow:
    d_k: int
    scaled: bool
    max_weight: float  # largest softmax weight (1 = one-hot)
    entropy: float  # bits
    max_grad: float  # largest |entry| of the softmax Jacobian


def saturation(d_ks, n_keys: int = 8, seed: int = 0, n_rows: int = 200) -> list[SaturationRow]:
    """For each d_k, score one random query against n_keys random keys, with and without ÷√d_k.

    Averaged over n_rows independent queries. Without the scale the weights drift towards
    one-hot as d_k grows, the entropy falls to 0 and the largest gradient entry vanishes;
    with the scale all three stay roughly where they were for small d_k.
    """
    rng = np.random.default_rng(seed)
    out = []
    for d_k in d_ks:
        q = rng.standard_normal((n_rows, 1, d_k))  # (rows, 1, d_k)
        k = rng.standard_normal((n_rows, n_keys, d_k))  # (rows, keys, d_k)
        raw = (q * k).sum(axis=-1)  # (rows, keys)
        for scaled in (False, True):
            p = softmax(raw / math.sqrt(d_k) if scaled else raw)  # (rows, keys)
            grads = [max_gradient(row) for row in p]
            out.append(SaturationRow(int(d_k), scaled, float(p.max(axis=1).mean()),
                                     float(entropy(p).mean()), float(np.mean(grads))))
    return out


def example_row(d_k: int, n_keys: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One query's raw scores against n_keys keys and the softmax without / with the scale."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)
    k = rng.standard_normal((n_keys, d_k))
    raw = k @ q  # (keys,)
    return raw, softmax(raw), softmax(raw / math.sqrt(d_k))


def row_entropy(pattern: np.ndarray) -> np.ndarray:
    """Entropy (bits) of every query row of an attention map (…, q, k): low = focused."""
    return entropy(pattern, axis=-1)


def entropy_by_head(on: np.ndarray, off: np.ndarray, scale: str = "÷√d_k") -> dict[str, list]:
    """Mean row entropy (bits) of every layer's heads with and without the scale, as table
    columns; ``on`` and ``off`` are the two runs' patterns (layers, heads, q, k). ``scale``
    names it in the columns (a Granite's is "× 0.125", its attention_multiplier).

    >>> flat, sharp = np.full((1, 1, 2, 2), 0.5), np.array([[[[1.0, 0.0], [0.5, 0.5]]]])
    >>> entropy_by_head(flat, sharp)
    {'layer': [0], 'head': [0], 'with ÷√d_k': [1.0], 'without ÷√d_k': [0.5], 'change': [-0.5]}
    """
    mean_on, mean_off = row_entropy(on).mean(-1), row_entropy(off).mean(-1)  # (layers, heads)
    index = list(np.ndindex(*mean_on.shape))
    return {"layer": [lyr for lyr, _ in index], "head": [h for _, h in index],
            f"with {scale}": [float(mean_on[i]) for i in index],
            f"without {scale}": [float(mean_off[i]) for i in index],
            "change": [float(mean_off[i] - mean_on[i]) for i in index]}
