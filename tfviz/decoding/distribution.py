"""From the LM head's logits to the distribution a token is drawn from: temperature, top-k, top-p.

    p_i = softmax(z / T)_i                       temperature first: T < 1 sharper, T > 1 flatter
    top-k:  keep the k most probable tokens
    top-p:  keep the smallest set of most probable tokens whose total is >= p (the "nucleus")
    then renormalise what is kept, so it sums to 1 again

The order is the one of Hugging Face ``transformers``' warpers: temperature, then top-k, then
top-p on what top-k kept (renormalised). Tokens are ranked by probability, ties broken by the
lower token id, so every filter is deterministic.

>>> next_token_distribution([2.0, 1.0, 1.0, 0.0], top_k=2).round(4).tolist()   # tie: id 1 beats id 2
[0.7311, 0.2689, 0.0, 0.0]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tfviz.reference import softmax

P_SLACK = 1e-12  # a running total within this of p counts as reaching p (0.7 + 0.1 < 0.8 in floats)


def check_filters(temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> None:
    """Raise a ValueError that says what is allowed when a sampling setting is out of range."""
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a number above 0 (1 leaves the logits as they "
                         f"are); got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                              or top_k < 1):
        raise ValueError(f"top_k must be a whole number of at least 1 (or None to keep every "
                         f"token); got {top_k!r}")
    if top_p is not None and not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be above 0 and at most 1 (or None to keep every token); "
                         f"got {top_p!r}")


@dataclass(frozen=True)
class Filtered:
    """Every stage of :func:`filter_distribution`, over the whole vocabulary (read-only arrays).

    before:     softmax(logits / temperature), before any filter
    order:      token ids from most to least probable, ties by lower id
    in_top_k:   True where top-k keeps the token (all True without top_k)
    in_top_p:   True where the token is in the nucleus of what top-k kept (all True without top_p)
    kept:       in_top_k & in_top_p
    probs:      the final distribution: ``before`` on the kept tokens, renormalised; 0 elsewhere
    """

    before: np.ndarray
    order: np.ndarray
    in_top_k: np.ndarray
    in_top_p: np.ndarray
    kept: np.ndarray
    probs: np.ndarray


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def filter_distribution(logits, temperature: float = 1.0, top_k: int | None = None,
                        top_p: float | None = None) -> Filtered:
    """The distribution of the next token with every intermediate stage, for a page to draw.

    ``logits``: (vocab,) numbers; -inf marks a token that can never be chosen.

    >>> f = filter_distribution([3.0, 1.0, 0.0, 2.0], top_p=0.9)
    >>> f.before.round(3).tolist(), f.order.tolist()
    ([0.644, 0.087, 0.032, 0.237], [0, 3, 1, 2])
    >>> f.in_top_p.tolist(), f.probs.round(3).tolist()   # 0.644 + 0.237 = 0.881 < 0.9: add id 1
    ([True, True, False, True], [0.665, 0.09, 0.0, 0.245])
    """
    check_filters(temperature, top_k, top_p)
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"logits must be one row over the vocabulary, shape (vocab,); got {z.shape}")
    if np.isnan(z).any() or np.isposinf(z).any() or np.isneginf(z).all():
        raise ValueError("logits must be finite numbers (-inf only for tokens that are ruled out)")
    before = softmax(z, temperature=temperature)  # (vocab,)
    order = np.argsort(-before, kind="stable")  # (vocab,): most probable first, ties by lower id
    in_top_k = np.ones(z.size, dtype=bool)
    if top_k is not None:
        in_top_k[order[int(top_k):]] = False
    in_top_p = np.ones(z.size, dtype=bool)
    if top_p is not None:
        ranked = np.where(in_top_k, before, 0.0)[order]  # (vocab,) what top-k kept, best first
        total = np.cumsum(ranked / ranked.sum())  # (vocab,) running total of the renormalised p
        n_keep = min(int(np.searchsorted(total, top_p - P_SLACK)) + 1, int(in_top_k.sum()))
        in_top_p[order[n_keep:]] = False
    kept = in_top_k & in_top_p
    probs = np.where(kept, before, 0.0)
    probs = probs / probs.sum()
    return Filtered(*(_frozen(a) for a in (before, order, in_top_k, in_top_p, kept, probs)))


def next_token_distribution(logits, temperature: float = 1.0, top_k: int | None = None,
                            top_p: float | None = None) -> np.ndarray:
    """Probabilities over the vocabulary after temperature, top-k and top-p, renormalised.

    >>> z = [2.0, 1.0, 0.0]
    >>> next_token_distribution(z).round(3).tolist()                  # plain softmax
    [0.665, 0.245, 0.09]
    >>> next_token_distribution(z, temperature=0.5).round(3).tolist()  # sharper
    [0.867, 0.117, 0.016]
    >>> next_token_distribution(z, top_p=0.6).tolist()                 # 0.665 >= 0.6 alone
    [1.0, 0.0, 0.0]
    >>> next_token_distribution(z, top_p=0.7).round(3).tolist()        # needs the second one too
    [0.731, 0.269, 0.0]
    """
    return filter_distribution(logits, temperature, top_k, top_p).probs


def sample(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One token id drawn from ``probs`` with the caller's generator (never the global one).

    >>> sample(np.array([0.0, 1.0, 0.0]), np.random.default_rng(0))
    1
    """
    return int(rng.choice(len(probs), p=probs))
