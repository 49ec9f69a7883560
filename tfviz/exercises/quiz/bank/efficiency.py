"""Efficiency and beyond: KV cache, long-sequence attention, MQA/GQA, vision transformer."""

from __future__ import annotations

from ..spec import KnownMistake, NumericQuestion, Question, choice

EFFICIENCY: tuple[Question, ...] = (
    choice(
        id="kv-cache-contents",
        lesson=16,
        prompt="During generation, what does the KV cache store for the tokens already "
               "processed?",
        right="Their key and value vectors, in every layer",
        explanation="A new token needs its own query and the keys and values of all earlier "
                    "tokens. Those keys and values never change "
                    "(earlier tokens cannot see the new one), so they are computed once and "
                    "reused.",
        wrong={
            "Their query vectors": "An earlier token's query was only needed for that token's "
                                   "own output, which is already done; only the newest query is "
                                   "used.",
            "Their final output probabilities":
                "Those probabilities were needed once, to pick each token, and are then done. "
                "The next step needs the earlier tokens' keys and values, not their predictions.",
            "Their attention weight matrices":
                "Old weights are useless for the new row of scores, which involves the new "
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
    choice(
        id="kv-cache-score-shape",
        lesson=16,
        prompt="With a KV cache, while processing token t (the newest input, the t-th token of "
               "the sequence), what is the shape of one head's new score matrix? Shapes are "
               "rows × columns, with one row per query and one column per key.",
        right="1 × t",
        explanation="Only the new token needs a query. Its 1 × d_k query times Kᵀ "
                    "(d_k × t: the t - 1 cached keys plus its own new one) gives a 1 × t row, "
                    "one score for every token it may see. So each step costs O(t) instead of "
                    "recomputing the whole t × t matrix.",
        wrong={
            "t × t": "t × t is what you compute without a cache, redoing every earlier row each "
                     "step.",
            "1 × d_k": "1 × d_k is the shape of the new query itself. The scores compare it with "
                       "each of the t keys, one number per key.",
            "1 × 1": "A single score would mean the new token compares its query with one key "
                     "only. It compares it with every key it may see: the cached ones and its "
                     "own.",
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
    choice(
        id="bigbird-components",
        lesson=17,
        prompt="Which combination of attention patterns makes up BigBird?",
        right="Random + sliding window + global tokens",
        explanation="Each query sees a local window, a few random keys, and a small set of "
                    "global tokens that see and are seen by everything; the total stays linear "
                    "in the sequence length.",
        wrong={
            "Sliding window + dilated window only":
                "Sliding and dilated windows are Longformer's local patterns. BigBird keeps the "
                "sliding window but adds two things this option lacks: a few random keys per "
                "query and global tokens that see, and are seen by, every position.",
            "Full attention in every other layer":
                "Any full-attention layer would bring back the n² cost that BigBird is built to "
                "avoid. Every BigBird layer uses the same sparse mix.",
            "Strided patterns only": "Strided patterns belong to the Sparse Transformer.",
        },
    ),
    choice(
        id="longformer-global",
        lesson=17,
        prompt="For a classification task, Longformer gives the [CLS] token global attention. "
               "What does that mean?",
        right="[CLS] attends to every token and every token attends to [CLS]",
        explanation="Global attention is symmetric: the chosen token can gather information from "
                    "the whole document in one layer, and everyone can read from it, while all "
                    "other tokens keep their cheap local window.",
        wrong={
            "[CLS] attends only to its neighbours":
                "That is the ordinary sliding window, which every token already has.",
            "[CLS] is removed from the sequence":
                "Removing [CLS] would throw away the very token the classifier reads. Global "
                "attention makes it more connected, not absent.",
            "[CLS] is shared across all sentences in the batch":
                "Each input has its own [CLS]. 'Global' is about the positions within one "
                "document, not about the batch.",
        },
    ),
    choice(
        id="strided-pattern",
        lesson=17,
        prompt="In the Sparse Transformer's causal strided pattern with stride 4, query i "
               "attends to key j ≤ i when (i - j) mod 4 = 0. Which positions does position 13 "
               "attend to (counting from 0)?",
        right="13, 9, 5, 1",
        explanation="Step back 4 at a time from 13: 13, 9, 5, 1. The Sparse Transformer pairs "
                    "these strided heads with local heads that read a local window. If that "
                    "window is the last 4 positions (13, 12, 11, 10), the two reach every "
                    "earlier token within two layers: a step back inside the window, then jumps "
                    "of 4. The notes write the local heads as blocks instead, ⌊j/4⌋ = ⌊i/4⌋: "
                    "position 13 then reads only 12 and 13, its block (12 to 15) up to "
                    "itself.",
        wrong={
            "13, 12, 11, 10": "13, 12, 11, 10 are the last four positions: a local window, the "
                              "kind of pattern the strided heads are paired with. The strided "
                              "rule keeps only positions a multiple of 4 away.",
            "12, 8, 4, 0": "12, 8, 4, 0 is what position 12 would see. For 13 the distance i - j "
                           "must be a multiple of 4, which gives 13, 9, 5 and 1.",
            "0, 4, 8, 12, 13": "Those are the multiples of 4 plus 13 itself, but the rule looks "
                               "at the distance i - j, not at j: 13 - 12 = 1 is not a multiple "
                               "of 4, while 13 - 9 = 4 is.",
        },
    ),
    choice(
        id="linformer-idea",
        lesson=17,
        prompt="What does Linformer project to a smaller size to make attention cheaper?",
        right="The keys and values, along the sequence axis, from n rows to k rows",
        explanation="Learned k × n matrices E and F compress K and V to k rows, so the score "
                    "matrix is n × k instead of n × n: O(nk) time and memory, with k much "
                    "smaller than n.",
        wrong={
            "The queries, from n rows to k rows":
                "Every token still needs its own output, so all n queries stay.",
            "The model dimension d, in every layer":
                "Shrinking d would not touch the n² term, which is the real cost for long "
                "sequences.",
            "The vocabulary": "The vocabulary only matters at the input embeddings and the "
                              "output layer. Attention's cost comes from the n × n score matrix, "
                              "which Linformer shrinks.",
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
    choice(
        id="mqa-gqa-tradeoff",
        lesson=18,
        prompt="Which statement about multi-query (MQA) and grouped-query attention (GQA) is "
               "right?",
        right="MQA has the smallest KV cache but can lose quality; GQA sits between MQA and full "
              "multi-head attention",
        explanation="Sharing keys and values shrinks the cache and the memory traffic of "
                    "decoding. One shared K/V head (MQA) is fastest but can hurt quality; a few "
                    "groups (GQA) recover most of the quality at nearly MQA's speed.",
        wrong={
            "GQA uses fewer query heads than MQA":
                "Both keep all query heads; they differ in how many K/V heads there are.",
            "MQA shares queries between heads and keeps separate keys":
                "It is the other way round: queries stay per-head; keys and values are shared.",
            "Both make the KV cache larger in exchange for quality":
                "It is the other way round: both make the cache smaller, by sharing keys and "
                "values between query heads, and may give up a little quality for it.",
        },
    ),
    NumericQuestion(
        id="gqa-cache-per-token",
        lesson=18,
        prompt="A model has 16 layers; each has 32 query heads sharing 8 K/V heads of "
               "d_head = 64, and its cache stores bfloat16 numbers (16 bits). How many KiB "
               "(1 KiB = 1024 bytes) does one token add to the KV cache?",
        answer=16 * 2 * 8 * 64 * 2 / 1024,
        tolerance=0.5,
        unit="KiB, e.g. 48",
        explanation="Per layer, a key and a value for each of the 8 K/V heads: 2 · 8 · 64 = "
                    "1024 numbers. Times 16 layers and 2 bytes: 32,768 bytes = 32 KiB. The 32 "
                    "queries are never stored.",
        mistakes=(
            KnownMistake(16 * 2 * 32 * 64 * 2 / 1024, "That counts the 32 query heads; the "
                                                      "cache holds the 8 K/V heads only."),
            KnownMistake(16 * 8 * 64 * 2 / 1024, "That stores only keys (or only values); "
                                                 "both are kept, a factor of 2."),
            KnownMistake(2 * 8 * 64 * 2 / 1024, "That is one layer; each of the 16 keeps its "
                                                "own cache."),
            KnownMistake(16 * 2 * 8 * 64 * 16 / 1024, "That counts 16 bytes a number; 16 bits "
                                                      "are 2 bytes."),
        ),
    ),
    choice(
        id="gqa-cache-depends",
        lesson=18,
        prompt="The KV cache of a grouped-query model grows with several of its sizes. Which "
               "of these does it not depend on?",
        right="The number of query heads",
        explanation="A token's queries are used once, for its own scores, and thrown away. "
                    "What stays are the keys and values: of every K/V head, in every layer, at "
                    "the width of the stored numbers. That is why GQA, which keeps all the "
                    "query heads but shares fewer K/V heads between them, shrinks the cache.",
        wrong={
            "The number of K/V heads":
                "Each K/V head keeps a key and a value per token, so the cache grows in step "
                "with their number: this is the size GQA cuts.",
            "The number of layers":
                "Every layer has its own attention and keeps its own keys and values: twice "
                "the layers, twice the cache.",
            "The number of bits per stored number":
                "The same numbers in float32 take twice the bytes of bfloat16, and four times "
                "those of int8.",
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
    choice(
        id="vit-class-token",
        lesson=19,
        prompt="A ViT turns an image into N patch embeddings. What else goes into its input "
               "sequence, and what is it for?",
        right="A learned class token is prepended (N + 1 positions); its final vector represents "
              "the whole image for classification",
        explanation="The sequence has N + 1 vectors, each with a learned position embedding "
                    "(E_pos has N + 1 rows). The class token attends to all patches and its "
                    "top-layer state feeds the classifier.",
        wrong={
            "Nothing; the N patch outputs are averaged by the softmax":
                "Averaging patch outputs is a possible alternative, but the original ViT "
                "prepends a learnable class token, and the softmax inside attention does not do "
                "this job.",
            "A [SEP] token after every row of patches, to mark image rows":
                "Row boundaries come from the position embeddings, not from separator tokens.",
            "The original image, as a single extra token":
                "A whole image does not fit in one token vector of size D. The image enters only "
                "through its patches; the extra token is a learned class token.",
        },
    ),
)
