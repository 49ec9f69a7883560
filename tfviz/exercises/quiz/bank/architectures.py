"""Architectures and outputs: encoder/decoder, LM head and decoding, BERT and light fine-tuning."""

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
    NumericQuestion(
        id="bert-mask-count",
        lesson=15,
        prompt="BERT's masked-LM pretraining on a batch of 1000 tokens: how many positions are "
               "actually replaced by the [MASK] token (on average)?",
        answer=1000 * 0.15 * 0.80,
        tolerance=0.5,
        unit="a whole number",
        explanation="15% of tokens are chosen for prediction: 150. Of those, 80% become [MASK] "
                    "(120), 10% a random token (15) and 10% stay unchanged (15).",
        mistakes=(
            KnownMistake(1000 * 0.15, "150 are chosen for prediction, but only 80% of them get "
                                      "the [MASK] symbol."),
            KnownMistake(1000 * 0.80, "The 80% applies to the chosen 15%, not to all tokens."),
            KnownMistake(1000 * 0.15 * 0.10, "15 is the number replaced by a random token "
                                             "(or left unchanged), not by [MASK]."),
        ),
    ),
    NumericQuestion(
        id="bert-mask-share",
        lesson=15,
        prompt="What percentage of all input tokens does BERT replace with a random other "
               "token during masked-LM pretraining?",
        answer=15 * 0.10,
        tolerance=0.05,
        unit="a percentage, e.g. 7.5 or 7.5%",
        percent=True,
        explanation="10% of the 15% selected tokens: 0.15 · 0.10 = 1.5% of all tokens.",
        mistakes=(
            KnownMistake(10, "10% is the share within the selected tokens; multiply by the "
                             "15% selected."),
            KnownMistake(12, "12% is the share replaced by [MASK] (80% of 15%)."),
        ),
    ),
    choice(
        id="bert-why-not-always-mask",
        lesson=15,
        prompt="Why does BERT leave some selected tokens unchanged or swap them for random "
               "tokens instead of always using [MASK]?",
        right="[MASK] never appears when the model is fine-tuned or used, so it must also learn "
              "good representations for real, possibly wrong, tokens",
        explanation="If only [MASK] positions were predicted, the model could ignore every real "
                    "token's own identity. Mixing in unchanged and random tokens means any "
                    "position might need repairing, so every output must stay informative.",
        wrong={
            "To make the pretraining task easier":
                "Random replacements make it harder: the model cannot trust that a visible token "
                "is correct.",
            "Because the vocabulary has too few [MASK] tokens":
                "The vocabulary has one [MASK] token, and it can be used as often as needed. The "
                "reason is the mismatch with later use, where [MASK] never appears.",
            "So the model can generate text left to right":
                "BERT is an encoder with bidirectional attention; masked LM is not left-to-right "
                "generation.",
        },
    ),
    choice(
        id="bert-sentence-pair",
        lesson=15,
        prompt="How does BERT lay out a pair of sentences A and B as one input?",
        right="[CLS] A [SEP] B [SEP]",
        explanation="[CLS] opens the input and its final vector serves as a summary for "
                    "classification (e.g. does B follow A?); [SEP] marks where each sentence "
                    "ends.",
        wrong={
            "[SEP] A [CLS] B [CLS]": "The roles are swapped: [CLS] comes first, [SEP] separates.",
            "A [MASK] B": "[MASK] marks tokens to predict, not sentence boundaries.",
            "[CLS] A B [CLS]": "Without a [SEP] the model cannot tell where A stops and B "
                               "starts, and [CLS] appears only once, at the very start.",
        },
    ),
    choice(
        id="bert-base-size",
        lesson=15,
        prompt="BERT-base has 12 layers, d_model = 768, 12 heads and a ~30k-token vocabulary. "
               "Roughly how many parameters does it have?",
        right="About 110 million",
        explanation="Token, position and segment embeddings are about 24M; each layer has about "
                    "4·768² + 2·768·3072 ≈ 7.1M, times 12 ≈ 85M; plus a small pooler: ≈ 110M.",
        wrong={
            "About 340 million": "About 340 million is BERT-large (24 layers, d_model = 1024).",
            "About 1.5 billion": "1.5 billion is the size of the largest GPT-2 model; BERT-base "
                                 "is more than ten times smaller.",
            "About 25 million": "25 million is roughly the embedding tables alone; the 12 layers "
                                "add far more.",
        },
    ),
    NumericQuestion(
        id="lora-params",
        lesson=15,
        prompt="A frozen 1024 × 1024 weight matrix gets a low-rank update AB with "
               "A ∈ R^{1024×8} and B ∈ R^{8×1024}. How many trainable parameters does the "
               "update add?",
        answer=1024 * 8 + 8 * 1024,
        tolerance=0.5,
        unit="a whole number (commas allowed)",
        explanation="A has 1024·8 = 8,192 and B has 8·1024 = 8,192, so 16,384 in total, about "
                    "1.6% of the 1,048,576 weights of full fine-tuning for this matrix.",
        mistakes=(
            KnownMistake(1024 * 1024, "That is the full matrix; only A and B are trained."),
            KnownMistake(1024 * 8, "That counts one factor; both A and B are trained."),
            KnownMistake(8 * 8, "The factors are 1024 × 8 and 8 × 1024, not 8 × 8."),
        ),
    ),
    choice(
        id="prompt-tuning",
        lesson=15,
        prompt="In prompt tuning (and its cousin prefix tuning), what is trained?",
        right="A few learned vectors placed before the input, with all model weights frozen",
        explanation="The model stays frozen; a small set of continuous 'soft prompt' vectors "
                    "(prefix tuning: extra keys and values at every layer) is learned per task, "
                    "so one copy of the model serves many tasks.",
        wrong={
            "All model weights, with a small learning rate":
                "That is full fine-tuning, the expensive option these methods avoid.",
            "Only the embedding of the [CLS] token":
                "The model's own embeddings, [CLS] included, stay frozen. What is learned is a "
                "handful of new vectors placed in front of the input.",
            "A hand-written text prompt, chosen by search":
                "The learned vectors need not be embeddings of any real words; they are tuned by "
                "gradient descent, not by writing text.",
        },
    ),
)
