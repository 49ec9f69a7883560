"""Exercise "MoE gate": router logits -> softmax gates -> top-k experts -> mixed output.

    h(x) = W_r x,   p = softmax(h),   T = the k largest p_i,   y = Σ_{i∈T} p_i E_i(x)

(the formula of the notes: the chosen gates are used as they are). Some layers instead
rescale the chosen gates to add up to 1; an instance says which rule it uses.
Our standard example: x = [1, 2], W_r rows [1,0], [0,1], [1,1], [-1,0] -> h = [1, 2, 3, -1],
p = [0.089, 0.242, 0.657, 0.012], k = 2 picks experts 3 and 2:

    y = 0.657·E₃ + 0.242·E₂ = 0.657·[2, -1] + 0.242·[0, 2] = [1.314, -0.174]

>>> SPEC.make(None).field("output").answer_text
'1.314, -0.174'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import matrix_text, vector_text
from tfviz.reference import softmax

ID = "moe-gate"
TITLE = "Mixture of experts: route one token"
SOURCE = dict(x=(1, 2), W_r=((1, 0), (0, 1), (1, 1), (-1, 0)),
              experts=((1, 0), (0, 2), (2, -1), (-1, 1)), k=2, renormalize=False)

MESSAGES = {
    "chosen_only": ("You took the softmax over the chosen experts only. The gates p_i come from "
                    "a softmax over all experts' logits; choosing happens afterwards."),
    "lowest": "Those are the experts with the smallest gates; the router keeps the largest.",
    "renormalized": ("You rescaled the chosen gates to add up to 1. This layer mixes the "
                     "experts with the gates exactly as the softmax gave them."),
    "not_renormalized": ("The chosen gates still need rescaling: divide each by their sum so "
                         "that they add up to 1, then mix."),
    "gate_ignored": ("You took the chosen expert's output as it is. It has to be multiplied by "
                     "its gate p_i."),
    "equal_weights": ("You averaged the chosen experts. Each expert's output is weighted by "
                      "its own gate."),
    "dense": ("All experts were mixed in. Only the top-k experts run for this token; the others "
              "contribute nothing."),
    "raw_logits": ("The router logits were used as weights. Turn them into gates with the "
                   "softmax first."),
}


def route(x, W_r, experts, k: int, renormalize: bool):
    """logits, gates, chosen (0-based, best first), weights of the chosen, output y.

    >>> route([1], [[1], [0]], [[1], [3]], 1, False)[4].round(3).tolist()
    [0.731]
    """
    x, W_r, E = (np.asarray(a, dtype=float) for a in (x, W_r, experts))
    logits = W_r @ x  # (n_experts,)
    gates = softmax(logits)
    chosen = np.argsort(-gates, kind="stable")[:k]
    weights = gates[chosen] / gates[chosen].sum() if renormalize else gates[chosen]
    return logits, gates, chosen, weights, weights @ E[chosen]


def build(x, W_r, experts, k: int, renormalize: bool, seed: int | None) -> Instance:
    E = np.asarray(experts, dtype=float)
    logits, gates, chosen, weights, y = route(x, W_r, E, k, renormalize)
    _, _, _, w_other, y_other = route(x, W_r, E, k, not renormalize)
    lowest = np.argsort(gates, kind="stable")[:k]
    only = np.zeros_like(gates)
    only[chosen] = softmax(logits[chosen])
    out_slips = {"dense": (gates @ E, MESSAGES["dense"]),
                 "raw_logits": (logits[chosen] @ E[chosen], MESSAGES["raw_logits"])}
    if k == 1:
        out_slips["gate_ignored"] = (E[chosen[0]], MESSAGES["gate_ignored"])
    else:
        other = "not_renormalized" if renormalize else "renormalized"
        out_slips[other] = (y_other, MESSAGES[other])
        out_slips["equal_weights"] = (E[chosen].mean(axis=0), MESSAGES["equal_weights"])
    fields = (
        answer_field("logits", "router logits h", logits),
        answer_field("gates", "gates p (one per expert)", gates,
                     {"chosen_only": (only, MESSAGES["chosen_only"])}),
        answer_field("chosen", f"the {k} chosen expert number(s), 1-based", chosen + 1,
                     {"lowest": (lowest + 1, MESSAGES["lowest"])}, unordered=True),
        answer_field("output", "layer output y", y, out_slips),
    )
    rule = ("then rescale the chosen gates so they add up to 1" if renormalize
            else "and use the chosen gates as they are (no rescaling)")
    experts_md = "\n".join(f"- E{i + 1}(x) = {vector_text(e)}" for i, e in enumerate(E))
    prompt = (
        f"A mixture-of-experts layer has {len(E)} experts and sends each token to the top "
        f"k = {k}. For one token x = {vector_text(x)}, the router matrix W_r has the rows\n\n"
        + "\n".join(f"- expert {i + 1}: {vector_text(r)}" for i, r in enumerate(np.asarray(W_r)))
        + f"\n\nand the experts would output\n\n{experts_md}\n\n"
        f"Compute the router logits h = W_r x, the gates p = softmax(h), pick the top {k}, {rule}; "
        "then give the layer's output y.")
    mix = " + ".join(f"{fmt_number(w, 4)}·{vector_text(E[i])}" for w, i in zip(weights, chosen))
    steps = (
        Step("Router logits", r"h = W_r\,x",
             f"One dot product per expert: h = {vector_text(logits)}.",
             {"logits": frozen_array(logits)}),
        Step("Gates", r"p_i = e^{h_i} / \textstyle\sum_j e^{h_j}",
             f"Softmax over all {len(E)} experts: p = {vector_text(gates, 4)}.",
             {"gates": frozen_array(gates)}),
        Step("Top-k", r"T = \operatorname{top}_k(p)",
             f"The {k} largest gates belong to expert(s) "
             + ", ".join(str(i + 1) for i in chosen) + "; the other experts do not run.",
             {"chosen": tuple(int(i) + 1 for i in chosen)}),
        Step("Mix", r"y = \textstyle\sum_{i \in T} p_i E_i(x)",
             (f"Rescaled weights {vector_text(weights, 4)}; " if renormalize else "")
             + f"y = {mix} = {vector_text(y, 4)}.", {"output": frozen_array(y)}),
    )
    data = {"x": frozen_array(x), "W_r": frozen_array(W_r), "experts": frozen_array(E), "k": k,
            "renormalize": renormalize, "W_r_text": matrix_text(W_r)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    d, n = int(rng.integers(2, 4)), 4
    x = rng.integers(-2, 3, size=d)
    W_r = rng.integers(-1, 2, size=(n, d))
    k, renorm = [(1, False), (2, False), (2, True)][int(rng.integers(0, 3))]
    if len(set((W_r @ x).tolist())) < n:  # ties in the logits make the top-k ambiguous
        return _draw(rng, seed)
    return build(x, W_r, rng.integers(-2, 3, size=(n, 2)), k, renorm, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(**SOURCE, seed=None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 11, "Router logits, softmax gates, top-k, weighted experts.",
                    _make, has_source=False)
