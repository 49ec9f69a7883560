"""Lessons 4-6: soft lookup, self-attention and the sqrt(d_k) scale."""

from __future__ import annotations

import math

from ..spec import KnownMistake, NumericQuestion, Question, choice, softmax, softmax_first

ATTENTION: tuple[Question, ...] = (
    choice(
        id="soft-lookup",
        lesson=4,
        prompt="A hash table returns the value stored under the one key that matches the query. "
               "What does an attention layer return for a query?",
        right="A weighted average of all values, weighted by how well each key matches",
        explanation="Attention is a soft lookup: the query is compared with every key, the "
                    "softmax turns the scores into weights, and the result blends every value by "
                    "its weight.",
        wrong={
            "The value of the single best-matching key":
                "That would be a hard lookup (an argmax). The softmax gives every key some "
                "positive weight, which also keeps the operation differentiable.",
            "The key that best matches the query":
                "Keys only decide the weights; what gets mixed and returned are the values.",
            "The sum of all values with equal weight":
                "Equal weights would ignore the query, so every query would get the same answer. "
                "The weights depend on how well each key matches the query and add up to 1: a "
                "weighted average, not a plain sum.",
        },
    ),
    choice(
        id="attention-weight-properties",
        lesson=4,
        prompt="For one query, which is true of the attention weights over all keys (no mask)?",
        right="Each is positive and together they sum to 1",
        explanation="The weights come from a softmax: exp of anything is positive, and dividing "
                    "by the total makes them sum to 1, so the output is a convex mix of values.",
        wrong={
            "They can be negative when a key points away from the query":
                "The raw score q·k can be negative, but exp(score) never is; a negative score "
                "just becomes a small positive weight.",
            "They sum to the number of keys":
                "The softmax divides by the total, so the weights always add up to exactly 1, "
                "however many keys there are.",
            "Exactly one of them is 1, the rest are 0":
                "That is a one-hot choice; the softmax only gets close to it when one score is "
                "far above the others.",
        },
    ),
    NumericQuestion(
        id="thinking-machines-weight",
        lesson=5,
        prompt="For 'Thinking Machines', the query of 'Thinking' scores 112 against its own key "
               "and 96 against the key of 'Machines'. With d_k = 64 and scaled dot-product "
               "attention, what weight does 'Thinking' put on itself?",
        answer=softmax_first(112 / math.sqrt(64), 96 / math.sqrt(64)),
        tolerance=0.005,
        unit="a probability between 0 and 1, e.g. 0.25",
        explanation="Divide by √64 = 8 to get 14 and 12, then softmax: e^14 / (e^14 + e^12) = "
                    "1 / (1 + e^-2) ≈ 0.88, leaving ≈ 0.12 for 'Machines'.",
        mistakes=(
            KnownMistake(softmax_first(112, 96),
                         "Without the ÷√d_k step, softmax(112, 96) is practically 1: forgot the "
                         "scale."),
            KnownMistake(softmax_first(112 / 64, 96 / 64),
                         "That divides by d_k = 64 instead of √d_k = 8."),
            KnownMistake(112 / (112 + 96),
                         "That divides the score by the sum of scores; attention uses a softmax "
                         "(exponentials) instead."),
        ),
    ),
    NumericQuestion(
        id="scaled-score",
        lesson=5,
        prompt="A query and a key of size d_k = 64 have dot product 112. What score goes into "
               "the softmax in scaled dot-product attention?",
        answer=112 / math.sqrt(64),
        tolerance=0.01,
        unit="a number",
        explanation="The score is q·k / √d_k = 112 / 8 = 14.",
        mistakes=(
            KnownMistake(112 / 64, "That divides by d_k; the scale is the square root, √64 = 8."),
            KnownMistake(112, "That is the raw dot product; the scale step is missing."),
        ),
    ),
    choice(
        id="score-matrix-shape",
        lesson=5,
        prompt="X holds n = 10 token vectors of size d = 512, and W^Q, W^K are 512 × 64. What is "
               "the shape of the score matrix Q Kᵀ = (X W^Q)(X W^K)ᵀ?",
        right="10 × 10",
        explanation="Q and K are both 10 × 64; Q Kᵀ is (10 × 64)(64 × 10) = 10 × 10: one score "
                    "for every (query token, key token) pair.",
        wrong={
            "64 × 64": "64 × 64 would be Qᵀ K, which sums over tokens instead of features.",
            "10 × 64": "10 × 64 is the shape of Q itself, and of the attention output per head.",
            "512 × 512": "512 is the width of the input vectors, and the projections shrink it "
                         "to 64 before any score is taken. The scores pair tokens with tokens, "
                         "so each side has one entry per token.",
        },
    ),
    choice(
        id="attention-step-order",
        lesson=5,
        prompt="In which order does a (masked) self-attention head apply its steps?",
        right="q·k scores → ÷√d_k → mask → softmax → weighted sum of values",
        explanation="Scores are scaled, the mask sets forbidden scores to -∞, and only then does "
                    "the softmax run, so forbidden keys get weight exactly 0 and the allowed "
                    "ones still sum to 1. The weights then mix the values.",
        wrong={
            "q·k scores → softmax → mask → ÷√d_k → weighted sum of values":
                "Masking after the softmax leaves weights that no longer sum to 1, and scaling "
                "after the softmax has lost its point: the scale exists to keep the softmax "
                "input in a healthy range.",
            "softmax of keys → q·k scores → mask → weighted sum of values":
                "The softmax works on scores, not on the keys: there is nothing to turn into "
                "weights until each key has been compared with the query.",
            "q·k scores → mask → weighted sum of values → softmax":
                "The softmax turns scores into weights; it has to come before the weights are "
                "used to mix the values.",
        },
    ),
    NumericQuestion(
        id="dot-product-variance",
        lesson=6,
        prompt="q and k each have d_k = 256 independent components with mean 0 and variance 1. "
               "What is the variance of q·k?",
        answer=256 * 1 * 1,
        tolerance=0.5,
        unit="a number",
        explanation="q·k is a sum of 256 products q_i k_i, each with mean 0 and variance "
                    "1 · 1 = 1. Variances of independent terms add: 256. Dividing by √256 = 16 "
                    "brings it back to 1.",
        mistakes=(
            KnownMistake(16, "16 is the standard deviation, √256; the question asks for the "
                             "variance."),
            KnownMistake(1, "A single product has variance 1, but q·k adds 256 of them."),
        ),
    ),
    choice(
        id="why-scale",
        lesson=6,
        prompt="What goes wrong with dot-product attention at large d_k if you leave out the "
               "1/√d_k factor?",
        right="Scores spread widely, the softmax becomes nearly one-hot, and its gradients "
              "become tiny",
        explanation="The dot products' standard deviation grows like √d_k. Large gaps between "
                    "scores push the softmax into saturation, where almost all weight sits on "
                    "one key and the gradient to every score is close to zero, so learning "
                    "stalls. Dividing by √d_k keeps the variance near 1.",
        wrong={
            "The attention weights no longer sum to 1":
                "A softmax always sums to 1, whatever its inputs.",
            "The dot products overflow to infinity in float32":
                "Softmax implementations subtract the largest score before exponentiating, so "
                "nothing overflows. The harm is to learning, not to the arithmetic.",
            "The output vectors change shape":
                "The scale is one number dividing the scores, so no shape depends on it: the "
                "output has the same shape with or without it.",
        },
    ),
)
