"""Architectures and outputs: encoder/decoder, the LM head and decoding."""

from __future__ import annotations

from ..spec import KnownMistake, NumericQuestion, Question, choice, softmax, softmax_first

ARCHITECTURES: tuple[Question, ...] = (
    choice(
        id="cross-attention-sources",
        lesson=13,
        prompt="In the encoder-decoder ('cross') attention layer of a decoder block, where do "
               "the queries, keys and values come from?",
        right="Queries from the decoder; keys and values from the top encoder output",
        explanation="The decoder asks the questions "
                    "(what source information do I need for the next word?), and the encoder's "
                    "final representations of the source sentence are what it searches and reads "
                    "from.",
        wrong={
            "Queries from the encoder; keys and values from the decoder":
                "Reversed: then the source sentence would be reading from the partial target, "
                "and the output would have the source's length.",
            "All three from the decoder":
                "That is the decoder's own (masked) self-attention, the sublayer before.",
            "All three from the encoder":
                "That is the encoder's own self-attention. Cross-attention needs the decoder's "
                "queries, or the output would not depend on what has been written so far.",
        },
    ),
    choice(
        id="architecture-families",
        lesson=13,
        prompt="Which pairing of model and architecture is right?",
        right="BERT: encoder-only; GPT: decoder-only; original translation Transformer: "
              "encoder-decoder",
        explanation="BERT uses bidirectional (unmasked) self-attention for understanding tasks; "
                    "GPT stacks causal blocks to generate text; the 2017 model translated with "
                    "an encoder for the source and a decoder for the target.",
        wrong={
            "BERT: decoder-only; GPT: encoder-only; original Transformer: encoder-decoder":
                "BERT sees the words on both sides of each position, which a causal decoder "
                "cannot; GPT generates left to right, which needs the causal mask.",
            "BERT: encoder-decoder; GPT: decoder-only; original Transformer: encoder-only":
                "GPT is right, but the other two are swapped: BERT has no decoder at all, and "
                "the original translation model needed both an encoder for the source and a "
                "decoder to write the target.",
            "All three are encoder-decoder models":
                "Only the original translation model uses both halves. BERT keeps just the "
                "encoder, and GPT just the decoder.",
        },
    ),
    choice(
        id="encoder-runs-once",
        lesson=13,
        prompt="An encoder-decoder model translates a sentence and produces 20 output tokens. "
               "How many times does the encoder process the source sentence?",
        right="Once",
        explanation="The source sentence is complete before decoding starts, so the encoder "
                    "reads it once. Each decoder layer then turns that one encoder output into "
                    "its own keys and values (with its own W^K and W^V). These are computed once "
                    "per source sentence and reused at every output step.",
        wrong={
            "20 times": "Only the decoder runs once per output token, feeding each new token "
                        "back in. The source does not change while the decoder writes, so the "
                        "encoder's result stays valid the whole time.",
            "21 times": "An extra step for a start or end token is a step of the decoder, not of "
                        "the encoder. The encoder's output does not depend on anything the "
                        "decoder writes, so one run is enough.",
            "Once per decoder layer": "Each decoder layer does project the encoder output with "
                                      "its own key and value weights, but that is one matrix "
                                      "product per layer, not a new run of the encoder: all "
                                      "layers read the same final encoder output.",
        },
    ),
    choice(
        id="tied-unembedding",
        lesson=14,
        prompt="The embedding matrix E is |V| × d and the last hidden vector h is 1 × d. With "
               "weight tying, how does the LM head compute the logits u?",
        right="u = h Eᵀ, a 1 × |V| vector",
        explanation="Tying reuses the embedding rows as output vectors: each logit is the dot "
                    "product of h with one token's embedding. Then softmax(u) gives the "
                    "next-token distribution.",
        wrong={
            "u = h E": "h E does not even multiply: (1 × d)(|V| × d) has mismatched inner sizes.",
            "u = E h, a d × 1 vector":
                "E h does not fit either: (|V| × d)(1 × d) has mismatched inner sizes. And a d × "
                "1 result would hold one number per feature, not one logit per vocabulary entry.",
            "u = softmax(E)": "The softmax is applied to the logits, not to the weight matrix.",
        },
    ),
    NumericQuestion(
        id="temperature-softmax",
        lesson=14,
        prompt="Three tokens have logits (2, 1, 0). Sampling uses temperature T = 0.5. What is "
               "the probability of the first token?",
        answer=softmax_first(2 / 0.5, 1 / 0.5, 0 / 0.5),
        tolerance=0.005,
        unit="a probability between 0 and 1",
        explanation="Divide the logits by T: (4, 2, 0). Then e⁴ / (e⁴ + e² + 1) ≈ 0.867. A "
                    "temperature below 1 sharpens the distribution toward the top token.",
        mistakes=(
            KnownMistake(softmax_first(2, 1, 0), "That is T = 1; divide the logits by 0.5 "
                                                  "first."),
            KnownMistake(softmax_first(2 * 0.5, 1 * 0.5, 0), "That multiplies by T; "
                                                              "temperature divides the logits."),
        ),
    ),
    choice(
        id="top-p-set",
        lesson=14,
        prompt="Next-token probabilities, sorted: A 0.5, B 0.3, C 0.15, D 0.05. With top-p "
               "(nucleus) sampling at p = 0.75, which tokens can be sampled?",
        right="A and B",
        explanation="Top-p keeps the smallest set of most likely tokens whose total reaches p: A "
                    "alone is 0.5 < 0.75, A + B is 0.8 ≥ 0.75, so the nucleus is {A, B}, "
                    "renormalised to 0.625 and 0.375.",
        wrong={
            "A only": "0.5 does not yet reach p = 0.75, so B is still needed.",
            "A, B and C": "The set stops growing as soon as the total reaches p; A + B = 0.8 "
                          "already does.",
            "All four": "Keeping every token is what p = 1 would do. With p = 0.75 the set stops "
                        "at A + B = 0.8, so the unlikely C and D are cut off.",
        },
    ),
    choice(
        id="greedy-vs-beam",
        lesson=14,
        prompt="Why can greedy decoding miss the most probable output sequence?",
        right="It commits to the best single token at each step, but a less likely token now can "
              "lead to much likelier continuations",
        explanation="A sequence's probability is the product over steps. Greedy maximises each "
                    "factor separately. Beam search keeps the k best partial sequences so a "
                    "weaker first step can still win overall.",
        wrong={
            "It samples at random, so it is not reproducible":
                "Greedy is deterministic: it always takes the argmax. Sampling is the random "
                "method.",
            "It ignores the softmax and uses raw logits":
                "Argmax of logits and argmax of softmax are the same token; that is not where "
                "greedy loses.",
            "It only works with encoder-only models":
                "Greedy decoding is how generating decoders pick tokens; encoder-only models "
                "such as BERT do not generate text at all. Its weakness is which sequence it "
                "finds.",
        },
    ),
    NumericQuestion(
        id="beam-search-result",
        lesson=14,
        prompt="First-token probabilities: A 0.5, B 0.4, C 0.1. Second token given A: x 0.4, "
               "y 0.35, z 0.25; given B: x 0.9, y 0.05, z 0.05; given C: x 1.0. Beam search "
               "with beam size 2 keeps the two best prefixes at each step. What is the "
               "probability of the best two-token sequence it returns?",
        answer=max(0.5 * 0.4, 0.5 * 0.35, 0.5 * 0.25, 0.4 * 0.9, 0.4 * 0.05, 0.4 * 0.05),
        tolerance=0.005,
        unit="a probability between 0 and 1",
        explanation="The beam keeps A (0.5) and B (0.4) and drops C. Extending both, the best "
                    "is B x = 0.4 · 0.9 = 0.36, better than anything starting with A.",
        mistakes=(
            KnownMistake(0.5 * 0.4, "0.2 is greedy decoding (A, then x); the beam also kept B."),
            KnownMistake(0.9, "0.9 is P(x | B) alone; multiply by P(B) = 0.4."),
            KnownMistake(0.1 * 1.0, "C x = 0.1 was never considered: C fell out of the beam."),
        ),
    ),
    choice(
        id="shifted-targets",
        lesson=14,
        prompt="Training a decoder-only LM with cross-entropy on a sequence t_1 … t_n: what is "
               "the target at position i?",
        right="The next token, t_{i+1}",
        explanation="The targets are the inputs shifted by one: every position predicts what "
                    "comes next, and the causal mask makes sure it cannot see that token.",
        wrong={
            "The same token, t_i": "Position i can see t_i itself, so predicting it would be "
                                   "copying, and the model would learn nothing useful for "
                                   "generation.",
            "The previous token, t_{i-1}":
                "Position i has already seen t_{i-1}. Predicting it would be copying from the "
                "past, not predicting what comes next.",
            "The last token of the sequence, t_n":
                "Each position gets its own target, the token right after it. One shared target "
                "for every position would waste most of the training signal.",
        },
    ),
)
