"""One query's trip through scaled dot-product attention, every step kept as data.

For the query token at position i of one head (d_k = size of that head):

    s_j = q_i · k_j                      raw score with every key j       (trace "scores_raw")
    s_j / √d_k                           scaled score             (trace "attn_scores_unmasked")
    −∞ where key j is hidden             masked score                      (trace "attn_scores")
    α_j = softmax(masked / T)_j          attention weight, Σ_j α_j = 1     (trace "pattern")
    z_i = Σ_j α_j v_j                    the head's output for token i     (trace "z")

The source's two-token example ("Thinking Machines"): scores 112 and 96, d_k = 64, so
√d_k = 8 and the scaled scores are 14 and 12; softmax turns them into 0.88 and 0.12:

>>> ex = worked_example()
>>> ex.scaled.tolist(), ex.weights.round(2).tolist()
([14.0, 12.0], [0.88, 0.12])

Every query of every head at once (``all_queries``) is what lesson 5's instant charts send; the
same head for all tokens as matrices (Q = X W^Q, S = Q Kᵀ, Z = A V) is
:mod:`tfviz.analysis.attention_matrix`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.reference import softmax  # noqa: F401 (lesson 5 shows it as att.softmax)

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace


def kv_head(n_heads: int, n_kv_heads: int, head: int) -> int:
    """The key/value head that query head ``head`` reads (grouped-query attention).

    >>> kv_head(8, 2, 5)   # 4 query heads share each key/value head
    1
    """
    return head // (n_heads // n_kv_heads)


@dataclass(frozen=True)
class QueryWalkthrough:
    """Every intermediate for one query token of one head (vectors are float64 numpy)."""

    tokens: tuple[str, ...]
    layer: int
    head: int
    kv_head: int
    query_pos: int
    d_k: int
    divisor: float  # √d_k when scaling is on, else 1
    temperature: float
    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (n, d_k) every key of this head
    v: np.ndarray  # (n, d_k) every value of this head
    raw: np.ndarray  # (n,) q · k_j
    scaled: np.ndarray  # (n,) after ÷ divisor (plus any positional bias, e.g. ALiBi)
    allowed: np.ndarray  # (n,) bool: may the query look at key j?
    masked: np.ndarray  # (n,) scaled with −∞ where not allowed
    weights: np.ndarray  # (n,) softmax(masked / temperature)
    weighted_values: np.ndarray  # (n, d_k) α_j v_j
    z: np.ndarray  # (d_k,) Σ_j α_j v_j, equal to the trace's z

    @property
    def n_keys(self) -> int:
        return len(self.raw)


def _qk_names(trace: Trace, layer: int) -> tuple[str, str]:
    rotated = ("rot_q", layer) in trace  # RoPE models score with the rotated q and k
    return ("rot_q", "rot_k") if rotated else ("q", "k")


def query_walkthrough(trace: Trace, layer: int, head: int, query_pos: int) -> QueryWalkthrough:
    """Read one query's steps out of a trace (single sequence, main stack's self-attention).

    Nothing is recomputed except the α_j v_j products: each step is the model's own number.
    """
    cfg = trace.config
    kvh = kv_head(cfg.n_heads, cfg.kv_heads, head)
    q_name, k_name = _qk_names(trace, layer)
    q = trace[q_name, layer][query_pos, head].astype(np.float64)  # (d_k,)
    k = trace[k_name, layer][:, kvh].astype(np.float64)  # (n, d_k)
    v = trace["v", layer][:, kvh].astype(np.float64)  # (n, d_k)
    raw = trace["scores_raw", layer][head, query_pos].astype(np.float64)  # (n,)
    scaled = trace["attn_scores_unmasked", layer][head, query_pos].astype(np.float64)
    masked = trace["attn_scores", layer][head, query_pos].astype(np.float64)
    weights = trace["pattern", layer][head, query_pos].astype(np.float64)
    z = trace["z", layer][query_pos, head].astype(np.float64)  # (d_k,)
    scale = trace.options.resolved(cfg).scale
    return QueryWalkthrough(
        tokens=tuple(trace.tokens), layer=layer, head=head, kv_head=kvh, query_pos=query_pos,
        d_k=cfg.d_head, divisor=score_divisor(cfg) if scale else 1.0,
        temperature=trace.options.temperature, q=q, k=k, v=v, raw=raw, scaled=scaled,
        allowed=np.isfinite(masked), masked=masked, weights=weights,
        weighted_values=weights[:, None] * v, z=z,
    )


def score_divisor(cfg) -> float:
    """What the model divides each score q · k by: √d_k, or 1 / Granite's attention_multiplier
    (which it multiplies by instead: 1/64 is a division by 64).

    >>> from tfviz.config import ModelConfig
    >>> score_divisor(ModelConfig()), score_divisor(ModelConfig(attention_multiplier=0.015625))
    (4.0, 64.0)
    """
    return math.sqrt(cfg.d_head) if cfg.attention_multiplier is None else 1.0 / cfg.attention_multiplier


@dataclass(frozen=True)
class WorkedExample:
    scores: np.ndarray
    d_k: int
    scaled: np.ndarray
    weights: np.ndarray

    def columns(self) -> dict[str, list[float]]:
        """The lesson's table by column: the scores, ÷ √d_k, and the softmax to 4 decimals."""
        return {"score q·k": self.scores.tolist(), "÷ √d_k": self.scaled.tolist(),
                "softmax": [round(w, 4) for w in self.weights.tolist()]}


def worked_example(scores=(112.0, 96.0), d_k: int = 64) -> WorkedExample:
    """Scores ÷ √d_k, then softmax: the source's "Thinking Machines" numbers by default."""
    s = np.asarray(scores, dtype=np.float64)
    scaled = s / math.sqrt(d_k)
    return WorkedExample(scores=s, d_k=d_k, scaled=scaled, weights=softmax(scaled))


def strongest_keys(weights: np.ndarray, k: int = 10) -> list[int]:
    """Positions of the k largest weights, in text order.

    >>> strongest_keys(np.array([0.1, 0.5, 0.05, 0.35]), k=2)
    [1, 3]
    """
    order = np.argsort(-np.asarray(weights), kind="stable")[:k]
    return sorted(int(j) for j in order)


# ----- every layer, head and query at once: the data of lesson 5's instant charts ------------

@dataclass(frozen=True)
class AllQueries:
    """``query_walkthrough`` for every layer, head and query, stacked (float64): what lesson
    5 sends to the browser once, so that layer, head and query switch there (instant views).
    ``walk(layer, head, i)`` gives back the single walkthrough."""

    tokens: tuple[str, ...]
    d_k: int
    divisor: float
    temperature: float
    kv_heads: tuple[int, ...]  # the key/value head each query head reads
    q: np.ndarray  # (L, H, n, d_k)
    k: np.ndarray  # (L, KV, n, d_k)
    v: np.ndarray  # (L, KV, n, d_k)
    raw: np.ndarray  # (L, H, n, n) query × key
    scaled: np.ndarray  # (L, H, n, n)
    masked: np.ndarray  # (L, H, n, n), −∞ where hidden
    weights: np.ndarray  # (L, H, n, n)
    z: np.ndarray  # (L, H, n, d_k)

    @property
    def allowed(self) -> np.ndarray:
        return np.isfinite(self.masked)  # (L, H, n, n) bool

    def walk(self, layer: int, head: int, i: int) -> QueryWalkthrough:
        kvh, w = self.kv_heads[head], self.weights[layer, head, i]
        v = self.v[layer, kvh]
        return QueryWalkthrough(
            tokens=self.tokens, layer=layer, head=head, kv_head=kvh, query_pos=i, d_k=self.d_k,
            divisor=self.divisor, temperature=self.temperature, q=self.q[layer, head, i],
            k=self.k[layer, kvh], v=v, raw=self.raw[layer, head, i],
            scaled=self.scaled[layer, head, i], allowed=self.allowed[layer, head, i],
            masked=self.masked[layer, head, i], weights=w, weighted_values=w[:, None] * v,
            z=self.z[layer, head, i])


SHIFT_SEEN = 5e-5  # a move below the fourth decimal, which the pages print, is no move


def query_shift(trace: Trace, base: Trace, layers: Sequence[int] | None = None) -> np.ndarray:
    """How far a what-if run moved each query from the model's own run ``base`` (the same
    tokens): the largest |q − q_base| entry of every (layer, head, token), shape (L, H, n).

    A what-if acts in every layer, so from the second layer on a query is built from vectors
    the earlier layers now compute differently: scale off in layer 0 moves layer 1's queries.
    Layer 0's queries come straight from the embeddings and never move.
    """
    chosen = range(trace.config.n_layers) if layers is None else layers
    q_name, _ = _qk_names(trace, 0)
    return np.stack([np.abs(trace[q_name, layer].astype(np.float64)  # (n, heads, d_k)
                            - base[q_name, layer].astype(np.float64)).max(-1).T  # (heads, n)
                     for layer in chosen])


def moved_layers(shift: np.ndarray, layers: Sequence[int] | None = None) -> list[int]:
    """The layers (numbered as ``layers``, else 0, 1, …) where a what-if moved some query.

    >>> moved_layers(np.array([[[0.0, 0.0]], [[0.0, 0.11]]]))
    [1]
    """
    chosen = list(range(len(shift)) if layers is None else layers)
    return [layer for layer, s in zip(chosen, shift) if float(np.max(s)) > SHIFT_SEEN]


def all_queries(trace: Trace, layers: Sequence[int] | None = None) -> AllQueries:
    """Every step of every query of every head, read from the trace in one pass per layer;
    ``layers``: of those layers only, stacked in that order (a deep model's page shows one, and
    the maps of every layer of a 512-token BERT-base text are 1.2 GB of float64)."""
    cfg = trace.config
    scale = trace.options.resolved(cfg).scale
    chosen = range(cfg.n_layers) if layers is None else layers

    def stack(name: str, heads_first: bool = False) -> np.ndarray:
        per_layer = [trace[name, layer].astype(np.float64) for layer in chosen]
        if heads_first:  # q, k, v, z are (n, heads, d_k) -> (heads, n, d_k)
            per_layer = [a.transpose(1, 0, 2) for a in per_layer]
        return np.stack(per_layer)

    q_name, k_name = _qk_names(trace, 0)
    return AllQueries(
        tokens=tuple(trace.tokens), d_k=cfg.d_head,
        divisor=score_divisor(cfg) if scale else 1.0, temperature=trace.options.temperature,
        kv_heads=tuple(kv_head(cfg.n_heads, cfg.kv_heads, h) for h in range(cfg.n_heads)),
        q=stack(q_name, True), k=stack(k_name, True), v=stack("v", True),
        raw=stack("scores_raw"), scaled=stack("attn_scores_unmasked"), masked=stack("attn_scores"),
        weights=stack("pattern"), z=stack("z", True))
