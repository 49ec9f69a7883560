"""One head of attention for all tokens at once, as matrices (lesson 5's matrix form).

    X                       the (n, d) input of the layer's projections
    Q = X W^Q + b^Q         and K, V alike, with one head's (d, d_k) slices of the weights
    S = Q Kᵀ                (n, n) scores;   A = softmax(S/√d_k + M), the trace's pattern
    Z = A V                 (n, d_k) the head's output

Q, K and V are recomputed from the exported weights (``Bundle.weights()``) and checked against
the trace; ``matrix_shapes`` gives the shapes a learner should check. The same steps for one
query token at a time are :mod:`tfviz.analysis.attention`.

>>> matrix_shapes(3, 8, 4)[5]
('Z = A V', 'n×n · n×d_k = n×d_k', '3×3 · 3×4 = 3×4')
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.attention import kv_head

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace


def attention_input(trace: Trace, layer: int, weights: Mapping[str, np.ndarray] | None = None
                    ) -> np.ndarray:
    """X, the (n, d) matrix the layer's W^Q, W^K, W^V multiply.

    post-LN blocks feed the block input (resid_pre) straight to attention; pre-LN blocks feed
    LN1(resid_pre) = normalized · γ + β, which needs LN1's γ and β from ``Bundle.weights()``
    (an RMSNorm has no β: normalized · γ).
    """
    if trace.config.norm == "post":
        return trace["resid_pre", layer].astype(np.float64)
    if weights is None:
        raise ValueError("a pre-LN model's attention input needs the weights (for LN1's γ and β)")
    gamma = weights["ln1.w"][layer].astype(np.float64)  # (d,)
    out = trace["ln1.normalized", layer].astype(np.float64) * gamma  # (n, d)
    return out + weights["ln1.b"][layer] if "ln1.b" in weights else out


@dataclass(frozen=True)
class HeadProjections:
    """One head's slices of W^Q, W^K, W^V, stored as d × d_k so that Q = X W^Q + b^Q."""

    W_q: np.ndarray  # (d, d_k)
    W_k: np.ndarray
    W_v: np.ndarray
    b_q: np.ndarray  # (d_k,) zeros if the model has no biases
    b_k: np.ndarray
    b_v: np.ndarray


def head_projections(weights: Mapping[str, np.ndarray], layer: int, head: int) -> HeadProjections:
    """One head's projection weights, read from ``Bundle.weights()`` (float64 copies)."""
    n_heads, n_kv = weights["W_Q"].shape[1], weights["W_K"].shape[1]
    kvh = kv_head(n_heads, n_kv, head)

    def cut(name: str, h: int) -> tuple[np.ndarray, np.ndarray]:
        w = weights[f"W_{name}"][layer, h].astype(np.float64)  # (d, d_k)
        b = weights.get(f"b_{name}")
        return w, (b[layer, h].astype(np.float64) if b is not None else np.zeros(w.shape[1]))

    (wq, bq), (wk, bk), (wv, bv) = cut("Q", head), cut("K", kvh), cut("V", kvh)
    return HeadProjections(wq, wk, wv, bq, bk, bv)


@dataclass(frozen=True)
class MatrixForm:
    """The whole head in matrix form, with the shapes a learner should check."""

    X: np.ndarray  # (n, d)
    Q: np.ndarray  # (n, d_k) = X W^Q + b
    K: np.ndarray  # (n, d_k)
    V: np.ndarray  # (n, d_k)
    S: np.ndarray  # (n, n) = Q Kᵀ
    A: np.ndarray  # (n, n) attention pattern from the trace
    Z: np.ndarray  # (n, d_k) = A V
    max_error: float  # largest |X W + b − trace value| over Q, K, V, and |A V − z|

    def shapes(self, d_model: int, d_k: int) -> list[tuple[str, str, str]]:
        """(formula, symbolic shapes, numeric shapes) rows for a table."""
        return matrix_shapes(self.X.shape[0], d_model, d_k)


def matrix_shapes(n: int, d_model: int, d_k: int) -> list[tuple[str, str, str]]:
    """(formula, symbolic shapes, numeric shapes) of the matrix form, for n tokens.

    >>> matrix_shapes(3, 8, 4)[3]
    ('S = Q Kᵀ', 'n×d_k · d_k×n = n×n', '3×4 · 4×3 = 3×3')
    """
    return [
        ("Q = X W^Q", "n×d · d×d_k = n×d_k", f"{n}×{d_model} · {d_model}×{d_k} = {n}×{d_k}"),
        ("K = X W^K", "n×d · d×d_k = n×d_k", f"{n}×{d_model} · {d_model}×{d_k} = {n}×{d_k}"),
        ("V = X W^V", "n×d · d×d_k = n×d_k", f"{n}×{d_model} · {d_model}×{d_k} = {n}×{d_k}"),
        ("S = Q Kᵀ", "n×d_k · d_k×n = n×n", f"{n}×{d_k} · {d_k}×{n} = {n}×{n}"),
        ("A = softmax(S/√d_k + M)", "n×n", f"{n}×{n}"),
        ("Z = A V", "n×n · n×d_k = n×d_k", f"{n}×{n} · {n}×{d_k} = {n}×{d_k}"),
    ]


def matrix_form(trace: Trace, weights: Mapping[str, np.ndarray], layer: int, head: int) -> MatrixForm:
    """Q, K, V recomputed from X and the weights (``Bundle.weights()``), checked against the
    trace (RoPE excluded); Z = A V, checked against the trace's z less the Σ α a^V of Shaw's
    relative positions where the model has them."""
    X = attention_input(trace, layer, weights)
    w = head_projections(weights, layer, head)
    Q = X @ w.W_q + w.b_q  # (n, d) @ (d, d_k) -> (n, d_k)
    K = X @ w.W_k + w.b_k
    V = X @ w.W_v + w.b_v
    kvh = kv_head(trace.config.n_heads, trace.config.kv_heads, head)
    A = trace["pattern", layer][head].astype(np.float64)  # (n, n)
    Z = A @ V  # (n, n) @ (n, d_k) -> (n, d_k)
    errors = [np.abs(Q - trace["q", layer][:, head]).max(),
              np.abs(K - trace["k", layer][:, kvh]).max(),
              np.abs(V - trace["v", layer][:, kvh]).max()]
    if not trace.options.ablate_heads:  # Shaw's z also holds Σ α a^V (hook_rel_z)
        shaw = trace["rel_z", layer][:, head] if ("rel_z", layer) in trace else 0.0
        errors.append(np.abs(Z + shaw - trace["z", layer][:, head]).max())
    return MatrixForm(X=X, Q=Q, K=K, V=V, S=Q @ K.T, A=A, Z=Z, max_error=float(max(errors)))


def matrix_forms(trace: Trace, weights: Mapping[str, np.ndarray],
                 layers: Sequence[int] | None = None) -> tuple[dict[str, np.ndarray], float]:
    """``matrix_form`` of every layer and head: Q, K, V, Z (L, H, n, d_k) and A (L, H, n, n),
    with the largest check error over all of them; ``layers``: of those layers only, in that
    order (L = len(layers))."""
    cfg = trace.config
    forms = [[matrix_form(trace, weights, layer, h) for h in range(cfg.n_heads)]
             for layer in (range(cfg.n_layers) if layers is None else layers)]
    stacked = {name: np.array([[getattr(f, name) for f in row] for row in forms])  # (L, H, ...)
               for name in "QKVZA"}
    return stacked, max(f.max_error for row in forms for f in row)
