"""Exercise "flying arrows": one encoder head, scaled dot product, by hand.

Source numbers: "flying" = [0,1,1,1,1,0], "arrows" = [1,1,0,-1,-1,1]; the query takes
dimensions 1–2, the key 3–4, the value 5–6. For "flying":

    q = [0, 1];  k = [1, 1] and [0, -1];  v = [1, 0] and [-1, 1]
    scores 1 and -1  ->  ÷√2: 0.7071, -0.7071  ->  softmax 0.8044, 0.1956
    output 0.8044·[1, 0] + 0.1956·[-1, 1] = [0.6089, 0.1956]

>>> SPEC.make(None).field("output").answer_text
'0.609, 0.196'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.attention import select, solve_attention
from tfviz.exercises.core import (Arrows, ExerciseSpec, Instance, answer_field, draw_clean,
                                  frozen_array)
from tfviz.exercises.slips import selection_text, slip_messages, slipped_attention
from tfviz.exercises.worked import head_steps, vector_text

ID = "flying-arrows"
TITLE = "Flying arrows: one attention head by hand"
WORDS = ("flying", "arrows", "time", "fruit", "like", "bananas", "bees", "sing", "cold", "tea")
SOURCE_X = ((0, 1, 1, 1, 1, 0), (1, 1, 0, -1, -1, 1))
SOURCE_DIMS = ((0, 1), (2, 3), (4, 5))  # query, key, value (0-based)


def build(tokens, X, dims, focus: int, seed: int | None) -> Instance:
    X = np.asarray(X, dtype=float)
    d_in = X.shape[1]
    W = [select(d_in, d) for d in dims]
    right = solve_attention(X, *W)
    slips = {s: slipped_attention(X, *W, slip=s)
             for s in ("no_scale", "divide_dk", "wrong_axis", "keys_not_values")}
    msg = slip_messages(right.d_k, tokens[focus])
    name = tokens[focus]

    def mistakes(attr, names):
        said = {**msg, "no_scale": msg["no_scale_scores"]} if attr == "scaled" else msg
        return {s: (getattr(slips[s], attr)[focus], said[s]) for s in names}

    fields = (
        answer_field("scores", f"dot products q·k for “{name}”", right.scores[focus]),
        answer_field("scaled", f"scaled scores for “{name}”", right.scaled[focus],
                     mistakes("scaled", ["no_scale", "divide_dk"])),
        answer_field("weights", f"attention weights of “{name}”", right.weights[focus],
                     mistakes("weights", ["no_scale", "divide_dk", "wrong_axis"])),
        answer_field("output", f"self-attention output for “{name}”", right.output[focus],
                     mistakes("output", ["no_scale", "divide_dk", "wrong_axis",
                                         "keys_not_values"])),
    )
    rows = "\n".join(f"- “{t}”: {vector_text(x)}" for t, x in zip(tokens, X))
    q, k, v = (selection_text(d) for d in dims)
    prompt = (
        f"An encoder reads the {len(tokens)} words below; each comes in as a vector of "
        f"{d_in} numbers.\n\n{rows}\n\n"
        f"One attention head builds its query from {q} of a word's vector, its key from {k} "
        f"and its value from {v} (the weight matrices just copy those numbers). It uses "
        "scaled dot-product attention and no mask.\n\n"
        f"Work out the head's output for “{name}”: the dot products, the scaled scores, "
        "the attention weights, and the output vector.")
    data = {"X": frozen_array(X), "W_q": frozen_array(W[0]), "W_k": frozen_array(W[1]),
            "W_v": frozen_array(W[2])}
    return Instance(ID, TITLE, prompt, data, fields, tuple(head_steps(right, tokens, focus)), seed,
                    Arrows(tuple(tokens), frozen_array(right.weights[None]), focus),
                    tokens=tuple(tokens), focus=focus)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n = int(rng.integers(2, 4))  # 2 or 3 words
    tokens = tuple(str(w) for w in rng.choice(WORDS, size=n, replace=False))
    X = rng.integers(-2, 3, size=(n, 6))  # small integers, d_in = 6
    order = rng.permutation(3)  # which 2-dim slice is query, key, value
    dims = tuple(SOURCE_DIMS[i] for i in order)
    return build(tokens, X, dims, int(rng.integers(0, n)), seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(("flying", "arrows"), SOURCE_X, SOURCE_DIMS, 0, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 5, "One encoder head: scores, scale, softmax, weighted values.",
                    _make)
