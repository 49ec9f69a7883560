"""Exercise "Thinking Machines": from two scores to the output of one word.

Source numbers: for "Thinking", q₁·k₁ = 112 and q₁·k₂ = 96 with d_k = 64, so √d_k = 8:

    112 / 8 = 14,  96 / 8 = 12
    softmax(14, 12) = (1 / (1 + e^-2), e^-2 / (1 + e^-2)) = (0.8808, 0.1192)
    z₁ = 0.8808·v₁ + 0.1192·v₂

The notes give no numbers for the value vectors, so we pick short ones:
v₁ = [1, 0, 2], v₂ = [3, 2, -1]  ->  z₁ = [1.238, 0.238, 1.642].

>>> SPEC.make(None).field("weights").answer_text
'0.881, 0.119'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.slips import slip_messages
from tfviz.exercises.worked import vector_text
from tfviz.reference import softmax

ID = "thinking-machines"
TITLE = "Thinking Machines: scale, softmax, mix"
SOURCE_SCORES = (112, 96)
SOURCE_VALUES = ((1, 0, 2), (3, 2, -1))  # ours: the notes leave the values as boxes
WORDS = ("Thinking", "Machines", "learn")


def build(scores, d_k: int, values, seed: int | None) -> Instance:
    scores = np.asarray(scores, dtype=float)
    values = np.asarray(values, dtype=float)  # (n, 3)
    words = WORDS[: len(scores)]
    root = np.sqrt(d_k)
    scaled = scores / root
    weights = softmax(scaled)
    output = weights @ values
    msg = slip_messages(d_k, words[0])
    by_dk = softmax(scores / d_k)
    raw = softmax(scores)
    total = scaled.sum()
    linear = scaled / total if total != 0 else np.full_like(scaled, np.nan)
    no_exp = ("The scores were divided by their sum without exponentiating them first. "
              "Softmax takes e to the power of each score, then divides by the total of those.")
    no_softmax = ("The scaled scores went straight into the sum. They must pass through the "
                  "softmax first, so that the weights are positive and add up to 1.")
    fields = (
        answer_field("scaled", "scaled scores", scaled,
                     {"no_scale": (scores, msg["no_scale_scores"]),
                      "divide_dk": (scores / d_k, msg["divide_dk"])}),
        answer_field("weights", "attention weights", weights,
                     {"no_scale": (raw, msg["no_scale"]), "divide_dk": (by_dk, msg["divide_dk"]),
                      "no_exp": (linear, no_exp)}),
        answer_field("output", f"output z for “{words[0]}”", output,
                     {"no_scale": (raw @ values, msg["no_scale"]),
                      "divide_dk": (by_dk @ values, msg["divide_dk"]),
                      "no_exp": (linear @ values, no_exp),
                      "no_softmax": (scaled @ values, no_softmax)}),
    )
    pairs = ", ".join(f"q1·k{i + 1} = {fmt_number(s)}" for i, s in enumerate(scores))
    vals = "\n".join(f"- v{i + 1} = {vector_text(v)}" for i, v in enumerate(values))
    prompt = (
        f"Self-attention is working out the new vector for “{words[0]}” in "
        f"“{' '.join(words)}”. The dot products of its query with the keys are {pairs}. "
        f"Queries and keys have d_k = {d_k} entries. The value vectors, cut down to their "
        f"first three entries to keep the arithmetic short, are:\n\n{vals}\n\n"
        "Find the scaled scores, the softmax weights and the output z (three numbers).")
    e = np.exp(scaled - scaled.max())
    steps = (
        Step("Scale", r"s / \sqrt{d_k}",
             f"√{d_k} = {fmt_number(root)}, so the scores become {vector_text(scaled, 4)}.",
             {"scaled": frozen_array(scaled)}),
        Step("Softmax", r"\alpha_j = e^{s_j} / \textstyle\sum_{j'} e^{s_{j'}}",
             "Only differences between scores matter: subtract the largest one and exponentiate"
             f", giving {vector_text(e, 4)}; divide by their sum {fmt_number(e.sum(), 4)} to get "
             f"{vector_text(weights, 4)}.",
             {"weights": frozen_array(weights)}),
        Step("Weighted sum of values", r"z = \textstyle\sum_j \alpha_j v_j",
             " + ".join(f"{fmt_number(a, 4)}·{vector_text(v)}" for a, v in zip(weights, values))
             + f" = {vector_text(output, 4)}. The bigger weight pulls z towards that value.",
             {"output": frozen_array(output)}),
    )
    data = {"scores": frozen_array(scores), "d_k": d_k, "values": frozen_array(values)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed, tokens=tuple(words))


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    root = int(rng.integers(2, 9))  # d_k is a perfect square, so √d_k is a whole number
    n = int(rng.integers(2, 4))
    scaled = rng.choice(np.arange(-3, 6), size=n, replace=False)
    values = rng.integers(-3, 4, size=(n, 3))
    return build(scaled * root, root * root, values, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_SCORES, 64, SOURCE_VALUES, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 5, "From two dot products to weights and the output vector.",
                    _make)
