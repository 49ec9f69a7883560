"""Numbers for the positions lesson: sine tables, similarity by distance (of a sine table or of a
trained position table, :func:`learned_positions`), RoPE and ALiBi demos.

Pure numpy, written beside the model's torch versions in ``tfviz.model.positional``; the tests
check that the two agree to the bit (tests/unit/analysis/test_foundations.py). The sine table and
the ALiBi biases are rounded to float32, as the model keeps them, so the lesson shows exactly
what the model adds. The RoPE demo rotates vectors with the engine's own code, so it lives
with the experiments (``tfviz/experiments/rope.py``).

>>> robot = sinusoid_table(4, 4, base=100)        # "I am a Robot", d = 4, n = 100
>>> robot[2].round(2).tolist()
[0.91, -0.42, 0.2, 0.98]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.reference import positional_table

ROBOT = ("I", "am", "a", "Robot")


def sinusoid_table(n_positions: int, d: int, base: float = 10000.0) -> np.ndarray:
    """(n_positions, d): PE(k, 2i) = sin(k / base^(2i/d)), PE(k, 2i+1) = cos(same angle).

    The exercises' table, rounded to float32 like the one the model adds to its embeddings.
    """
    return positional_table(n_positions, d, base).astype(np.float32).astype(np.float64)


def formula_table(words=ROBOT, d: int = 4, base: float = 100.0) -> list[dict[str, str]]:
    """One row per word: its position k and every entry written as formula = value.

    >>> formula_table(d=4, base=100)[1]["P(k,0)"]
    'sin(1/1) = 0.84'
    >>> formula_table(d=4, base=100)[3]["P(k,3)"]
    'cos(3/10) = 0.96'
    """
    table = sinusoid_table(len(words), d, base)
    rows = []
    for k, word in enumerate(words):
        row = {"word": str(word), "k": str(k)}
        for j in range(d):
            i = j // 2
            denom = float(base) ** (2 * i / d)
            fn = "sin" if j % 2 == 0 else "cos"
            row[f"P(k,{j})"] = f"{fn}({k}/{denom:.4g}) = {table[k, j]:.2f}"
        rows.append(row)
    return rows


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows: (n, d) -> (n, n), 1.0 on the diagonal."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = v / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def similarity_by_distance(vectors: np.ndarray) -> np.ndarray:
    """Mean cosine similarity of position vectors k and k + delta, for delta = 0 .. n-1.

    For a sine table this depends only on delta (every pair at that distance agrees); for a
    learned table it is an average. [[1, 0], [0, 1], [-1, 0]] -> [1.0, 0.0, -1.0].
    """
    sim = cosine_matrix(vectors)
    n = sim.shape[0]
    return np.array([np.diagonal(sim, offset=delta).mean() for delta in range(n)])


@dataclass(frozen=True)
class LearnedPositions:
    """A trained position table beside the sine table of the same width.

    Only rows 0 .. trained-1 ever took part in a training loss; the rows after them are still
    (nearly) the random numbers they started as.
    """

    trained: int  # how many rows training reached
    learned: np.ndarray  # (trained,) mean cosine by distance over the trained rows
    sine: np.ndarray  # (trained,) the same for the sine table: same positions, width and base
    cosine: np.ndarray  # (shown, shown) cosine of every pair of the first ``shown`` learned rows
    neighbours_trained: float  # mean cosine of rows k and k+1, both trained
    neighbours_untrained: float  # the same among rows training never reached (nan if none)

    @property
    def far_cosine(self) -> float:
        """Mean |cosine| of rows two or more apart (nan when training reached two rows or
        fewer): how unalike rows that are not neighbours are."""
        far = self.learned[2:]
        return float(np.abs(far).mean()) if far.size else float("nan")


def learned_positions(table: np.ndarray, trained: int, base: float = 10000.0,
                      shown: int | None = None) -> LearnedPositions:
    """Compare a learned table (max_len, d) with the sines; ``shown`` rows go into ``cosine``
    (default: twice the trained ones, so the untrained rows after them are seen too)."""
    table = np.asarray(table, dtype=np.float64)
    n, d = table.shape
    trained = max(1, min(int(trained), n))
    shown = min(n, 2 * trained if shown is None else shown)
    neighbours = np.diagonal(cosine_matrix(table), offset=1)  # (n-1,): cos(p_k, p_k+1)
    rest = neighbours[trained:]
    return LearnedPositions(
        trained=trained, learned=similarity_by_distance(table[:trained]),
        sine=similarity_by_distance(sinusoid_table(trained, d, base)),
        cosine=cosine_matrix(table[:shown]),
        neighbours_trained=float(neighbours[:trained - 1].mean()) if trained > 1 else float("nan"),
        neighbours_untrained=float(rest.mean()) if len(rest) else float("nan"))


def alibi(n_heads: int, n_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """ALiBi slopes (H,) and biases (H, n, n) = -slope_h * |i - j|, in float32 like the model.

    Head h gets slope 2^(-8(h+1)/H): a geometric series from gentle to steep.

    >>> slopes, bias = alibi(2, 3)
    >>> slopes.tolist(), bias[0, 0].tolist()
    ([0.0625, 0.00390625], [-0.0, -0.0625, -0.125])
    """
    slopes = np.array([2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)], dtype=np.float32)
    pos = np.arange(n_positions)
    distance = np.abs(pos[:, None] - pos[None, :]).astype(np.float32)  # (n, n)
    bias = -slopes[:, None, None] * distance[None]  # (H, n, n)
    return slopes.astype(np.float64), bias.astype(np.float64)


def permutation(n: int, kind: str = "reverse", seed: int = 0) -> np.ndarray:
    """A reordering of 0..n-1: "reverse", "rotate" (first token to the end) or "shuffle".

    >>> permutation(4, "reverse").tolist(), permutation(4, "rotate").tolist()
    ([3, 2, 1, 0], [1, 2, 3, 0])
    """
    if kind == "reverse":
        return np.arange(n)[::-1].copy()
    if kind == "rotate":
        return np.roll(np.arange(n), -1)
    if kind == "shuffle":
        return np.random.default_rng(seed).permutation(n)
    raise ValueError(f"unknown permutation {kind!r}")
