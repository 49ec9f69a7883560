"""Exercise "LayerNorm": normalise one token vector by hand, then scale and shift it.

    μ = mean(x),  σ = √(mean((x − μ)²)),  LN(x) = (x − μ)/σ · γ + β

ε (10⁻⁵ in practice) only guards against σ = 0 and is left out of the arithmetic.
Our standard example (the notes show LayerNorm only as a picture): x = [2, 4, 6, 8],
γ = [1, 1, 2, 0.5], β = [0, 1, 0, -1]:

    μ = 5,  σ² = (9 + 1 + 1 + 9)/4 = 5,  σ = 2.2361
    x̂ = [-1.342, -0.447, 0.447, 1.342]  ->  LN(x) = [-1.342, 0.553, 0.894, -0.329]

>>> SPEC.make(None).field("output").answer_text
'-1.342, 0.553, 0.894, -0.329'
"""
from __future__ import annotations

import numpy as np

from tfviz import reference
from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text

ID = "layernorm"
TITLE = "LayerNorm of one vector"
SOURCE = dict(x=(2, 4, 6, 8), gamma=(1, 1, 2, 0.5), beta=(0, 1, 0, -1))

MESSAGES = {
    "sample_var": ("You divided by d − 1 when averaging the squared deviations. LayerNorm "
                   "takes the plain mean over all d entries (divide by d)."),
    "variance": "That is the variance σ². The standard deviation is its square root.",
    "no_affine": ("This is the normalised vector x̂, before γ and β. Multiply each entry by "
                  "its γ and add its β."),
    "beta_first": "β was added before multiplying by γ. The order is x̂ · γ, then + β.",
    "no_center": "The mean was not subtracted: normalise x − μ, not x.",
    "by_variance": "You divided by σ² instead of σ (take the square root first).",
}


def sample_std_slip(x, gamma, beta) -> tuple[float, np.ndarray]:
    """The slip of dividing the variance by d − 1 (a sample variance): its σ and output.

    >>> sigma, out = sample_std_slip([1, 3], [1, 1], [0, 0])
    >>> round(sigma, 4), out.round(4).tolist()
    (1.4142, [-0.7071, 0.7071])
    """
    x = np.asarray(x, dtype=float)
    sigma = float(x.std(ddof=1))
    return sigma, (x - x.mean()) / sigma * np.asarray(gamma, float) + np.asarray(beta, float)


def build(x, gamma, beta, seed: int | None) -> Instance:
    x, gamma, beta = (np.asarray(v, dtype=float) for v in (x, gamma, beta))
    steps = reference.layer_norm(x, gamma, beta, eps=0.0)  # the exercise leaves ε out
    mu, sigma, xhat, out = float(steps.mean), float(steps.sigma), steps.normalized, steps.output
    s_sample, out_sample = sample_std_slip(x, gamma, beta)
    var = sigma**2
    fields = (
        answer_field("mean", "mean μ", mu),
        answer_field("std", "standard deviation σ", sigma,
                     {"sample_var": (s_sample, MESSAGES["sample_var"]),
                      "variance": (var, MESSAGES["variance"])}),
        answer_field("output", "LayerNorm output", out, {
            "sample_var": (out_sample, MESSAGES["sample_var"]),
            "no_affine": (xhat, MESSAGES["no_affine"]),
            "beta_first": ((xhat + beta) * gamma, MESSAGES["beta_first"]),
            "no_center": (x / sigma * gamma + beta, MESSAGES["no_center"]),
            "by_variance": ((x - mu) / var * gamma + beta, MESSAGES["by_variance"]),
        }),
    )
    d = len(x)
    prompt = (
        f"One token's vector entering a LayerNorm is x = {vector_text(x)} (d = {d}). The "
        f"layer's learned scale is γ = {vector_text(gamma)} and its shift is "
        f"β = {vector_text(beta)}.\n\n"
        "Find the mean μ, the standard deviation σ (average over all d entries), and the "
        "output (x − μ)/σ · γ + β. Leave out ε: it is tiny and only prevents dividing by zero.")
    dev = x - mu
    steps = (
        Step("Mean", r"\mu = \tfrac{1}{d}\textstyle\sum_i x_i",
             f"({' + '.join(fmt_number(v) for v in x)}) / {d} = {fmt_number(mu, 4)}.",
             {"mean": mu}),
        Step("Standard deviation", r"\sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i-\mu)^2}",
             f"Deviations {vector_text(dev, 4)}; squared {vector_text(dev**2, 4)}; their mean "
             f"is σ² = {fmt_number(var, 4)}, so σ = {fmt_number(sigma, 4)}.",
             {"variance": var, "std": sigma}),
        Step("Normalise", r"\hat x = (x - \mu)/\sigma",
             f"Each deviation divided by σ: x̂ = {vector_text(xhat, 4)}. Now the entries have "
             "mean 0 and standard deviation 1.", {"xhat": frozen_array(xhat)}),
        Step("Scale and shift", r"y = \gamma \odot \hat x + \beta",
             f"Entry by entry, γ·x̂ + β = {vector_text(out, 4)}. γ and β let the layer undo the "
             "normalisation where that helps.", {"output": frozen_array(out)}),
    )
    data = {"x": frozen_array(x), "gamma": frozen_array(gamma), "beta": frozen_array(beta)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    d = int(rng.integers(4, 6))
    x = rng.integers(-4, 7, size=d)
    while np.all(x == x[0]):
        x = rng.integers(-4, 7, size=d)
    gamma = rng.choice([-1, 0.5, 1, 2], size=d)
    beta = rng.integers(-2, 3, size=d)
    return build(x, gamma, beta, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE["x"], SOURCE["gamma"], SOURCE["beta"], None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 9, "Mean, standard deviation, normalise, then γ and β.", _make,
                    has_source=False)
