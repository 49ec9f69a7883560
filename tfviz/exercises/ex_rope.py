"""Exercise "RoPE by hand": turn a query and a key by their positions, then score them.

Rotary position embedding (RoFormer; Llama, Mistral, Qwen) turns each pair of a head's
dimensions, pair i = (x_2i, x_2i+1), by the angle m·θ_i at position m:

    θ_i = b^(−2i/d),   (a, c) -> (a cos φ − c sin φ, a sin φ + c cos φ),   φ = m·θ_i

Our standard example, d = 4 and base b = 100 (θ = [1, 0.1], as in the positional table
exercise): the query q = [1, 2, -1, 1] at position m = 2 turns by the angles [2, 0.2]:

    pair 0: (cos 2 − 2 sin 2, sin 2 + 2 cos 2)  = (-2.235, 0.077)
    pair 1: (−cos 0.2 − sin 0.2, −sin 0.2 + cos 0.2) = (-1.179, 0.781)

and the key k = [1, 0, 0, 1] at n = 1 turns by [1, 0.1] to [0.540, 0.841, -0.100, 0.995]:
their score q'·k' = -0.247, the same as q turned by m − n = 1 position against k unturned.

>>> SPEC.make(None).field("rotated").answer_text
'-2.235, 0.077, -1.179, 0.781'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text
from tfviz.reference import rope, rope_inv_freq

ID = "rope"
TITLE = "RoPE: turn a query and a key by hand"
SOURCE = dict(q=(1, 2, -1, 1), k=(1, 0, 0, 1), m=2, n=1, base=100.0)

MESSAGES = {
    "exponent_i": ("The frequency used b^(−i/d). It is b^(−2i/d): i counts pairs, so pair i's "
                   "exponent is 2i/d."),
    "dim_index": ("You counted i by dimensions (0, 2, …). i counts pairs (0, 1, …): pair i "
                  "starts at dimension 2i, and its exponent is 2i/d."),
    "positive_exponent": ("The exponent lost its minus sign: θ_i = b^(−2i/d) gets smaller for "
                          "later pairs (slow pairs), it does not grow."),
    "no_position": ("The position is missing: pair i turns by m·θ_i, θ_i per position, not "
                    "by θ_i once."),
    "sin_sign": ("The pair turned the wrong way: the first entry is a cos φ − c sin φ, the "
                 "second a sin φ + c cos φ."),
    "degrees": "The angles were read as degrees. RoPE's angles are radians; set your calculator "
               "to RAD.",
    "halves": ("You paired dimension 1 with 3 and 2 with 4 (Llama's rotate_half layout). This "
               "exercise pairs neighbours, (1, 2) and (3, 4), as the RoFormer paper does."),
    "k_not_rotated": ("The key was left as it is. It turns too, by its own position n: the "
                      "score compares q turned by m with k turned by n."),
    "no_rotation": "That is q·k with neither vector turned: RoPE turns both before the score.",
    "score_sign": ("Each vector turned the wrong way (or q turned by n − m instead of m − n): "
                   "the score moved to the mirrored distance."),
}


def turned(q, positions, theta, pairs: str = "adjacent") -> np.ndarray:
    """``q`` turned at one position: the reference's rope for a single vector.

    >>> turned([1.0, 0.0], 1, [np.pi / 2]).round(6).tolist()
    [0.0, 1.0]
    """
    return rope(np.asarray(q, dtype=float)[None], [positions], theta, pairs)[0]


def build(q, k, m: int, n: int, base: float, seed: int | None) -> Instance:
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    d = len(q)
    pair = np.arange(d // 2)
    theta = rope_inv_freq(d, base)  # (d/2,) b^(−2i/d)
    wrong_theta = {"exponent_i": float(base) ** (-pair / d),
                   "dim_index": float(base) ** (-2 * (2 * pair) / d),
                   "positive_exponent": float(base) ** (2 * pair / d),
                   "degrees": theta * np.pi / 180}
    angles = m * theta
    q_rot, k_rot = turned(q, m, theta), turned(k, n, theta)
    score = float(q_rot @ k_rot)
    rot_slips = {name: turned(q, m, wrong_theta[name])
                 for name in ("exponent_i", "dim_index", "degrees")}
    rot_slips |= {"sin_sign": turned(q, -m, theta), "no_position": turned(q, 1, theta),
                  "halves": turned(q, m, theta, "halves")}
    score_slips = {"k_not_rotated": q_rot @ k, "no_rotation": q @ k,
                   "score_sign": turned(q, -m, theta) @ turned(k, -n, theta),
                   "degrees": rot_slips["degrees"] @ turned(k, n, wrong_theta["degrees"]),
                   "halves": rot_slips["halves"] @ turned(k, n, theta, "halves")}
    fields = (
        answer_field("angles", f"the angles m·θ_i of q's {d // 2} pairs (radians)", angles,
                     {name: (m * wrong_theta[name], MESSAGES[name])
                      for name in ("exponent_i", "dim_index", "positive_exponent")}
                     | {"no_position": (theta, MESSAGES["no_position"])}),
        answer_field("rotated", "the turned query q'", q_rot,
                     {name: (v, MESSAGES[name]) for name, v in rot_slips.items()}),
        answer_field("score", "the score q'·k'", score,
                     {name: (v, MESSAGES[name]) for name, v in score_slips.items()}),
    )
    prompt = (
        f"A head of d = {d} dimensions uses rotary position embedding (RoPE) with base "
        f"b = {fmt_number(base)}. Its query q = {vector_text(q)} belongs to the token at "
        f"position m = {m}, and the key k = {vector_text(k)} to the token at position n = {n}.\n\n"
        "RoPE splits a vector into pairs of neighbouring dimensions, pair i = (x_2i, x_2i+1) "
        f"for i = 0 … {d // 2 - 1}, and turns pair i of the token at position p by the angle "
        "p·θ_i, with θ_i = b^(−2i/d) in radians. A pair (a, c) turned by φ becomes "
        "(a cos φ − c sin φ, a sin φ + c cos φ).\n\n"
        "Give the angles by which q's pairs turn, the turned query q', and the score q'·k' "
        "after the key has been turned by its own position (a plain dot product: no ÷√d).")
    k_angles = n * theta
    rel = turned(q, m - n, theta)
    steps = (
        Step("Frequencies and angles", r"\theta_i = b^{-2i/d},\quad \varphi_i = m\,\theta_i",
             "Pair i turns θ_i per position: θ_0 = b^0 = 1, "
             + ", ".join(f"θ_{i} = {fmt_number(base)}^(−{2 * i}/{d}) = {fmt_number(t, 4)}"
                         for i, t in enumerate(theta) if i > 0)
             + f". At m = {m}, q's pairs turn by {vector_text(angles, 4)} radians; the first "
             "pair always turns fastest.", {"theta": frozen_array(theta),
                                            "angles": frozen_array(angles)}),
        Step("Turn the query", r"\begin{pmatrix}a'\\c'\end{pmatrix} = \begin{pmatrix}\cos\varphi"
             r" & -\sin\varphi\\ \sin\varphi & \cos\varphi\end{pmatrix}\begin{pmatrix}a\\c"
             r"\end{pmatrix}",
             "; ".join(f"Pair {i}: ({fmt_number(q[2 * i])}, {fmt_number(q[2 * i + 1])}) by "
                       f"{fmt_number(a, 4)} → ({fmt_number(q_rot[2 * i], 4)}, "
                       f"{fmt_number(q_rot[2 * i + 1], 4)})" for i, a in enumerate(angles))
             + f". So q' = {vector_text(q_rot, 4)}: each pair keeps its length, only its "
             "direction turns.", {"rotated": frozen_array(q_rot)}),
        Step("Turn the key", r"\varphi_i = n\,\theta_i",
             f"The key turns by its own position n = {n}: angles {vector_text(k_angles, 4)}, "
             f"k' = {vector_text(k_rot, 4)}.", {"k_rotated": frozen_array(k_rot)}),
        Step("Score", r"q' \cdot k' = q \cdot R\big((n - m)\theta\big)\,k",
             f"q'·k' = {fmt_number(score, 4)}. Only the distance m − n = {m - n} counts: q "
             f"turned by m − n alone, {vector_text(rel, 4)}, against the unturned k gives the "
             f"same {fmt_number(float(rel @ k), 4)}, and so would a query and a key at any two "
             f"positions {m - n} apart.", {"score": score}),
    )
    data = {"q": frozen_array(q), "k": frozen_array(k), "query_position": m, "key_position": n,
            "base": float(base), "d_head": d}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    d = 4
    q, k = rng.integers(-2, 3, size=d), rng.integers(-2, 3, size=d)
    while not (q[:2].any() and q[2:].any() and k[:2].any() and k[2:].any()):
        q, k = rng.integers(-2, 3, size=d), rng.integers(-2, 3, size=d)
    m = int(rng.integers(1, 6))
    n = int(rng.integers(0, 6))
    while n == m:
        n = int(rng.integers(0, 6))
    return build(q, k, m, n, float(rng.choice([10, 100, 10000])), seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(**SOURCE, seed=None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 3, "Frequencies, angles, turn q and k, then their score.", _make,
                    has_source=False)
