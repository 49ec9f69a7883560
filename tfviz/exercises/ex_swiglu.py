"""Exercise "SwiGLU": the gated feed-forward block of Llama, Mistral and Qwen, for one token.

    g = x W_gate,   u = x W_up,   h = SiLU(g) ⊙ u,   y = h W_down,   SiLU(z) = z · σ(z)

(transformers' gate_proj, up_proj and down_proj; TransformerLens calls W_up W_in.) Our standard
example, d = 2 and d_ff = 3: x = [1, -1],

    W_gate = [[1, 0, 1], [-1, 0, 2]]    ->  g = [2, 0, -1]
    W_up   = [[1, 2, 0], [0, -1, -2]]   ->  u = [1, 3, 2]
    SiLU(g) = [2·σ(2), 0, -σ(-1)] = [1.7616, 0, -0.2689]
    h = [1.7616, 0, -0.5379]
    W_down = [[1, 0], [2, 1], [1, -1]]
    y = 1.7616·[1, 0] + 0·[2, 1] - 0.5379·[1, -1] = [1.2237, 0.5379]

>>> SPEC.make(None).field("output").answer_text
'1.224, 0.538'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import dot_text, vector_text
from tfviz.reference import gated_ffn, silu

ID = "swiglu"
TITLE = "SwiGLU feed-forward for one token"
SOURCE = dict(x=(1, -1), W_gate=((1, 0, 1), (-1, 0, 2)), W_up=((1, 2, 0), (0, -1, -2)),
              W_down=((1, 0), (2, 1), (1, -1)))

MESSAGES = {
    "swapped": "That is x W_up, the up projection. The gate is x W_gate.",
    "sigmoid": ("You used the sigmoid σ(g). SiLU is g · σ(g): multiply each sigmoid by its own "
                "gate value."),
    "silu_on_up": ("SiLU went onto the up projection. It belongs on the gate: SiLU(x W_gate), "
                   "and x W_up passes through unbent."),
    "silu_after": ("SiLU was applied after multiplying. Bend the gate first, SiLU(g), then "
                   "multiply by u."),
    "no_up": "You stopped at SiLU(g). Each entry still has to be multiplied by its u.",
    "no_gate": ("The gate is missing: h is the up projection u let through as it is. Multiply "
                "each u by SiLU(g) of the same unit."),
    "no_activation": ("SiLU is missing: you multiplied g by u directly. The gate goes through "
                      "SiLU first."),
    "no_down": ("These are the d_ff numbers of h. The block still multiplies h by W_down to "
                "come back to the model's width d."),
}
HIDDEN_SLIPS = ("sigmoid", "silu_on_up", "silu_after", "no_up", "no_gate", "no_activation")


def sigmoid(z) -> np.ndarray:
    """σ(z) = 1 / (1 + e^−z): [0, 2] -> [0.5, 0.8808]."""
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=float)))


def slipped_hidden(g, u) -> dict[str, np.ndarray]:
    """The hidden vector h each slip gives, by name, from the gate g and up projection u.

    >>> slipped_hidden([2.0], [1.0])["silu_on_up"].round(4).tolist()   # 2 · SiLU(1)
    [1.4621]
    """
    g, u = np.asarray(g, dtype=float), np.asarray(u, dtype=float)
    return {"sigmoid": sigmoid(g) * u, "silu_on_up": g * silu(u), "silu_after": silu(g * u),
            "no_up": silu(g), "no_gate": u, "no_activation": g * u}


def build(x, W_gate, W_up, W_down, seed: int | None) -> Instance:
    x, W_gate, W_up, W_down = (np.asarray(a, dtype=float) for a in (x, W_gate, W_up, W_down))
    s = gated_ffn(x, W_gate, W_up, W_down, "swiglu")
    g, u, h, y = s.gate, s.up, s.hidden, s.output
    act = silu(g)
    hidden_slips = slipped_hidden(g, u)
    fields = (
        answer_field("gate", "gate g = x W_gate", g, {"swapped": (u, MESSAGES["swapped"])}),
        answer_field("act", "SiLU(g)", act, {"sigmoid": (sigmoid(g), MESSAGES["sigmoid"]),
                                             "silu_on_up": (silu(u), MESSAGES["silu_on_up"])}),
        answer_field("hidden", "gated hidden vector h = SiLU(g) ⊙ u", h,
                     {k: (hidden_slips[k], MESSAGES[k]) for k in HIDDEN_SLIPS}),
        answer_field("output", "block output y = h W_down", y,
                     {**{k: (hidden_slips[k] @ W_down, MESSAGES[k]) for k in HIDDEN_SLIPS},
                      "no_down": (h, MESSAGES["no_down"])}),
    )
    d, d_ff = W_gate.shape
    prompt = (
        f"A SwiGLU feed-forward block (d = {d}, d_ff = {d_ff}) reads one token's vector "
        f"x = {vector_text(x)}. Its three matrices are\n\n"
        f"- W_gate ({d}×{d_ff}), rows {', '.join(vector_text(r) for r in W_gate)}\n"
        f"- W_up ({d}×{d_ff}), rows {', '.join(vector_text(r) for r in W_up)}\n"
        f"- W_down ({d_ff}×{d}), rows {', '.join(vector_text(r) for r in W_down)}\n\n"
        "Compute the gate g = x W_gate, bend it with SiLU(z) = z · σ(z) = z / (1 + e^−z), "
        "multiply it unit by unit with the up projection u = x W_up to get h, and bring h "
        "back to d numbers with W_down. No biases.")
    steps = (
        Step("Gate and up projections", r"g = x\,W_{gate},\quad u = x\,W_{up}",
             "Multiply x by each column: g = "
             + "; ".join(dot_text(x, c) for c in W_gate.T) + f", so g = {vector_text(g)}; "
             "u = " + "; ".join(dot_text(x, c) for c in W_up.T) + f", so u = {vector_text(u)}.",
             {"gate": frozen_array(g), "up": frozen_array(u)}),
        Step("SiLU of the gate", r"\mathrm{SiLU}(g) = g \cdot \sigma(g) = g / (1 + e^{-g})",
             f"σ(g) = {vector_text(sigmoid(g), 4)}; times g: SiLU(g) = {vector_text(act, 4)}. "
             "A large positive gate lets almost all of itself through, a large negative one almost "
             "nothing, and SiLU(0) = 0.",
             {"act": frozen_array(act)}),
        Step("Gate the values", r"h = \mathrm{SiLU}(g) \odot u",
             f"Unit by unit, SiLU(g)·u = {vector_text(h, 4)}. Each unit's gate decides how much "
             "of its own value u gets through.", {"hidden": frozen_array(h)}),
        Step("Down projection", r"y = h\,W_{down}",
             "Multiply h by each column of W_down: "
             + "; ".join(f"h · {vector_text(c)} = {fmt_number(float(h @ c), 4)}" for c in W_down.T)
             + f". So y = {vector_text(y, 4)}: d = {d} numbers again, which the block adds to the "
             "residual stream.",
             {"output": frozen_array(y)}),
    )
    data = {"x": frozen_array(x), "W_gate": frozen_array(W_gate), "W_up": frozen_array(W_up),
            "W_down": frozen_array(W_down)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    d, d_ff = 2, 3
    x = rng.integers(-2, 3, size=d)
    while not x.any():
        x = rng.integers(-2, 3, size=d)
    W_gate, W_up = rng.integers(-1, 2, size=(d, d_ff)), rng.integers(-1, 2, size=(d, d_ff))
    W_down = rng.integers(-1, 3, size=(d_ff, d))
    return build(x, W_gate, W_up, W_down, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(**SOURCE, seed=None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 10, "Gate, SiLU, gate the up projection, then W_down.", _make,
                    has_source=False)
