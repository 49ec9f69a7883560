"""Efficiency and beyond: KV cache, long-sequence attention, MQA/GQA, vision transformer."""

from __future__ import annotations

from ..spec import ChoiceQuestion, KnownMistake, NumericQuestion, Question

EFFICIENCY: tuple[Question, ...] = (
    ChoiceQuestion(
        id="kv-cache-contents",
        lesson=16,
        prompt="During generation, what does the KV cache store for the tokens already "
               "processed?",
        options=("Their key and value vectors, in every layer",
                 "Their query vectors",
                 "Their final output probabilities",
                 "Their attention weight matrices"),
        answer=0,
        explanation="A new token needs its own query and the keys and values of all earlier "
                    "tokens. Those keys and values never change (earlier tokens cannot see the "
                    "new one), so they are computed once and reused.",
        distractors={
            1: "An earlier token's query was only needed for that token's own output, which "
               "is already done; only the newest query is used.",
            3: "Old weights are useless for the new row of scores, which involves the new "
               "query.",
        },
    ),
    NumericQuestion(
        id="kv-cache-memory",
        lesson=16,
        prompt="A 12-layer model with d_model = 768 caches keys and values in 16-bit floats "
               "(2 bytes each). How many MiB (2^20 bytes) does the cache take for 1024 tokens?",
        answer=2 * 12 * 1024 * 768 * 2 / 2 ** 20,
        tolerance=0.5,
        unit="MiB, e.g. 12.5",
        explanation="Per token and layer: a key and a value of 768 numbers = 1536 numbers. "
                    "Times 12 layers, 1024 tokens and 2 bytes: 37,748,736 bytes = 36 MiB.",
        mistakes=(
            KnownMistake(12 * 1024 * 768 * 2 / 2 ** 20, "That caches keys only; values are "
                                                        "stored too (factor 2)."),
            KnownMistake(2 * 12 * 1024 * 768 * 4 / 2 ** 20, "That assumes 4-byte floats; "
                                                            "16-bit floats take 2 bytes."),
            KnownMistake(2 * 12 * 1024 * 768 * 2 / 1e6, "That is megabytes (10^6 bytes); the "
                                                        "question asks for MiB (2^20 bytes)."),
        ),
    ),
    ChoiceQuestion(
        id="kv-cache-score-shape",
        lesson=16,
        prompt="With a KV cache, generating token number t of the sequence, what is the shape "
               "of the new score matrix of one head?",
        options=("1 × t", "t × t", "t × 1", "1 × 1"),
        answer=0,
        explanation="Only the new token's query is computed: (1 × d_k) times the cached Kᵀ "
                    "(d_k × t) gives 1 × t, one score per visible token, so each step costs "
                    "O(t) instead of recomputing the full t × t matrix.",
        distractors={
            1: "t × t is what you compute without a cache, redoing every earlier row each "
               "step.",
        },
    ),
    NumericQuestion(
        id="dilated-receptive-field",
        lesson=17,
        prompt="A Longformer-style model has L = 12 layers of sliding-window attention with "
               "window w = 512 and dilation d = 2. What is the receptive field at the top "
               "layer, in tokens?",
        answer=12 * 2 * 512,
        tolerance=0.5,
        unit="a whole number of tokens",
        explanation="Each layer reaches d·w = 1024 tokens, and stacking L layers multiplies "
                    "the reach: L × d × w = 12 · 2 · 512 = 12,288.",
        mistakes=(
            KnownMistake(12 * 512, "L × w = 6,144 is the undilated window; dilation doubles "
                                   "each layer's reach."),
            KnownMistake(2 * 512, "That is a single layer; the layers stack the reach."),
        ),
    ),
    ChoiceQuestion(
        id="bigbird-components",
        lesson=17,
        prompt="Which combination of attention patterns makes up BigBird?",
        options=("Random + sliding window + global tokens",
                 "Sliding window + dilated window only",
                 "Full attention in every other layer",
                 "Strided patterns only"),
        answer=0,
        explanation="Each query sees a local window, a few random keys, and a small set of "
                    "global tokens that see and are seen by everything; the total stays linear "
                    "in the sequence length.",
        distractors={
            1: "Window and dilated windows are Longformer's local patterns; BigBird's extra "
               "ingredient is random attention.",
            3: "Strided patterns belong to the Sparse Transformer.",
        },
    ),
    ChoiceQuestion(
        id="longformer-global",
        lesson=17,
        prompt="For a classification task, Longformer gives the [CLS] token global attention. "
               "What does that mean?",
        options=("[CLS] attends to every token and every token attends to [CLS]",
                 "[CLS] attends only to its neighbours",
                 "[CLS] is removed from the sequence",
                 "[CLS] is shared across all sentences in the batch"),
        answer=0,
        explanation="Global attention is symmetric: the chosen token can gather information from "
                    "the whole document in one layer, and everyone can read from it, while all "
                    "other tokens keep their cheap local window.",
        distractors={
            1: "That is the ordinary sliding window, which every token already has.",
        },
    ),
    ChoiceQuestion(
        id="strided-pattern",
        lesson=17,
        prompt="In the Sparse Transformer's causal strided pattern with stride 4, query i "
               "attends to key j ≤ i when (i - j) mod 4 = 0. Which positions does position 13 "
               "attend to (counting from 0)?",
        options=("13, 9, 5, 1", "13, 12, 11, 10", "12, 8, 4, 0", "0, 4, 8, 12, 13"),
        answer=0,
        explanation="Step back 4 at a time from 13: 13, 9, 5, 1. Combined with the local "
                    "pattern (the last few positions), any token is reachable within two "
                    "layers.",
        distractors={
            1: "13, 12, 11, 10 is the local block pattern that the other half of the heads "
               "use.",
            2: "These are multiples of 4; the condition is about the difference i - j, not "
               "about j alone.",
        },
    ),
    ChoiceQuestion(
        id="linformer-idea",
        lesson=17,
        prompt="What does Linformer project to a smaller size to make attention cheaper?",
        options=("The keys and values, along the sequence axis, from n rows to k rows",
                 "The queries, from n rows to k rows",
                 "The model dimension d, in every layer",
                 "The vocabulary"),
        answer=0,
        explanation="Learned k × n matrices E and F compress K and V to k rows, so the score "
                    "matrix is n × k instead of n × n: O(nk) time and memory, with k much "
                    "smaller than n.",
        distractors={
            1: "Every token still needs its own output, so all n queries stay.",
            2: "Shrinking d would not touch the n² term, which is the real cost for long "
               "sequences.",
        },
    ),
    NumericQuestion(
        id="linformer-scores",
        lesson=17,
        prompt="With n = 4096 tokens and a Linformer projection to k = 256, how many entries "
               "does one head's score matrix have?",
        answer=4096 * 256,
        tolerance=0.5,
        unit="a whole number (commas allowed)",
        explanation="Scores are n × k = 4096 · 256 = 1,048,576, sixteen times fewer than the "
                    "4096² = 16,777,216 of full attention.",
        mistakes=(
            KnownMistake(4096 ** 2, "That is full n × n attention, before projection."),
            KnownMistake(256 ** 2, "Queries are not projected: the matrix is n × k, not "
                                   "k × k."),
        ),
    ),
    NumericQuestion(
        id="gqa-kv-heads",
        lesson=18,
        prompt="A layer has 32 query heads and uses grouped-query attention with 8 groups. "
               "How many key/value heads does the KV cache hold for that layer?",
        answer=8,
        tolerance=0.5,
        unit="a whole number",
        explanation="Each group of 32 / 8 = 4 query heads shares one key head and one value "
                    "head, so there are 8 of each: the cache is 4 times smaller than with full "
                    "multi-head attention.",
        mistakes=(
            KnownMistake(32, "32 is ordinary multi-head attention, one K/V head per query "
                             "head."),
            KnownMistake(1, "1 is multi-query attention (MQA), where all query heads share a "
                            "single K/V head."),
            KnownMistake(4, "4 is the number of query heads per group."),
        ),
    ),
    ChoiceQuestion(
        id="mqa-gqa-tradeoff",
        lesson=18,
        prompt="Which statement about multi-query (MQA) and grouped-query attention (GQA) is "
               "right?",
        options=("MQA has the smallest KV cache but can lose quality; GQA sits between MQA "
                 "and full multi-head attention",
                 "GQA uses fewer query heads than MQA",
                 "MQA shares queries between heads and keeps separate keys",
                 "Both make the KV cache larger in exchange for quality"),
        answer=0,
        explanation="Sharing keys and values shrinks the cache and the memory traffic of "
                    "decoding. One shared K/V head (MQA) is fastest but can hurt quality; a few "
                    "groups (GQA) recover most of the quality at nearly MQA's speed.",
        distractors={
            2: "It is the other way round: queries stay per-head; keys and values are shared.",
            1: "Both keep all query heads; they differ in how many K/V heads there are.",
        },
    ),
    NumericQuestion(
        id="vit-patch-count",
        lesson=19,
        prompt="A vision transformer cuts a 224 × 224 image into 16 × 16 patches. How many "
               "patches N are there?",
        answer=224 * 224 / 16 ** 2,
        tolerance=0.5,
        unit="a whole number",
        explanation="N = HW / P² = 224 · 224 / 256 = 196 (a 14 × 14 grid).",
        mistakes=(
            KnownMistake(224 / 16, "14 is the number of patches along one side; there are "
                                   "14 × 14 of them."),
            KnownMistake(224 * 224 / 16 ** 2 + 1, "197 is the sequence length including the "
                                                  "class token; the patches alone are 196."),
            KnownMistake(224 * 224 / 16, "That divides by P instead of P²: each patch covers "
                                         "16 · 16 pixels."),
        ),
    ),
    NumericQuestion(
        id="vit-patch-vector",
        lesson=19,
        prompt="Each 16 × 16 patch of an RGB image (3 channels) is flattened before the linear "
               "projection. How many numbers are in one flattened patch?",
        answer=16 * 16 * 3,
        tolerance=0.5,
        unit="a whole number",
        explanation="P² · C = 256 · 3 = 768 numbers, which the projection E ∈ R^{(P²·C) × D} "
                    "maps to the model dimension D.",
        mistakes=(
            KnownMistake(16 * 16, "256 forgets the 3 colour channels."),
            KnownMistake(16 * 3, "That uses P instead of P²."),
        ),
    ),
    ChoiceQuestion(
        id="vit-class-token",
        lesson=19,
        prompt="A ViT turns an image into N patch embeddings. What else goes into its input "
               "sequence, and what is it for?",
        options=("A learned class token is prepended (N + 1 positions); its final vector "
                 "represents the whole image for classification",
                 "Nothing; the N patch outputs are averaged by the softmax",
                 "A [SEP] token after every row of patches, to mark image rows",
                 "The original image, as a single extra token"),
        answer=0,
        explanation="The sequence has N + 1 vectors, each with a learned position embedding "
                    "(E_pos has N + 1 rows). The class token attends to all patches and its "
                    "top-layer state feeds the classifier.",
        distractors={
            1: "Averaging patch outputs is a possible alternative, but the original ViT "
               "prepends a learnable class token, and the softmax inside attention does not "
               "do this job.",
            2: "Row boundaries come from the position embeddings, not from separator tokens.",
        },
    ),
)
