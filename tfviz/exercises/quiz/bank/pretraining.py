"""Architectures and outputs: BERT, its pretraining, and light fine-tuning."""

from __future__ import annotations

from ..spec import KnownMistake, NumericQuestion, Question, choice

PRETRAINING: tuple[Question, ...] = (
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
