"""Attention computed the wrong way on purpose, one common slip at a time.

The checker compares a learner's answer with each of these; a match tells which step
went wrong. Each slip changes exactly one step of :func:`solve_attention`:

    no_scale         skip ÷√d_k
    divide_dk        ÷d_k instead of ÷√d_k
    wrong_axis       softmax down each column (over queries) instead of along each row
    no_mask          a decoder that forgot the causal mask
    keys_not_values  weights times the keys instead of the values

>>> X = [[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]]
>>> W = [select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5])]
>>> slipped_attention(X, *W, slip="no_scale").weights[0].round(4).tolist()
[0.8808, 0.1192]
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tfviz.exercises.attention import AttentionSteps, select, solve_attention
from tfviz.reference import causal_mask, softmax

__all__ = ["SLIPS", "slipped_attention", "slip_messages", "select"]

SLIPS = ("no_scale", "divide_dk", "wrong_axis", "no_mask", "keys_not_values")


def slipped_attention(X, W_q, W_k, W_v, causal: bool = False, scale: bool = True,
                      slip: str | None = None) -> AttentionSteps:
    """:func:`solve_attention` with one step done wrong (``slip=None``: done right)."""
    if slip not in (None, *SLIPS):
        raise ValueError(f"unknown slip {slip!r}")
    if slip == "no_scale":
        return solve_attention(X, W_q, W_k, W_v, causal, scale=False)
    if slip == "no_mask":
        return solve_attention(X, W_q, W_k, W_v, causal=False, scale=scale)
    right = solve_attention(X, W_q, W_k, W_v, causal, scale)
    n = right.scores.shape[0]
    scaled, masked, weights, output = right.scaled, right.masked, right.weights, right.output
    if slip == "divide_dk":
        scaled = right.scores / right.d_k
        masked = np.where(causal_mask(n), scaled, -np.inf) if causal else scaled
        weights = softmax(masked)
        output = weights @ right.v  # (n, d_v)
    elif slip == "wrong_axis":
        weights = softmax(masked, axis=0)  # each column sums to 1
        output = weights @ right.v
    elif slip == "keys_not_values":
        output = weights @ right.k  # (n, d_k)
    return dataclasses.replace(right, scaled=scaled, masked=masked, weights=weights, output=output)


def slip_messages(d_k: int, word: str = "this word") -> dict[str, str]:
    """What to tell a learner whose answer matches each slip.

    ``no_scale`` is for the boxes after the softmax; ``no_scale_scores`` for the scaled-score
    box, where the same slip shows up before any softmax was taken.
    """
    root = np.sqrt(d_k)
    root_text = f"{root:g}" if root == int(root) else f"{root:.4f}"
    return {
        "no_scale": ("The division by √d_k is missing: you took the softmax of the raw dot "
                     f"products. Divide each score by √{d_k} = {root_text} first."),
        "no_scale_scores": ("These are the raw dot products: the division by √d_k is missing. "
                            f"Divide each score by √{d_k} = {root_text}."),
        "divide_dk": (f"You divided the scores by d_k = {d_k}. The scale is its square root, "
                      f"√{d_k} = {root_text}."),
        "wrong_axis": ("The softmax ran down a column (over the queries). Each query's own row "
                       "of scores has to turn into weights that add up to 1, so normalise "
                       "across the keys."),
        "no_mask": (f"The causal mask was skipped, so “{word}” also looked at words after it. "
                    "In a decoder a word may only look at itself and earlier words: set the "
                    "later scores to −∞ before the softmax."),
        "keys_not_values": ("You mixed the key vectors. The weights say how much of each "
                            "value vector to take; keys are only used to compute the scores."),
    }


def selection_text(dims) -> str:
    """[0, 1] -> 'dimensions 1–2'; [0, 2] -> 'dimensions 1 and 3' (1-based, as a learner counts)."""
    ones = [d + 1 for d in dims]
    if len(ones) > 1 and ones == list(range(ones[0], ones[-1] + 1)):
        return f"dimensions {ones[0]}–{ones[-1]}"
    return "dimensions " + ", ".join(map(str, ones[:-1])) + f" and {ones[-1]}"
