"""Architectures and outputs: encoder/decoder, LM head and decoding, BERT and light fine-tuning."""

from __future__ import annotations

from ..spec import ChoiceQuestion, KnownMistake, NumericQuestion, Question, softmax, softmax_first

ARCHITECTURES: tuple[Question, ...] = (
    ChoiceQuestion(
        id="cross-attention-sources",
        lesson=13,
        prompt="In the encoder-decoder ('cross') attention layer of a decoder block, where do "
               "the queries, keys and values come from?",
        options=("Queries from the decoder; keys and values from the top encoder output",
                 "Queries from the encoder; keys and values from the decoder",
                 "All three from the decoder",
                 "All three from the encoder"),
        answer=0,
        explanation="The decoder asks the questions (what source information do I need for the "
                    "next word?), and the encoder's final representations of the source "
                    "sentence are what it searches and reads from.",
        distractors={
            1: "Reversed: then the source sentence would be reading from the partial target, "
               "and the output would have the source's length.",
            2: "That is the decoder's own (masked) self-attention, the sublayer before.",
        },
    ),
    ChoiceQuestion(
        id="architecture-families",
        lesson=13,
        prompt="Which pairing of model and architecture is right?",
        options=("BERT: encoder-only; GPT: decoder-only; original translation Transformer: "
                 "encoder-decoder",
                 "BERT: decoder-only; GPT: encoder-only; original Transformer: encoder-decoder",
                 "BERT: encoder-decoder; GPT: decoder-only; original Transformer: encoder-only",
                 "All three are encoder-decoder models"),
        answer=0,
        explanation="BERT uses bidirectional (unmasked) self-attention for understanding tasks; "
                    "GPT stacks causal blocks to generate text; the 2017 model translated with "
                    "an encoder for the source and a decoder for the target.",
        distractors={
            1: "BERT sees the words on both sides of each position, which a causal decoder "
               "cannot; GPT generates left to right, which needs the causal mask.",
        },
    ),
    ChoiceQuestion(
        id="encoder-runs-once",
        lesson=13,
        prompt="An encoder-decoder model translates a sentence and produces 20 output tokens. "
               "How many times does the encoder process the source sentence?",
        options=("Once", "20 times", "21 times", "Once per decoder layer"),
        answer=0,
        explanation="The source is fully known at the start, so the encoder runs once; its "
                    "output keys and values are reused by every decoder step and layer.",
        distractors={
            1: "Only the decoder runs step by step, feeding each new token back in.",
            3: "Every decoder layer reads the same top encoder output.",
        },
    ),
    ChoiceQuestion(
        id="tied-unembedding",
        lesson=14,
        prompt="The embedding matrix E is |V| × d and the last hidden vector h is 1 × d. With "
               "weight tying, how does the LM head compute the logits u?",
        options=("u = h Eᵀ, a 1 × |V| vector", "u = h E", "u = E h, a d × 1 vector",
                 "u = softmax(E)"),
        answer=0,
        explanation="Tying reuses the embedding rows as output vectors: each logit is the dot "
                    "product of h with one token's embedding. Then softmax(u) gives the "
                    "next-token distribution.",
        distractors={
            1: "h E does not even multiply: (1 × d)(|V| × d) has mismatched inner sizes.",
            3: "The softmax is applied to the logits, not to the weight matrix.",
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
    ChoiceQuestion(
        id="top-p-set",
        lesson=14,
        prompt="Next-token probabilities, sorted: A 0.5, B 0.3, C 0.15, D 0.05. With top-p "
               "(nucleus) sampling at p = 0.75, which tokens can be sampled?",
        options=("A and B", "A only", "A, B and C", "All four"),
        answer=0,
        shuffle=False,
        explanation="Top-p keeps the smallest set of most likely tokens whose total reaches p: "
                    "A alone is 0.5 < 0.75, A + B is 0.8 ≥ 0.75, so the nucleus is {A, B}, "
                    "renormalised to 0.625 and 0.375.",
        distractors={
            1: "0.5 does not yet reach p = 0.75, so B is still needed.",
            2: "The set stops growing as soon as the total reaches p; A + B = 0.8 already does.",
        },
    ),
    ChoiceQuestion(
        id="greedy-vs-beam",
        lesson=14,
        prompt="Why can greedy decoding miss the most probable output sequence?",
        options=("It commits to the best single token at each step, but a less likely token "
                 "now can lead to much likelier continuations",
                 "It samples at random, so it is not reproducible",
                 "It ignores the softmax and uses raw logits",
                 "It only works with encoder-only models"),
        answer=0,
        explanation="A sequence's probability is the product over steps. Greedy maximises each "
                    "factor separately. Beam search keeps the k best partial sequences so a "
                    "weaker first step can still win overall.",
        distractors={
            1: "Greedy is deterministic: it always takes the argmax. Sampling is the random "
               "method.",
            2: "Argmax of logits and argmax of softmax are the same token; that is not where "
               "greedy loses.",
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
    ChoiceQuestion(
        id="shifted-targets",
        lesson=14,
        prompt="Training a decoder-only LM with cross-entropy on a sequence t_1 … t_n: what is "
               "the target at position i?",
        options=("The next token, t_{i+1}", "The same token, t_i", "The previous token, t_{i-1}",
                 "The last token of the sequence, t_n"),
        answer=0,
        explanation="The targets are the inputs shifted by one: every position predicts what "
                    "comes next, and the causal mask makes sure it cannot see that token.",
        distractors={
            1: "Position i can see t_i itself, so predicting it would be copying, and the "
               "model would learn nothing useful for generation.",
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
    ChoiceQuestion(
        id="bert-why-not-always-mask",
        lesson=15,
        prompt="Why does BERT leave some selected tokens unchanged or swap them for random "
               "tokens instead of always using [MASK]?",
        options=("[MASK] never appears when the model is fine-tuned or used, so it must also "
                 "learn good representations for real, possibly wrong, tokens",
                 "To make the pretraining task easier",
                 "Because the vocabulary has too few [MASK] tokens",
                 "So the model can generate text left to right"),
        answer=0,
        explanation="If only [MASK] positions were predicted, the model could ignore every real "
                    "token's own identity. Mixing in unchanged and random tokens means any "
                    "position might need repairing, so every output must stay informative.",
        distractors={
            1: "Random replacements make it harder: the model cannot trust that a visible token "
               "is correct.",
            3: "BERT is an encoder with bidirectional attention; masked LM is not "
               "left-to-right generation.",
        },
    ),
    ChoiceQuestion(
        id="bert-sentence-pair",
        lesson=15,
        prompt="How does BERT lay out a pair of sentences A and B as one input?",
        options=("[CLS] A [SEP] B [SEP]", "[SEP] A [CLS] B [CLS]", "A [MASK] B",
                 "[CLS] A B [CLS]"),
        answer=0,
        explanation="[CLS] opens the input and its final vector serves as a summary for "
                    "classification (e.g. does B follow A?); [SEP] marks where each sentence "
                    "ends.",
        distractors={
            1: "The roles are swapped: [CLS] comes first, [SEP] separates.",
            2: "[MASK] marks tokens to predict, not sentence boundaries.",
        },
    ),
    ChoiceQuestion(
        id="bert-base-size",
        lesson=15,
        prompt="BERT-base has 12 layers, d_model = 768, 12 heads and a ~30k-token vocabulary. "
               "Roughly how many parameters does it have?",
        options=("About 110 million", "About 340 million", "About 1.5 billion",
                 "About 25 million"),
        answer=0,
        explanation="Token, position and segment embeddings are about 24M; each layer has about "
                    "4·768² + 2·768·3072 ≈ 7.1M, times 12 ≈ 85M; plus a small pooler: ≈ 110M.",
        distractors={
            1: "About 340 million is BERT-large (24 layers, d_model = 1024).",
            3: "25 million is roughly the embedding tables alone; the 12 layers add far more.",
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
    ChoiceQuestion(
        id="prompt-tuning",
        lesson=15,
        prompt="In prompt tuning (and its cousin prefix tuning), what is trained?",
        options=("A few learned vectors placed before the input, with all model weights frozen",
                 "All model weights, with a small learning rate",
                 "Only the embedding of the [CLS] token",
                 "A hand-written text prompt, chosen by search"),
        answer=0,
        explanation="The model stays frozen; a small set of continuous 'soft prompt' vectors "
                    "(prefix tuning: extra keys and values at every layer) is learned per task, "
                    "so one copy of the model serves many tasks.",
        distractors={
            1: "That is full fine-tuning, the expensive option these methods avoid.",
            3: "The learned vectors need not be embeddings of any real words; they are tuned "
               "by gradient descent, not by writing text.",
        },
    ),
)
