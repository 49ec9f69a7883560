"""Exercise "induction score": read one head's attention on a repeated sequence.

A sequence of n tokens is repeated: t_0 … t_{n−1} t_0 … t_{n−1}. At the second copy of t_i
(position n + i) an induction head looks back at the token that followed the first copy, t_{i+1}
at position i + 1. Its induction score is the mean of those n weights; a previous-token head's
score is the mean, over every position q ≥ 1, of the weight from q to q − 1.

Our own example, "A B C A B C" (n = 3), one head's map (rows: the query, columns: the key):

    A  [1                            ]
    B  [0.4  0.6                     ]
    C  [0.2  0.7  0.1                ]
    A  [0.1  0.7  0.1  0.1           ]
    B  [0.1  0.1  0.6  0.1  0.1      ]
    C  [0.1  0.1  0.1  0.5  0.1  0.1 ]

Induction: query 3 → key 1 (0.7), query 4 → key 2 (0.6), query 5 → key 3 (0.5): 0.6, an
induction head. Previous token: 0.4, 0.7, 0.1, 0.1, 0.1 → 0.28. Slips: the earlier copy
itself (key i, not i + 1), a sum for the mean, the diagonal (each token on itself), the first
query counted in the previous-token mean, and ARENA's diagonal read from position n − 1.

>>> SPEC.make(None).field("induction").answer_text
'0.6'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)

ID = "induction-score"
TITLE = "Induction and previous-token scores"
SOURCE_TOKENS = ("A", "B", "C")
SOURCE_PATTERN = ((1, 0, 0, 0, 0, 0), (0.4, 0.6, 0, 0, 0, 0), (0.2, 0.7, 0.1, 0, 0, 0),
                  (0.1, 0.7, 0.1, 0.1, 0, 0), (0.1, 0.1, 0.6, 0.1, 0.1, 0),
                  (0.1, 0.1, 0.1, 0.5, 0.1, 0.1))
LETTERS = ("A", "B", "C", "D", "E", "F", "G", "H")

MESSAGES = {
    "same_copy": ("You read the weight on the earlier copy of the token itself (key i). An "
                  "induction head looks one further, at the token that followed it (key i + 1): "
                  "that is the token to predict next."),
    "summed": "You added the weights up. The score is their mean: divide by how many you added.",
    "from_n_minus_1": ("You started at position n − 1, the last token of the first half. It has "
                       "no earlier copy; the score averages the n queries of the second half."),
    "self_weight": ("You read the diagonal, each token's weight on itself. A previous-token head "
                    "looks at key q − 1."),
    "with_first": ("You counted position 0, which has no previous token (its weight is all on "
                   "itself). Average over the positions 1 … 2n − 1."),
}


def induction_reading(pattern, n: int) -> dict[str, float]:
    """The induction score and each slip's version of it.

    >>> induction_reading([[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], 2)["score"]
    1.0
    """
    p = np.asarray(pattern, dtype=float)
    q = n + np.arange(n)
    q_early = np.arange(n - 1, 2 * n)
    return {"score": float(p[q, q - n + 1].mean()), "same_copy": float(p[q, q - n].mean()),
            "summed": float(p[q, q - n + 1].sum()),
            "from_n_minus_1": float(p[q_early, q_early - n + 1].mean())}


def previous_reading(pattern) -> dict[str, float]:
    """The previous-token score and each slip's version of it."""
    p = np.asarray(pattern, dtype=float)
    T = p.shape[0]
    q = np.arange(1, T)
    return {"score": float(p[q, q - 1].mean()), "self_weight": float(np.diag(p)[1:].mean()),
            "summed": float(p[q, q - 1].sum()),
            "with_first": float(p[q, q - 1].sum() / T)}


def build(first, pattern, seed: int | None) -> Instance:
    p = np.asarray(pattern, dtype=float)
    n = len(first)
    tokens = tuple(first) * 2
    ind, prev = induction_reading(p, n), previous_reading(p)
    fields = (
        answer_field("induction", "the induction score", ind["score"],
                     {k: (ind[k], MESSAGES[k]) for k in ("same_copy", "summed", "from_n_minus_1")}),
        answer_field("previous", "the previous-token score", prev["score"],
                     {k: (prev[k], MESSAGES[k]) for k in ("self_weight", "summed", "with_first")}),
    )
    prompt = (
        f"A head reads “{' '.join(tokens)}”: {n} tokens, then the same {n} again. The table is "
        "its attention (row: the token asking, column: the token looked at; positions count "
        "from 0, and each row adds up to 1).\n\n"
        "Find its induction score, the mean over the second half's tokens of the weight on the "
        "token that followed their earlier copy, and its previous-token score, the mean over "
        "positions 1 onwards of the weight on the token just before.")
    q = n + np.arange(n)
    picked = p[q, q - n + 1]
    steps = (
        Step("Where each second-half token should look", r"q = n + i \;\to\; k = i + 1",
             "Position " + ", ".join(f"{n + i} (“{tokens[n + i]}”) looks at {i + 1} "
                                     f"(“{tokens[i + 1]}”)" for i in range(n)) + ".",
             {"targets": frozen_array(picked)}),
        Step("Induction score", r"\tfrac{1}{n}\textstyle\sum_{i} A_{n+i,\,i+1}",
             f"({' + '.join(fmt_number(w) for w in picked)}) / {n} = {fmt_number(ind['score'], 4)}.",
             {"induction": ind["score"]}),
        Step("Previous-token score", r"\tfrac{1}{2n-1}\textstyle\sum_{q \ge 1} A_{q,\,q-1}",
             f"The weights just below the diagonal, "
             f"{', '.join(fmt_number(w) for w in np.diag(p, -1))}, average to "
             f"{fmt_number(prev['score'], 4)}.", {"previous": prev["score"]}),
    )
    data = {"pattern": frozen_array(p), "half": n}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed, tokens=tokens)


def _row(rng: np.random.Generator, q: int, favourite: int | None, strength: float) -> np.ndarray:
    """Attention of query q over keys 0..q in tenths: ``strength`` on ``favourite``, the rest
    spread at random."""
    row = np.zeros(q + 1)
    rest = 10
    if favourite is not None:
        row[favourite] = strength * 10
        rest -= int(strength * 10)
    for _ in range(rest):
        row[rng.integers(0, q + 1)] += 1
    return row / 10


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n = int(rng.integers(3, 5))
    first = tuple(str(t) for t in rng.choice(LETTERS, size=n, replace=False))
    kind = rng.choice(["induction", "previous"])  # which head this is
    strength = float(rng.choice([0.5, 0.6, 0.7, 0.8]))
    rows = []
    for q in range(2 * n):
        if q == 0:
            rows.append(np.ones(1))
        elif kind == "induction" and q >= n:
            rows.append(_row(rng, q, q - n + 1, strength))
        elif kind == "previous":
            rows.append(_row(rng, q, q - 1, strength))
        else:
            rows.append(_row(rng, q, None, 0))
    p = np.zeros((2 * n, 2 * n))
    for q, row in enumerate(rows):
        p[q, :q + 1] = row
    return build(first, p, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_TOKENS, SOURCE_PATTERN, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 27, "Average the weights one after the earlier copy.", _make,
                    has_source=False)
