"""Exercise "how are you": two masked decoder heads, concatenated before W^O.

Source numbers: each word is its in-vector followed by its out-vector,
how = [-1,-1, 1,1], are = [1,1, -1,-1], you = [-1,2, 1,-2]. Both heads take the query from
dimensions 1 and 3 and the key from 2 and 4; head 1's value is the in-vector (1–2),
head 2's the out-vector (3–4). For "are", which may see "how" and itself:

    q = [1, -1];  k_how = [-1, 1], k_are = [1, -1]  ->  scores -2, 2
    ÷√2 -> -1.4142, 1.4142 -> softmax 0.0558, 0.9442 (and 0 for "you")
    head 1: 0.0558·[-1,-1] + 0.9442·[1,1] = [0.8884, 0.8884];  head 2 = [-0.8884, -0.8884]
    concatenated: [0.888, 0.888, -0.888, -0.888]

>>> SPEC.make(None).field("concat").answer_text
'0.888, 0.888, -0.888, -0.888'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.attention import select, solve_multihead
from tfviz.exercises.core import (Arrows, ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  frozen_array)
from tfviz.exercises.slips import slip_messages, slipped_attention
from tfviz.exercises.worked import head_steps, vector_text

ID = "how-are-you"
TITLE = "How are you: two masked heads, concatenated"
WORDS = ("hi", "you", "they", "are", "am", "how", "why", "there", "who", "what")
SOURCE = {"how": ((-1, -1), (1, 1)), "are": ((1, 1), (-1, -1)), "you": ((-1, 2), (1, -2))}
Q_DIMS, K_DIMS, V_DIMS = (0, 2), (1, 3), ((0, 1), (2, 3))
SLIP_NAMES = ("no_scale", "divide_dk", "wrong_axis", "no_mask")


def build(tokens, in_vecs, out_vecs, focus: int, seed: int | None) -> Instance:
    X = np.concatenate([np.asarray(in_vecs, float), np.asarray(out_vecs, float)], axis=1)  # (n, 4)
    heads = [(select(4, Q_DIMS), select(4, K_DIMS), select(4, v)) for v in V_DIMS]
    right = solve_multihead(X, heads, causal=True)
    name = tokens[focus]
    msg = slip_messages(2, name)
    slips = {s: [slipped_attention(X, *h, causal=True, slip=s) for h in heads]
             for s in (*SLIP_NAMES, "keys_not_values")}

    def per_head(i, names):
        return {s: (slips[s][i].output[focus], msg[s]) for s in names}

    concat_mistakes = {s: (np.concatenate([r.output[focus] for r in slips[s]]), msg[s])
                       for s in (*SLIP_NAMES, "keys_not_values")}
    concat_mistakes["heads_swapped"] = (
        np.concatenate([r.output[focus] for r in right.heads[::-1]]),
        "The two halves are in the wrong order: the concatenation puts head 1's output first, "
        "then head 2's.")
    fields = (
        answer_field("weights", f"attention weights of “{name}” (one per word, 0 if hidden)",
                     right.heads[0].weights[focus],
                     {s: (slips[s][0].weights[focus], msg[s]) for s in SLIP_NAMES}),
        answer_field("head1", f"head 1 output for “{name}”", right.heads[0].output[focus],
                     per_head(0, (*SLIP_NAMES, "keys_not_values"))),
        answer_field("head2", f"head 2 output for “{name}”", right.heads[1].output[focus],
                     per_head(1, (*SLIP_NAMES, "keys_not_values"))),
        answer_field("concat", f"multi-head output for “{name}” before W^O",
                     right.concat[focus], concat_mistakes),
    )
    rows = "\n".join(f"- “{t}”: in {vector_text(a)}, out {vector_text(b)}"
                     for t, a, b in zip(tokens, in_vecs, out_vecs))
    prompt = (
        f"A transformer decoder is trained on the target “{' '.join(tokens)}” (leave out the "
        "start-of-sequence token). Each word's input vector is its in-vector followed by its "
        f"out-vector, four numbers in all:\n\n{rows}\n\n"
        "There are h = 2 heads using scaled dot-product attention with the causal mask. In both "
        "heads the query is dimensions 1 and 3 of the input and the key is dimensions 2 and 4. "
        "Head 1's value is the in-vector, head 2's is the out-vector.\n\n"
        f"What does the multi-head attention produce for “{name}”, before the output "
        "projection W^O? Give the attention weights, each head's output, and the "
        "concatenation (head 1 first).")
    steps = head_steps(right.heads[0], tokens, focus, "head 1")
    steps.append(Step("Head 2", r"z^{(2)}_i = \textstyle\sum_j \alpha_{ij} v^{(2)}_j",
                      "Head 2 has the same queries and keys, hence the same weights; only its "
                      f"values differ. Output: {vector_text(right.heads[1].output[focus], 4)}.",
                      {"output": frozen_array(right.heads[1].output)}))
    steps.append(Step("Concatenate", r"\mathrm{Concat}(z^{(1)}, z^{(2)})",
                      "Write head 1's output and then head 2's side by side: "
                      f"{vector_text(right.concat[focus], 4)}. W^O would come next.",
                      {"concat": frozen_array(right.concat)}))
    data = {"X": frozen_array(X), "heads": tuple(tuple(frozen_array(w) for w in h) for h in heads)}
    pattern = np.stack([h.weights for h in right.heads])  # (2, n, n)
    return Instance(ID, TITLE, prompt, data, fields, tuple(steps), seed,
                    Arrows(tuple(tokens), frozen_array(pattern), focus), tokens=tuple(tokens),
                    focus=focus)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n = int(rng.integers(3, 5))  # 3 or 4 words
    tokens = tuple(str(w) for w in rng.choice(WORDS, size=n, replace=False))
    vecs = rng.integers(-2, 3, size=(n, 4))
    focus = int(rng.integers(1, n - 1))  # a word with something before and after it
    return build(tokens, vecs[:, :2], vecs[:, 2:], focus, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        words = tuple(SOURCE)
        return build(words, [SOURCE[w][0] for w in words], [SOURCE[w][1] for w in words], 1, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 7, "Two masked decoder heads, concatenated before W^O.", _make)
