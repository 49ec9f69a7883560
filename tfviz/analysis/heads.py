"""Multi-head attention: splitting into heads, joining them again, and what each head does.

Splitting is only a reshape. Q is n × d; cut each row into h pieces of d/h and make the head
the leading axis, so each head is an ordinary attention over n tokens with d/h numbers each:

    n × d  →  n × h × (d/h)  →  h × n × (d/h)

>>> Q = np.arange(12.0).reshape(3, 4)              # n = 3 tokens, d = 4
>>> split_heads(Q, 2)[1].shape                      # h = 2 heads of size 2
(2, 3, 2)
>>> split_heads(Q, 2)[1][1].tolist()                # head 1 sees columns 2..3
[[2.0, 3.0], [6.0, 7.0], [10.0, 11.0]]

Joining: concatenate the heads' outputs (n × h·d_head) and multiply by W^O (h·d_head × d).
Because concatenation followed by a matrix product is a sum of blocks, the output is
Σ_h z_h W^O_h: every head adds its own contribution to each token's output.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.scaling import entropy

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace


def split_heads(X: np.ndarray, n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) -> ((n, h, d/h), (h, n, d/h)): the two steps of the reshape."""
    n, d = X.shape
    per_head = X.reshape(n, n_heads, d // n_heads)  # (n, h, d/h)
    return per_head, per_head.transpose(1, 0, 2)  # (h, n, d/h)


def output_weights(weights: Mapping[str, np.ndarray], layer: int) -> tuple[np.ndarray, np.ndarray]:
    """W^O as (h·d_head, d) so that out = concat(z) W^O + b, and its bias (zeros if none).

    ``weights`` is ``Bundle.weights()``, whose W_O holds one (d_head, d) block per head.
    """
    h, dh, d = weights["W_O"].shape[1:]
    weight = weights["W_O"][layer].reshape(h * dh, d).astype(np.float64)  # (h·d_head, d)
    bias = weights["b_O"][layer].astype(np.float64) if "b_O" in weights else np.zeros(d)
    return weight, bias


def head_contributions(z_row: np.ndarray, W_O: np.ndarray) -> np.ndarray:
    """One token's per-head share of the attention output: (h, d_head), (h·d_head, d) -> (h, d).

    Row h is z_h · W^O[h·d_head:(h+1)·d_head]; the rows plus the bias add up to the output.
    """
    h, dh = z_row.shape
    blocks = W_O.reshape(h, dh, -1)  # (h, d_head, d): the rows of W^O that head h meets
    return np.einsum("hk,hkd->hd", z_row.astype(np.float64), blocks)  # (h, d)


def contribution_check(contrib: np.ndarray, bias: np.ndarray, attn_out: np.ndarray) -> float:
    """Largest |Σ_h contrib_h + b − attn_out|: how well the per-head shares rebuild the output."""
    return float(np.abs(contrib.sum(axis=0) + bias - attn_out).max())


def share_lengths(trace: Trace, weights: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """‖z_h W^O_h‖ for every layer, token and head, (layers, tokens, heads), and the largest
    gap between the shares plus b^O and the model's own attention output anywhere: the data
    of multi-head's instant chart, which switches layer and token in the browser.

    A Granite's hook_attn_out holds what is added to the stream, the attention output times its
    residual_multiplier m; it is divided by m here, so the shares are compared with the output
    of W^O itself."""
    n_layers = weights["W_O"].shape[0]
    m = trace.config.residual_multiplier
    lengths, gap = [], 0.0
    for layer in range(n_layers):
        W_O, b_O = output_weights(weights, layer)
        z = trace["z", layer]  # (n, h, d_head)
        out = trace["attn_out", layer].astype(np.float64) / m  # (n, d): W^O's output, before m
        per_token = [head_contributions(z[i], W_O) for i in range(z.shape[0])]  # each (h, d)
        lengths.append([np.linalg.norm(c, axis=1) for c in per_token])
        gap = max([gap] + [contribution_check(c, b_O, out[i]) for i, c in enumerate(per_token)])
    return np.asarray(lengths), gap


def query_matrix(trace: Trace, layer: int) -> np.ndarray:
    """Q of one layer as a single (n, h·d_head) matrix, the heads' columns side by side."""
    q = trace["q", layer]  # (n, h, d_head)
    return q.reshape(q.shape[0], -1)  # (n, h·d_head)


def key_matrix(trace: Trace, layer: int) -> np.ndarray:
    """K of one layer as a single (n, kv_heads·d_head) matrix: under grouped-query attention it
    has fewer heads' columns than Q (V has the same shape as K)."""
    k = trace["k", layer]  # (n, kv_heads, d_head)
    return k.reshape(k.shape[0], -1)  # (n, kv_heads·d_head)


@dataclass(frozen=True)
class HeadStats:
    head: int
    previous: float  # mean weight on the token just before the query
    same: float  # mean weight on the query token itself
    first: float  # mean weight on the first token
    entropy: float  # mean entropy of a row, as a fraction of the most it could be (0..1)
    label: str
    favourite: int = 0  # the key (from the first half of the text) that gets the most weight
    favourite_share: float = 0.0  # its mean weight over the rows that come after it


ROLE_THRESHOLD = 0.5  # a head is "previous-token" when, on average, half its weight goes there
BROAD_THRESHOLD = 0.8  # rows at least 80% as spread out as a uniform row


def label_head(previous: float, same: float, first: float, spread: float,
               favourite_share: float = 0.0) -> str:
    """A short name for a head's habit, from its mean statistics.

    >>> label_head(0.7, 0.1, 0.1, 0.3)
    'previous-token head'
    >>> label_head(0.1, 0.1, 0.1, 0.95)
    'broad head'
    >>> label_head(0.1, 0.1, 0.1, 0.3, favourite_share=0.6)
    'one-token head'
    """
    roles = [(previous, "previous-token head"), (same, "same-token head"),
             (first, "first-token head"), (favourite_share, "one-token head")]
    value, name = max(roles, key=lambda r: r[0])
    if value >= ROLE_THRESHOLD:
        return name
    if spread >= BROAD_THRESHOLD:
        return "broad head"
    return "mixed head"


def head_stats(patterns: np.ndarray) -> list[HeadStats]:
    """Statistics of every head of one layer from its patterns (h, n, n).

    Row 0 is left out of the "previous" and "first" means (it has no previous token, and its
    first token is itself); with fewer than 2 tokens everything uses row 0 only. A row's
    entropy is divided by log2 of the number of keys it may see (rows seeing 1 key are skipped).
    The favourite key is the one, among the first half of the text, with the highest mean
    weight over the rows from it onwards (a head that keeps pointing at, say, the subject).
    """
    h, n, _ = patterns.shape
    rows = np.arange(1, n) if n > 1 else np.arange(n)
    stats = []
    for head in range(h):
        p = patterns[head].astype(np.float64)  # (n, n)
        previous = float(p[rows, rows - 1].mean()) if n > 1 else 0.0
        same = float(p[rows, rows].mean())
        first = float(p[rows, 0].mean())
        visible = (p > 0).sum(axis=1)  # keys each row actually spreads weight over
        usable = visible > 1
        spread = float((entropy(p[usable]) / np.log2(visible[usable])).mean()) if usable.any() else 0.0
        fav, share = 0, 0.0
        if n > 1:
            shares = [p[max(j, 1):, j].mean() for j in range((n + 1) // 2)]  # per early key
            fav = int(np.argmax(shares))
            share = float(shares[fav])
        stats.append(HeadStats(head, previous, same, first, spread,
                               label_head(previous, same, first, spread, share), fav, share))
    return stats
