"""Lessons 7-8: heads, the output projection, and masks."""

from __future__ import annotations

from ..spec import KnownMistake, NumericQuestion, Question, choice

HEADS_AND_MASKS: tuple[Question, ...] = (
    NumericQuestion(
        id="output-projection-size",
        lesson=7,
        prompt="Multi-head attention with h = 8 heads of d_v = 64 and d_model = 512. How many "
               "weights does the output projection W^O have (no bias)?",
        answer=(8 * 64) * 512,
        tolerance=0.5,
        unit="a whole number (commas allowed, e.g. 1,000)",
        explanation="The 8 head outputs are concatenated into a vector of 8·64 = 512 numbers, "
                    "and W^O maps it back to d_model = 512: 512 × 512 = 262,144 weights.",
        mistakes=(
            KnownMistake(64 * 512, "That is one head's width times d_model: W^O acts on all "
                                   "heads concatenated (h·d_v = 512)."),
            KnownMistake(64 * 64, "That is d_v × d_v; W^O maps h·d_v to d_model."),
        ),
    ),
    choice(
        id="multihead-reshape",
        lesson=7,
        prompt="Q = X W^Q has shape n × d, with h heads. Before computing per-head scores, what "
               "shape is Q reshaped and transposed into?",
        right="h × n × (d/h)",
        explanation="Split the d features into h chunks: n × h × (d/h), then move the head axis "
                    "to the front: h × n × (d/h). The head axis now acts like a batch axis, and "
                    "each head does ordinary attention on (d/h)-sized vectors.",
        wrong={
            "h × n × d": "Each head gets a d/h-wide slice, not all d features; that is why h "
                         "heads cost about as much as one full-width head.",
            "n × n × h": "n × n is the shape of one head's score matrix, not of Q.",
            "(d/h) × n × h": "The axes are in the wrong places. The head axis comes first, "
                             "acting like a batch, and each head then holds n tokens of d/h "
                             "features.",
        },
    ),
    choice(
        id="why-multihead",
        lesson=7,
        prompt="What is the main benefit of using several attention heads instead of one head of "
               "the same total width?",
        right="Different heads can attend to different tokens for different reasons at the same "
              "time",
        explanation="One head produces one weighting per query. With several heads, one can "
                    "track the previous token, another a syntactic link, another a rare word, "
                    "and their outputs are concatenated and mixed by W^O.",
        wrong={
            "Each extra head lets the model see further back in the sequence":
                "Every head already sees every (unmasked) position; range is not the limit.",
            "Heads make the softmax unnecessary":
                "Every head still runs its own softmax over its own scores: several heads mean "
                "several softmaxes, not none.",
            "More heads mean fewer parameters in W^Q, W^K, W^V":
                "With the same total width, the projections have the same number of weights; "
                "they are just split between heads.",
        },
    ),
    choice(
        id="it-coreference",
        lesson=7,
        prompt="'The animal didn't cross the street because it was too wide.' A head that "
               "resolves what 'it' refers to should put most of its weight from 'it' on which "
               "word?",
        right="street",
        explanation="A street can be too wide to cross; with 'too tired' the same head should "
                    "point to 'animal' instead. Attention makes this possible because the "
                    "weights depend on the whole context, not on fixed word pairs.",
        wrong={
            "animal": "'animal' is the right answer for '... because it was too tired'; changing "
                      "the last word changes the referent.",
            "it": "A head that looks mostly at 'it' keeps the word's own information, but it "
                  "does not find out what the word stands for.",
            "wide": "'wide' is the clue that settles the question, and a head may well look at "
                    "it, but it describes the thing that was wide. The word 'it' stands for is "
                    "'street'.",
        },
    ),
    choice(
        id="causal-mask-entries",
        lesson=8,
        prompt="In a causal (decoder) mask, which entries of the score matrix "
               "(row = query position i, column = key position j) are set to -∞?",
        right="Those above the diagonal, where j > i",
        explanation="A token may look at itself and at earlier tokens, never at later ones, so "
                    "the scores with j > i become -∞ and receive weight 0 after the softmax.",
        wrong={
            "Those below the diagonal, where j < i":
                "Below the diagonal are the earlier tokens, which a decoder is allowed to see.",
            "The diagonal, where j = i":
                "A token may attend to itself; masking the diagonal would leave the first token "
                "with nothing to attend to.",
            "Every entry except the diagonal":
                "That would let each token see only itself, so attention could gather nothing "
                "from the earlier words. A causal mask hides only the future, where j > i.",
        },
    ),
    NumericQuestion(
        id="causal-mask-count",
        lesson=8,
        prompt="A causal mask for a sequence of 5 tokens: how many of the 5 × 5 scores are "
               "set to -∞?",
        answer=5 * (5 - 1) / 2,
        tolerance=0.5,
        unit="a whole number",
        explanation="Row i (counting from 1) hides the 5 - i later tokens: 4 + 3 + 2 + 1 + 0 = "
                    "10 = n(n-1)/2.",
        mistakes=(
            KnownMistake(15, "15 = n(n+1)/2 also counts the diagonal, but a token may attend "
                             "to itself."),
            KnownMistake(25, "That is the whole matrix; only the part above the diagonal is "
                             "masked."),
        ),
    ),
    choice(
        id="decoder-cannot-peek",
        lesson=8,
        prompt="A causal language model reads 6 tokens. You change token 5 and run it again. "
               "Which output positions can change?",
        right="Only positions 5 and 6",
        explanation="Position i only sees tokens 1..i, in every layer. Positions 1-4 never see "
                    "token 5, so they are unchanged; positions 5 and 6 do see it.",
        wrong={
            "All six positions": "That would be true for a bidirectional encoder like BERT, not "
                                 "with a causal mask.",
            "Only position 5": "Position 6 attends to position 5 as well, so its output can "
                               "change too.",
            "Only positions 1 to 4": "Those are exactly the positions that stay the same: they "
                                     "never see token 5. Positions 5 and 6 do see it, so their "
                                     "outputs can change.",
        },
    ),
    choice(
        id="padding-mask",
        lesson=8,
        prompt="Sentences of different lengths are padded with [PAD] tokens to fit in one batch. "
               "What is the padding mask for?",
        right="Stop real tokens from attending to [PAD] positions",
        explanation="The filler positions carry no meaning; their key scores are set to -∞ so "
                    "they receive zero weight, and the results do not depend on how much padding "
                    "a sentence got.",
        wrong={
            "Stop tokens from attending to later tokens":
                "That is the causal mask. The padding mask is needed in encoders too, where "
                "looking ahead is allowed.",
            "Stop the model from attending to itself":
                "Attending to itself is allowed and useful. The padding mask is about the filler "
                "positions, not about the diagonal.",
            "Make the batch run faster by skipping the softmax":
                "The softmax still runs over every row; the [PAD] scores just become -∞ inside "
                "it. The mask is there to keep the results right, not to save time.",
        },
    ),
)
