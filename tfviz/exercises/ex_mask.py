"""Exercise "causal mask": which scores become −∞, and what the softmax makes of them.

Our own example (the notes draw the mask but give no numbers): "the cat sat" with scaled
scores [[2, 1, 0], [1, 3, -1], [0, 2, 1]]. Word i may look at words 0..i, so

    masked  = [[2, −∞, −∞], [1, 3, −∞], [0, 2, 1]]
    weights = [[1, 0, 0], [0.119, 0.881, 0], [0.090, 0.665, 0.245]]

>>> SPEC.make(None).field("weights").answer_text
'1, 0, 0, 0.119, 0.881, 0, 0.09, 0.665, 0.245'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (Arrows, ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  frozen_array)
from tfviz.exercises.worked import matrix_text
from tfviz.reference import causal_mask, softmax

ID = "causal-mask"
TITLE = "Causal mask: hide the future"
SOURCE_TOKENS = ("the", "cat", "sat")
SOURCE_SCORES = ((2, 1, 0), (1, 3, -1), (0, 2, 1))
WORDS = ("the", "cat", "sat", "on", "a", "mat", "dogs", "bark", "we", "sing")

MESSAGES = {
    "wrong_triangle": ("You hid the past instead of the future. Row i is word i asking; it may "
                       "look at columns 1..i (itself and earlier words), so −∞ goes above the "
                       "diagonal."),
    "diagonal": ("The diagonal was masked too. A word may always look at itself; only the "
                 "entries above the diagonal become −∞."),
    "zero_fill": ("The hidden entries were set to 0 instead of −∞. A score of 0 still gets a "
                  "weight of e^0 = 1 before normalising, so the future leaks in; only −∞ gives "
                  "weight 0."),
    "no_mask": ("No mask was applied: every word looked at every other word, including later "
                "ones. That is an encoder, not a decoder."),
    "wrong_axis": ("The softmax ran down the columns. Each row (one word asking) must add up "
                   "to 1."),
}


def build(tokens, scores, seed: int | None) -> Instance:
    S = np.asarray(scores, dtype=float)  # (n, n), already scaled
    n = S.shape[0]
    allowed = causal_mask(n)
    masked = np.where(allowed, S, -np.inf)
    weights = softmax(masked)
    variants = {
        "wrong_triangle": np.where(allowed.T, S, -np.inf),
        "diagonal": np.where(np.tril(allowed, -1), S, -np.inf),
        "zero_fill": np.where(allowed, S, 0.0),
        "no_mask": S,
    }
    weight_slips = {k: softmax(variants[k])
                    for k in ("wrong_triangle", "zero_fill", "no_mask")}
    weight_slips["wrong_axis"] = softmax(masked, axis=0)
    fields = (
        answer_field("masked", "masked scores (n×n, row by row, -inf where hidden)", masked,
                     {k: (v, MESSAGES[k]) for k, v in variants.items()}),
        answer_field("weights", "attention weights (n×n, row by row)", weights,
                     {k: (v, MESSAGES[k]) for k, v in weight_slips.items()}),
    )
    header = "| asks \\ looks at | " + " | ".join(tokens) + " |"
    rule = "|---" * (n + 1) + "|"
    body = "\n".join(f"| {t} | " + " | ".join(f"{int(x)}" if x == int(x) else f"{x:g}" for x in row)
                     + " |" for t, row in zip(tokens, S))
    prompt = (
        f"A decoder reads “{' '.join(tokens)}”. These are the attention scores of one head, "
        f"already divided by √d_k (row = the word asking, column = the word looked at):\n\n"
        f"{header}\n{rule}\n{body}\n\n"
        "Apply the causal mask, then the softmax of each row. Give the masked score matrix "
        "(write -inf where a score is hidden) and the weight matrix, both row by row.")
    steps = (
        Step("Which entries are hidden", r"j > i \;\Rightarrow\; s_{ij} = -\infty",
             "Word i may use itself and the words before it, never a later one. In the matrix "
             "that is everything strictly above the diagonal:\n" + matrix_text(masked),
             {"masked": frozen_array(masked)}),
        Step("Softmax, row by row",
             r"\alpha_{ij} = e^{s_{ij}} / \textstyle\sum_{j' \le i} e^{s_{ij'}}",
             "e^−∞ is 0, so hidden entries get weight 0 and each row shares its weight among the "
             "visible words only. The first word can only see itself, so it gets weight 1:\n"
             + matrix_text(weights, 4),
             {"weights": frozen_array(weights)}),
    )
    data = {"scores": frozen_array(S)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed,
                    Arrows(tuple(tokens), frozen_array(weights[None]), None), tokens=tuple(tokens))


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n = int(rng.integers(3, 5))
    tokens = tuple(str(w) for w in rng.choice(WORDS, size=n, replace=False))
    return build(tokens, rng.integers(-2, 4, size=(n, n)), seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_TOKENS, SOURCE_SCORES, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 8, "Put −∞ above the diagonal, then take row softmaxes.", _make,
                    has_source=False)
