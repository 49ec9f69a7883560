"""Exercise "direct logit attribution": two parts of the residual stream, one logit, by hand.

The final stream at the last position is the sum of what two parts wrote, x = a + b (a head's
output a, an MLP's output b). The model's final LayerNorm (β = 0 here) turned x into
(x − mean(x)) / s · γ, with s = its standard deviation, and the logit of the answer is that
vector dotted with the answer's column u of W_U. With s frozen at its value for x, each part
goes through on its own: share(a) = ((a − mean(a)) / s · γ) · u, and the two shares add up
to the logit.

Our own example: a = [2, 0, 1, -1], b = [1, -1, 2, 0], so x = [3, -1, 3, -1], its mean 1 and
s = √mean([2, -2, 2, -2]²) = 2; γ = [1, 2, 1, 0.5], u = [1, -1, 0.5, 2]:

    a − mean(a) = [1.5, -0.5, 0.5, -1.5]   share(a) = (1.5 + 1 + 0.25 − 1.5) / 2 = 0.625
    b − mean(b) = [0.5, -1.5, 1.5, -0.5]   share(b) = (0.5 + 3 + 0.75 − 0.5) / 2 = 1.875
    logit = 0.625 + 1.875 = 2.5 = LN(x) · u

Slips it tells apart: a part not centred (as if the norm were an RMSNorm), a part divided by
its own standard deviation instead of the frozen s, s left out, γ left out, and for the logit
the two shares as each of those slips adds them.

>>> SPEC.make(None).field("shares").answer_text
'0.625, 1.875'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text

ID = "dla-by-hand"
TITLE = "Direct logit attribution by hand"
SOURCE = dict(a=(2, 0, 1, -1), b=(1, -1, 2, 0), gamma=(1, 2, 1, 0.5), u=(1, -1, 0.5, 2))

MESSAGES = {
    "no_center": ("You did not take each part's mean away. This final norm is a LayerNorm: it "
                  "centres x, and since mean(a + b) = mean(a) + mean(b), each part is centred "
                  "on its own before it is divided by s."),
    "own_scale": ("You divided each part by its own standard deviation. The norm divided x by "
                  "one number, s, the standard deviation of the whole x; freezing s means every "
                  "part is divided by that same s, which is what makes the shares add up."),
    "unscaled": "You left s out: divide each centred part by the frozen scale s.",
    "no_gamma": "You left γ out: multiply each normalised part by γ, entry by entry, before u.",
}


def share(part, gamma, u, scale: float, *, centre: bool = True) -> float:
    """((part − mean(part)) / scale · γ) · u: one part's direct share of the logit.

    >>> share([2, 0, 1, -1], [1, 2, 1, 0.5], [1, -1, 0.5, 2], 2.0)
    0.625
    """
    p = np.asarray(part, dtype=float)
    p = p - p.mean() if centre else p
    return float((p / scale * np.asarray(gamma, dtype=float)) @ np.asarray(u, dtype=float))


def slipped(a, b, gamma, u, s: float) -> dict[str, tuple[float, float]]:
    """(share of a, share of b) as each slip computes them, by name."""
    ones = np.ones(len(gamma))
    out = {
        "no_center": tuple(share(p, gamma, u, s, centre=False) for p in (a, b)),
        "own_scale": tuple(share(p, gamma, u, float(np.std(p))) for p in (a, b)),
        "unscaled": tuple(share(p, gamma, u, 1.0) for p in (a, b)),
        "no_gamma": tuple(share(p, ones, u, s) for p in (a, b)),
    }
    return out


def build(a, b, gamma, u, seed: int | None) -> Instance:
    a, b, gamma, u = (np.asarray(v, dtype=float) for v in (a, b, gamma, u))
    x = a + b
    s = float(np.std(x))  # the final norm's scale at this position (its ε left out)
    shares = np.array([share(a, gamma, u, s), share(b, gamma, u, s)])
    logit = float(shares.sum())
    slips = slipped(a, b, gamma, u, s)
    fields = (
        answer_field("shares", "the two shares: share(a), share(b)", shares,
                     {k: (v, MESSAGES[k]) for k, v in slips.items()}),
        answer_field("logit", "the logit, their sum", logit,
                     {k: (sum(v), MESSAGES[k]) for k, v in slips.items()}),
    )
    d = len(x)
    prompt = (
        f"At the last position the residual stream is x = a + b: a head wrote a = "
        f"{vector_text(a)} and an MLP wrote b = {vector_text(b)} (d = {d}). The model's final "
        f"LayerNorm divided x by its standard deviation s = {fmt_number(s, 4)} (the trace's "
        f"ln_final.hook_scale), with γ = {vector_text(gamma)} and β = 0, and the answer's "
        f"column of the unembedding is u = {vector_text(u)}.\n\n"
        "Freeze s and find each part's direct share of the answer's logit, "
        "((part − mean(part)) / s · γ) · u, then the logit, their sum. (Check: it equals "
        "LayerNorm(x) · u.)")
    centred = {name: p - p.mean() for name, p in (("a", a), ("b", b))}
    steps = (
        Step("Centre each part", r"\tilde a = a - \bar a,\quad \tilde b = b - \bar b",
             f"mean(a) = {fmt_number(a.mean(), 4)} and mean(b) = {fmt_number(b.mean(), 4)}, so "
             f"ã = {vector_text(centred['a'], 4)} and b̃ = {vector_text(centred['b'], 4)}. "
             f"They add up to x − mean(x) = {vector_text(x - x.mean(), 4)}: centring is linear.",
             {"a_centred": frozen_array(centred["a"]), "b_centred": frozen_array(centred["b"])}),
        Step("Divide by the frozen scale, times γ", r"\tilde a / s \odot \gamma",
             f"With s = {fmt_number(s, 4)} for both: {vector_text(centred['a'] / s * gamma, 4)} "
             f"and {vector_text(centred['b'] / s * gamma, 4)}.", {}),
        Step("Dot with u", r"\mathrm{share}(a) = (\tilde a / s \odot \gamma) \cdot u",
             f"share(a) = {fmt_number(shares[0], 4)}, share(b) = {fmt_number(shares[1], 4)}.",
             {"shares": frozen_array(shares)}),
        Step("Add them up", r"\mathrm{logit} = \mathrm{share}(a) + \mathrm{share}(b) "
             r"= \mathrm{LN}(x) \cdot u",
             f"{fmt_number(shares[0], 4)} + {fmt_number(shares[1], 4)} = {fmt_number(logit, 4)}, "
             f"the same as LayerNorm(x) · u = {vector_text((x - x.mean()) / s * gamma, 4)} · u.",
             {"logit": logit}),
    )
    data = {"a": frozen_array(a), "b": frozen_array(b), "gamma": frozen_array(gamma),
            "u": frozen_array(u), "s": s}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    while True:  # a whole or half s, and parts whose means are not 0 (centring shows)
        a, b = rng.integers(-3, 4, size=4), rng.integers(-3, 4, size=4)
        s = float(np.std(a + b))
        if s > 0 and (2 * s).is_integer() and a.mean() != 0 and b.mean() != 0:
            break
    gamma = rng.choice([-1, 0.5, 1, 2], size=4)
    u = rng.choice([-2, -1, -0.5, 0.5, 1, 2], size=4)
    return build(a, b, gamma, u, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE["a"], SOURCE["b"], SOURCE["gamma"], SOURCE["u"], None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 25, "Centre each part, divide by the frozen s, γ, then · u.", _make,
                    has_source=False)
