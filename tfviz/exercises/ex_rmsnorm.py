"""Exercise "RMSNorm": the norm of Llama, Mistral and Qwen, by hand on one token vector.

    RMS(x) = √(mean(x²) + ε),   y = x / RMS(x) · γ        (no mean taken away, no β)

Our standard example: x = [6, -4, 2, 2], γ = [1, 0.5, 2, -1] and ε = 1, a teaching ε (a real
model's is 10⁻⁶ or 10⁻⁵), large enough to change the answer, and chosen so that the root is
whole:

    mean(x²) = (36 + 16 + 4 + 4) / 4 = 15,   RMS = √(15 + 1) = 4
    x / 4 = [1.5, -1, 0.5, 0.5]   ->   y = [1.5, -0.5, 1, -0.5]

Slips it tells apart: the mean taken away as LayerNorm does (σ = √(12.75 + 1) = 3.708 instead
of 4), ε forgotten (√15 = 3.873), x divided by σ without centring it, the root forgotten,
the squares summed instead of averaged, γ left out.

>>> SPEC.make(None).field("output").answer_text
'1.5, -0.5, 1, -0.5'
"""
from __future__ import annotations

import numpy as np

from tfviz import reference
from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text

ID = "rmsnorm"
TITLE = "RMSNorm of one vector"
SOURCE = dict(x=(6, -4, 2, 2), gamma=(1, 0.5, 2, -1), eps=1.0)

MESSAGES = {
    "centred": ("You took the mean away first, as LayerNorm does. RMSNorm subtracts nothing: "
                "it squares x itself."),
    "sum_squares": "You added the squares up. RMSNorm takes their mean: divide the sum by d.",
    "no_eps": "ε is missing: add it to the mean of the squares before taking the root.",
    "no_root": ("The square root is missing: RMSNorm divides by √(mean(x²) + ε), not by "
                "mean(x²) + ε itself."),
    "by_std": ("You divided x by its standard deviation (the mean taken away inside the root). "
               "RMSNorm divides by the root mean square of x itself."),
    "no_gamma": "This is x / RMS(x), before γ. Multiply each entry by its γ.",
}


def slipped(x, gamma, eps: float) -> dict[str, tuple[float, float, np.ndarray]]:
    """(mean square, scale, output) as each slip computes them, by name.

    >>> round(slipped([1, 3], [1, 1], 0.0)["centred"][1], 4)   # the standard deviation
    1.0
    """
    x, gamma = np.asarray(x, dtype=float), np.asarray(gamma, dtype=float)
    d = len(x)
    ln = reference.layer_norm(x, gamma, eps=eps)  # the mean taken away: LayerNorm without β
    var, sigma = float(ln.sigma) ** 2 - eps, float(ln.sigma)
    right = reference.rms_norm(x, gamma, eps=eps)
    ms, rms = float(right.rms) ** 2 - eps, float(right.rms)
    no_eps = reference.rms_norm(x, gamma, eps=0.0)
    summed = float(np.sqrt(ms * d + eps))
    return {
        "centred": (var, sigma, ln.output),
        "sum_squares": (ms * d, summed, x / summed * gamma),
        "no_eps": (ms, float(no_eps.rms), no_eps.output),
        "no_root": (ms, ms + eps, x / (ms + eps) * gamma),
        "by_std": (ms, sigma, x / sigma * gamma),
        "no_gamma": (ms, rms, right.normalized),
    }


def build(x, gamma, eps: float, seed: int | None) -> Instance:
    x, gamma = (np.asarray(v, dtype=float) for v in (x, gamma))
    steps = reference.rms_norm(x, gamma, eps=eps)
    rms, xhat, out = float(steps.rms), steps.normalized, steps.output
    ms = float((x * x).mean())
    slips = slipped(x, gamma, eps)
    fields = (
        answer_field("mean_square", "mean of the squares, mean(x²)", ms,
                     {k: (slips[k][0], MESSAGES[k]) for k in ("centred", "sum_squares")}),
        answer_field("rms", "the scale RMS(x) = √(mean(x²) + ε)", rms,
                     {k: (slips[k][1], MESSAGES[k])
                      for k in ("centred", "sum_squares", "no_eps", "no_root")}),
        answer_field("output", "RMSNorm output y", out,
                     {k: (slips[k][2], MESSAGES[k])
                      for k in ("centred", "no_eps", "no_root", "by_std", "no_gamma")}),
    )
    d = len(x)
    prompt = (
        f"One token's vector entering an RMSNorm is x = {vector_text(x)} (d = {d}), the "
        f"layer's learned scale is γ = {vector_text(gamma)}, and its ε is {fmt_number(eps, 4)}: "
        "far larger than a real model's 10⁻⁶, so that you can see what ε does, and chosen so "
        "that the root comes out whole.\n\n"
        "Find the mean of the squares, the scale RMS(x) = √(mean(x²) + ε), and the output "
        "x / RMS(x) · γ. RMSNorm is LayerNorm without the centring: no mean is taken away "
        "and there is no β.")
    sq = x * x
    steps = (
        Step("Mean of the squares", r"\tfrac{1}{d}\textstyle\sum_i x_i^2",
             f"Square every entry, x itself (nothing is taken away): {vector_text(sq, 4)}; their "
             f"mean is ({' + '.join(fmt_number(v) for v in sq)}) / {d} = {fmt_number(ms, 4)}.",
             {"mean_square": ms}),
        Step("Root mean square", r"\mathrm{RMS}(x) = \sqrt{\tfrac{1}{d}\textstyle\sum_i x_i^2 "
             r"+ \epsilon}",
             f"Add ε and take the root: √({fmt_number(ms, 4)} + {fmt_number(eps, 4)}) = "
             f"{fmt_number(rms, 4)}. This one number is what the model's ln.hook_scale holds.",
             {"rms": rms}),
        Step("Normalise", r"\hat x = x / \mathrm{RMS}(x)",
             f"Divide every entry by it: x̂ = {vector_text(xhat, 4)}. The direction of x is kept; "
             "only its size changes (its mean is not moved to 0, unlike LayerNorm's).",
             {"xhat": frozen_array(xhat)}),
        Step("Scale", r"y = \gamma \odot \hat x",
             f"Entry by entry, γ·x̂ = {vector_text(out, 4)}. There is no β to add.",
             {"output": frozen_array(out)}),
    )
    data = {"x": frozen_array(x), "gamma": frozen_array(gamma), "eps": float(eps)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    while True:  # about one draw in three gives a whole root within ε = 0.5 … 3
        x = rng.integers(-4, 7, size=4)
        ms = float((x * x).mean())
        eps = float(np.ceil(np.sqrt(ms + 0.5)) ** 2 - ms)  # the next whole root, ε >= 0.5
        if x.mean() != 0 and len(set(x.tolist())) >= 3 and eps <= 3:
            break
    gamma = rng.choice([-1, 0.5, 1, 2], size=4)
    return build(x, gamma, eps, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE["x"], SOURCE["gamma"], SOURCE["eps"], None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 9, "Mean square, root, divide, then γ: no mean, no β.", _make,
                    has_source=False)
