"""Three routing rules on the same router logits: which experts each token gets, and with what
weights (pure numpy, in float32 as the models compute).

    softmax → top-k                p = softmax(h) over all E;  T = the k largest p;  w_i = p_i
                                   (the Switch Transformer, k = 1)
    softmax → top-k → renormalise  the same T;  w_i = p_i / Σ_{j ∈ T} p_j          (Mixtral)
    top-k → softmax                T = the k largest h;  w = softmax over T of h   (Granite)

softmax keeps the order of h, so all three choose the same experts. And
p_i / Σ_T p_j = e^{h_i} / Σ_T e^{h_j} (the softmax's denominator cancels), so the last two give
the same weights: in float32 they differ in their last bits only. The first does not: its
weights add up to m = Σ_T p_j, the share of the probability the k chosen experts hold, and each
is m times the renormalised one, so the experts' outputs reach the residual stream scaled by m.

>>> c = compare(np.array([[[2.0, 1.0, 0.0, 0.0]]], dtype=np.float32), k=2)
>>> c.indices[RENORMALISED].tolist(), c.weights[RENORMALISED].astype(float).round(4).tolist()
([[[0, 1]]], [[[0.7311, 0.2689]]])
>>> c.weights[PLAIN].astype(float).round(4).tolist(), c.mass.astype(float).round(4).tolist()
([[[0.6103, 0.2245]]], [[0.8348]])
>>> bool(c.same_experts.all()), c.rule_gap < 1e-6, round(c.plain_gap, 4)
(True, True, 0.1208)
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PLAIN, RENORMALISED, TOPK_SOFTMAX = "softmax_topk", "softmax_topk_renorm", "topk_softmax"
RULES = (PLAIN, RENORMALISED, TOPK_SOFTMAX)


@dataclass(frozen=True)
class Rule:
    label: str  # the rule in arrows, as the lesson names it
    used_by: str  # whose rule it is, as the lesson says it ("Mixtral's rule")
    formula: str  # LaTeX: the chosen set and the weights


RULE = {
    PLAIN: Rule("softmax → top-k", "the Switch Transformer's rule (which takes k = 1)",
                r"p = \mathrm{softmax}(h) \qquad \mathcal{T} = \text{the } k \text{ largest } p_i "
                r"\qquad w_i = p_i"),
    RENORMALISED: Rule("softmax → top-k → renormalise", "Mixtral's rule",
                       r"p = \mathrm{softmax}(h) \qquad \mathcal{T} = \text{the } k \text{ largest } p_i "
                       r"\qquad w_i = \frac{p_i}{\sum_{j \in \mathcal{T}} p_j}"),
    TOPK_SOFTMAX: Rule("top-k → softmax", "Granite's rule",
                       r"\mathcal{T} = \text{the } k \text{ largest } h_i \qquad "
                       r"w_i = \frac{e^{h_i}}{\sum_{j \in \mathcal{T}} e^{h_j}}"),
}


def model_rule(router: str | None, renormalized: bool) -> str:
    """The rule of a model's facts (``facts.moe_router``, ``facts.moe_renormalized``).

    >>> model_rule("softmax_topk", False), model_rule("softmax_topk", True), model_rule("topk_softmax", True)
    ('softmax_topk', 'softmax_topk_renorm', 'topk_softmax')
    """
    if router == "topk_softmax":
        return TOPK_SOFTMAX
    if router == "softmax_topk":
        return RENORMALISED if renormalized else PLAIN
    raise ValueError(f"no routing rule for router {router!r}")


def softmax32(h: np.ndarray) -> np.ndarray:
    """softmax over the last axis, in float32. [0, log 3] -> [0.25, 0.75]"""
    h = np.asarray(h, dtype=np.float32)
    e = np.exp(h - h.max(axis=-1, keepdims=True))  # (…, E): the largest becomes e^0 = 1
    return e / e.sum(axis=-1, keepdims=True)


def top_k(x: np.ndarray, k: int) -> np.ndarray:
    """The k largest entries' positions along the last axis, largest first (ties: the lower
    position first). [0.1, 0.7, 0.2] with k = 2 -> [1, 2]"""
    return np.argsort(-np.asarray(x), axis=-1, kind="stable")[..., :k]  # (…, k)


def route(logits: np.ndarray, k: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), each (…, k), of ``rule`` on router logits (…, E), best first."""
    h = np.asarray(logits, dtype=np.float32)
    if rule == TOPK_SOFTMAX:
        idx = top_k(h, k)  # (…, k): the k largest logits
        return idx, softmax32(np.take_along_axis(h, idx, axis=-1))  # (…, k), adds up to 1
    if rule not in (PLAIN, RENORMALISED):
        raise ValueError(f"rule must be one of {RULES}, not {rule!r}")
    p = softmax32(h)  # (…, E) over every expert
    idx = top_k(p, k)  # (…, k)
    w = np.take_along_axis(p, idx, axis=-1)  # (…, k)
    return idx, (w / w.sum(axis=-1, keepdims=True) if rule == RENORMALISED else w)


def spread(indices: np.ndarray, weights: np.ndarray, n_experts: int) -> np.ndarray:
    """Each token's weight for every expert (…, E): 0 where not chosen.

    >>> spread(np.array([[2, 0]]), np.array([[0.7, 0.3]]), 3).tolist()
    [[0.3, 0.0, 0.7]]
    """
    out = np.zeros((*indices.shape[:-1], n_experts), dtype=np.asarray(weights).dtype)
    np.put_along_axis(out, indices, weights, axis=-1)
    return out


@dataclass(frozen=True)
class RulesCompared:
    """The three rules on the same logits (L, T, E), with one k; per rule (L, T, k) arrays."""

    k: int
    logits: np.ndarray  # (L, T, E) the router logits they all start from
    indices: dict[str, np.ndarray]  # rule -> (L, T, k) chosen experts, best first
    weights: dict[str, np.ndarray]  # rule -> (L, T, k) their weights

    @property
    def n_experts(self) -> int:
        return self.logits.shape[-1]

    def dense(self, rule: str) -> np.ndarray:
        """(L, T, E) the rule's weight for every expert, 0 where not chosen."""
        return spread(self.indices[rule], self.weights[rule], self.n_experts)

    @property
    def same_experts(self) -> np.ndarray:
        """(L, T) True where top-k of p and top-k of h choose the same set of experts."""
        return (np.sort(self.indices[RENORMALISED], axis=-1)
                == np.sort(self.indices[TOPK_SOFTMAX], axis=-1)).all(axis=-1)

    @property
    def same_count(self) -> tuple[int, int]:
        """(pairs where both orders chose the same experts, all (token, layer) pairs)."""
        same = self.same_experts
        return int(same.sum()), int(same.size)

    @property
    def mass_range(self) -> tuple[float, float, float]:
        """The smallest, largest and mean Σ_T p over every token and layer (see ``mass``)."""
        m = self.mass
        return float(m.min()), float(m.max()), float(m.mean())

    @property
    def rule_gap(self) -> float:
        """Largest difference, over every token, layer and expert, between the renormalised
        weights and top-k → softmax's: float32 rounding (0 in exact arithmetic)."""
        return float(np.abs(self.dense(RENORMALISED) - self.dense(TOPK_SOFTMAX)).max())

    @property
    def mass(self) -> np.ndarray:
        """(L, T) Σ_T p: the share of the probability the chosen experts hold, what the plain
        rule's weights add up to and what renormalising divides by."""
        return self.weights[PLAIN].sum(axis=-1)

    @property
    def plain_gap(self) -> float:
        """Largest difference between the plain (softmax → top-k) weights and the renormalised
        ones: (1 - m) times the largest renormalised weight of a token, at most."""
        return float(np.abs(self.dense(RENORMALISED) - self.dense(PLAIN)).max())


def compare(logits: np.ndarray | Sequence[np.ndarray], k: int) -> RulesCompared:
    """Run every rule on the router logits (L, T, E) (a list of each layer's (T, E) will do)."""
    h = np.asarray(np.stack(list(logits)) if not isinstance(logits, np.ndarray) else logits,
                   dtype=np.float32)  # (L, T, E)
    indices, weights = {}, {}
    for rule in RULES:
        indices[rule], weights[rule] = route(h, k, rule)
    return RulesCompared(k, h, indices, weights)


def model_weights_gap(compared: RulesCompared, rule: str, indices: np.ndarray, weights: np.ndarray,
                 dropped: np.ndarray) -> float:
    """Largest difference between a model's own weights (its hooks: (L, T, k) indices and
    weights, 0 where a slot was ``dropped``) and ``rule`` recomputed here, over the slots the
    model served: the recomputation is the model's rule, not an approximation of it."""
    theirs = spread(indices, np.where(dropped, 0.0, weights), compared.n_experts)  # (L, T, E)
    ours = compared.dense(rule)
    served = spread(indices, ~dropped, compared.n_experts).astype(bool)  # (L, T, E)
    return float(np.abs(np.where(served, theirs - ours, 0.0)).max()) if served.any() else 0.0
