"""Lesson 20: the hand-calculation exercises of the sources, one number each."""

from __future__ import annotations

import math

from ..spec import KnownMistake, NumericQuestion, Question, softmax, softmax_first

R2 = math.sqrt(2)  # sqrt(d_k) in the two worked exercises, where d_k = 2

PRACTICE: tuple[Question, ...] = (
    NumericQuestion(
        id="flying-arrows-output",
        lesson=20,
        prompt="Encoder input {flying, arrows} with embeddings [0,1,1,1,1,0] and "
               "[1,1,0,-1,-1,1]. Dims 1-2 give the query, dims 3-4 the key, dims 5-6 the "
               "value. With scaled dot-product attention (d_k = 2), what is the FIRST "
               "component of the output for 'flying'?",
        answer=(2 * softmax_first(1 / math.sqrt(2), -1 / math.sqrt(2)) - 1),
        tolerance=0.01,
        unit="a decimal",
        explanation="q = [0,1]; keys [1,1] and [0,-1] give scores 1 and -1, scaled to ±0.707; "
                    "softmax ≈ (0.804, 0.196). Output = 0.804·[1,0] + 0.196·[-1,1] ≈ "
                    "[0.609, 0.196].",
        mistakes=(
            KnownMistake(2 * softmax_first(1, -1) - 1,
                         "The ÷√d_k step is missing: softmax(1, -1) instead of "
                         "softmax(0.707, -0.707)."),
            KnownMistake(2 * softmax_first(1 / 2, -1 / 2) - 1,
                         "That divides by d_k = 2 instead of √2."),
            KnownMistake(1.0, "That takes only flying's own value; attention mixes both "
                              "values by their weights."),
        ),
    ),
    NumericQuestion(
        id="how-are-you-output",
        lesson=20,
        prompt="Decoder, ground truth 'how are you', h = 2, causal mask, start token ignored. "
               "Embeddings (in-vector then out-vector): how = (-1,-1, 1,1), are = (1,1, -1,-1), "
               "you = (-1,2, 1,-2). Both heads: dims 1 and 3 give the query, dims 2 and 4 the "
               "key; head 1's value is the in-vector, head 2's the out-vector. What is the "
               "FIRST component of the multi-head output for 'are' (before W^O)?",
        answer=2 * softmax_first(2 / math.sqrt(2), -2 / math.sqrt(2)) - 1,
        tolerance=0.01,
        unit="a decimal",
        explanation="'are' may see 'how' and itself. q = (1,-1); keys (-1,1) and (1,-1) give "
                    "-2 and 2, scaled ±1.414; weights ≈ (0.056, 0.944). Head 1: "
                    "0.056·(-1,-1) + 0.944·(1,1) ≈ (0.888, 0.888); head 2 is the negative, so "
                    "the output is ≈ (0.888, 0.888, -0.888, -0.888).",
        mistakes=(
            KnownMistake(2 * softmax_first(2, -2) - 1,
                         "The ÷√d_k step is missing: softmax(2, -2) instead of "
                         "softmax(1.414, -1.414)."),
            KnownMistake(
                # weights over (how, are, you) dot head 1's first value components (-1, 1, -1)
                sum(w * v for w, v in zip(softmax(-2 / R2, 2 / R2, 4 / R2), (-1, 1, -1))),
                "'you' was included: in a decoder 'are' cannot see the later token 'you'."),
        ),
    ),
)
