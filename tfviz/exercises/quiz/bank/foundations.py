"""Lessons 1-3: tour, BPE tokenizer, embeddings and positions."""

from __future__ import annotations

import math

from tfviz import reference

from ..spec import KnownMistake, NumericQuestion, Question, choice

FOUNDATIONS: tuple[Question, ...] = (
    choice(
        id="rnn-vs-transformer-steps",
        lesson=1,
        prompt="A sentence has n tokens. How many sequential steps "
               "(each waiting for the one before) does it take for information from the first "
               "token to reach the last one: in an RNN, and in a single self-attention layer?",
        right="RNN: O(n); self-attention: O(1)",
        explanation="An RNN has to pass its hidden state along one position at a time, so the "
                    "first token's information needs about n hops. In self-attention every token "
                    "looks at every other token directly, so any pair is one hop apart and all "
                    "positions are computed at the same time.",
        wrong={
            "RNN: O(n); self-attention: O(n)":
                "Attention does not walk along the sentence; the last token reads the first "
                "token's key and value directly in the same layer.",
            "RNN: O(1); self-attention: O(n)":
                "That is the wrong way round. The RNN is the one that hands its state along one "
                "position at a time (about n steps); attention links any two tokens in one step.",
            "RNN: O(n); self-attention: O(n²)":
                "n² is the number of query-key comparisons, i.e. total work. Those comparisons "
                "do not depend on each other, so they run in parallel: the number of sequential "
                "steps stays constant.",
        },
    ),
    choice(
        id="pipeline-order",
        lesson=1,
        prompt="In which order does text flow through a transformer language model?",
        right="text → tokens → embeddings + positions → stack of blocks → logits",
        explanation="The tokenizer cuts the text into token ids, and each id looks up its row of "
                    "the embedding table. Position information comes in next: here it is added "
                    "to the embeddings "
                    "(RoPE and ALiBi instead bring it into every attention layer). The vectors "
                    "then pass through the stack of identical blocks, and a final linear layer "
                    "turns each one into a score (logit) for every entry of the vocabulary.",
        wrong={
            "text → embeddings → tokens → stack of blocks → logits":
                "Embeddings are looked up by token id, so tokenising has to happen first.",
            "text → tokens → stack of blocks → add positions → logits":
                "Adding positions after the blocks comes too late. Attention on its own cannot "
                "tell which token came first, so every block would have worked without knowing "
                "the word order. Positions must reach attention: either added to the vectors "
                "before the first block, or built into each attention layer, as RoPE and ALiBi "
                "do.",
            "text → tokens → logits → stack of blocks → embeddings":
                "That runs the model backwards. Looking up embeddings is where the model starts, "
                "and the logits are its final output: one score per vocabulary entry for the "
                "next token.",
        },
    ),
    choice(
        id="rnn-parallel-training",
        lesson=1,
        prompt="Why can't the positions of one training sentence be processed in parallel by an "
               "RNN, when they can by a transformer?",
        right="Each RNN hidden state needs the previous hidden state as input",
        explanation="h_t = f(h_{t-1}, x_t): the state at step t cannot be computed until step "
                    "t-1 is done. A transformer layer computes all positions from the previous "
                    "layer's outputs at once, so training uses the hardware much better.",
        wrong={
            "RNNs have far more parameters than transformers":
                "Parameter count is not the issue; the dependency chain through time is. A small "
                "RNN is just as sequential as a large one.",
            "RNNs cannot be run on GPUs":
                "RNNs do run on GPUs; they just leave most of the GPU idle because each time "
                "step waits for the previous one.",
            "RNNs read the sentence right to left":
                "RNNs usually read left to right, and the direction does not matter here: either "
                "way, each step has to wait for the one before it.",
        },
    ),
    choice(
        id="bpe-start-vocab",
        lesson=2,
        prompt="What vocabulary does byte-pair encoding (BPE) start from before its first merge?",
        right="The single characters of the corpus, plus an end-of-word marker",
        explanation="BPE builds bigger units from small ones: it starts with characters "
                    "(and a symbol for the end of a word, so it can tell a word ending from a "
                    "word "
                    "middle) and then repeatedly adds merged pairs until the vocabulary has the "
                    "size you asked for.",
        wrong={
            "Every distinct word of the corpus":
                "That is a word-level vocabulary, the thing BPE is meant to replace: any word "
                "not seen in training would have no entry.",
            "The 1000 most frequent words, plus an unknown-word token":
                "A frequency cut-off with an unknown token is exactly what leaves rare words "
                "unreadable; BPE avoids unknown tokens by falling back to characters.",
            "An empty vocabulary that grows one word at a time":
                "BPE never starts empty and never adds whole words directly. It begins with "
                "every single character, so any word can be written from the start, and grows by "
                "merging pairs of symbols.",
        },
    ),
    choice(
        id="bpe-first-merge",
        lesson=2,
        prompt="A BPE trainer sees the corpus  tea ×6, ten ×4, tent ×3, eat ×5  "
               "(each word split into characters followed by </w>). Which adjacent pair does it "
               "merge first?",
        right="(t, e)",
        explanation="Count each adjacent pair, weighting by word frequency: (t, e) occurs in "
                    "tea, ten and tent: 6 + 4 + 3 = 13, more than any other pair, so 'te' "
                    "becomes the first new symbol.",
        wrong={
            "(e, a)": "(e, a) occurs in tea and eat: 6 + 5 = 11, close but fewer than the 13 of "
                      "(t, e).",
            "(t, </w>)": "(t, </w>) ends tent and eat: 3 + 5 = 8.",
            "(e, n)": "(e, n) occurs in ten and tent: 4 + 3 = 7.",
        },
    ),
    NumericQuestion(
        id="bpe-pair-count",
        lesson=2,
        prompt="Same corpus: tea ×6, ten ×4, tent ×3, eat ×5. How many times does the adjacent "
               "pair (e, a) occur, counting every occurrence of every word?",
        answer=6 + 5,
        tolerance=0.5,
        unit="a whole number",
        explanation="(e, a) appears once in 'tea' (6 copies) and once in 'eat' (5 copies), so it "
                    "is counted 6 + 5 = 11 times. BPE counts occurrences in the running text, not "
                    "distinct words.",
        mistakes=(
            KnownMistake(2, "2 is the number of distinct words containing (e, a); weight each "
                            "word by how often it occurs."),
            KnownMistake(6, "6 counts only 'tea'; 'eat' = e·a·t contains the pair too."),
        ),
    ),
    choice(
        id="bpe-unknown-word",
        lesson=2,
        prompt="At test time the model meets the word 'transformerify', which never appeared in "
               "training. What happens with a trained BPE tokenizer?",
        right="It is split into known pieces, e.g. 'transform' + 'er' + 'ify'",
        explanation="The learned merges are applied to the characters of the new word, and they "
                    "stop where no merge applies, so the word ends up as a sequence of known "
                    "subwords (at worst single characters). Only a character never seen in "
                    "training is still unknown. Byte-level BPE (GPT-2's, and the one this "
                    "app's story models use) starts from the 256 possible bytes instead, so "
                    "for it nothing is ever unknown.",
        wrong={
            "It becomes a single [UNK] token":
                "That is what a fixed word-level vocabulary does, and it loses all meaning of "
                "the word. Subwords keep the pieces 'transform' and 'ify', which the model "
                "knows.",
            "The tokenizer adds it to the vocabulary as a new entry":
                "The vocabulary is frozen after training; at test time BPE only applies the "
                "merges it already learned.",
            "The tokenizer raises an error":
                "A BPE tokenizer does not get stuck on a new word: it simply uses smaller "
                "pieces, down to single characters if it has to.",
        },
    ),
    NumericQuestion(
        id="sinusoid-cos-entry",
        lesson=3,
        prompt="Sinusoidal positions with d = 4 and n = 100: PE(k, 2i) = sin(k / n^(2i/d)), "
               "PE(k, 2i+1) = cos(k / n^(2i/d)). What is the entry at position k = 2, column 1 "
               "(columns counted from 0)?",
        answer=math.cos(2 / 100 ** (2 * 0 / 4)),
        tolerance=0.005,
        unit="a decimal, e.g. 0.12 (angles in radians)",
        explanation="Column 1 is odd, so it is a cosine with i = 0; the divisor is 100^0 = 1, "
                    "giving cos(2) ≈ -0.416.",
        mistakes=(
            KnownMistake(math.sin(2), "That is sin(2): odd columns use the cosine."),
            KnownMistake(math.cos(math.radians(2)), "That is cos of 2 degrees; the formula "
                                                    "works in radians."),
            KnownMistake(math.cos(2 / 10), "That uses i = 1 (divisor 10); column 1 belongs to "
                                           "the pair i = 0 together with column 0."),
        ),
    ),
    NumericQuestion(
        id="sinusoid-sin-entry",
        lesson=3,
        prompt="Same table (d = 4, n = 100). What is the entry at position k = 3, column 2 "
               "(columns counted from 0)?",
        answer=math.sin(3 / 100 ** (2 * 1 / 4)),
        tolerance=0.005,
        unit="a decimal (radians)",
        explanation="Column 2 = 2i with i = 1, so the divisor is 100^(2/4) = 10 and the entry "
                    "is sin(3/10) ≈ 0.296. Higher columns turn more slowly with position.",
        mistakes=(
            KnownMistake(math.sin(3), "That is sin(3): the divisor 100^(2i/d) = 10 is missing."),
            KnownMistake(math.sin(3 / 100 ** (1 / 4)),
                         "That uses the exponent i/d instead of 2i/d."),
            KnownMistake(math.sin(math.radians(0.3)), "Calculator in degrees; use radians."),
            KnownMistake(math.cos(3 / 10), "That is the cosine; even columns use the sine."),
        ),
    ),
    choice(
        id="order-blind-attention",
        lesson=3,
        prompt="An encoder (no mask) gets no position information at all. You reverse the order "
               "of its input tokens. What happens to the per-token outputs of a self-attention "
               "layer?",
        right="Each token gets the same output as before; the outputs come out reversed too",
        explanation="Without positions, a token's output depends only on the set of keys and "
                    "values it sees, not on where they sit. Permuting the inputs just permutes "
                    "the outputs the same way; this is why positions must be added.",
        wrong={
            "The outputs are identical and in the original order":
                "The outputs are attached to the tokens, so they move with them.",
            "Every output vector changes, because the weights depend on word order":
                "The attention weights depend on the content of the query and keys, and that "
                "content is unchanged; only the row order moves.",
            "The layer fails because the mask no longer matches":
                "There is no mask here: an encoder lets every token see every other token, so "
                "reordering them breaks nothing. The layer runs fine; it just cannot notice the "
                "new order.",
        },
    ),
    choice(
        id="rope-mechanism",
        lesson=3,
        prompt="How does rotary position embedding (RoPE) give attention a sense of position?",
        right="It rotates each query and key by an angle proportional to its position, so q·k "
              "depends on the distance between the two tokens",
        explanation="RoPE turns pairs of query/key coordinates by position-dependent angles. The "
                    "dot product of two rotated vectors depends on the difference of their "
                    "angles, i.e. on the relative offset, which is what attention needs.",
        wrong={
            "It adds a learned vector for each position to the token embedding once, at the "
            "input":
                "That is a learned absolute position embedding (as in BERT or GPT-2).",
            "It subtracts a penalty proportional to the distance from each attention score":
                "That is ALiBi: a distance penalty on the scores, with no rotation.",
            "It sorts the keys by position before the softmax":
                "Sorting would change nothing: attention treats its keys as a set, so the order "
                "they are stored in does not affect the result. Position has to change the "
                "numbers themselves, which is what the rotation does.",
        },
    ),
    NumericQuestion(
        id="rope-turned-coordinate",
        lesson=3,
        prompt="RoPE turns the first pair of a query, (q_0, q_1) = (1, 2), by m·θ_0, where the "
               "first pair's frequency is θ_0 = 1 radian per position. The token sits at "
               "position m = 3. What is q_0 after the turn?",
        answer=float(reference.rope([[1.0, 2.0]], [3], [1.0])[0, 0]),
        tolerance=0.005,
        unit="a number, e.g. 0.42",
        explanation="The angle is 3 · 1 = 3 radians, and a pair (a, c) turns into "
                    "(a cos φ − c sin φ, a sin φ + c cos φ): q_0' = cos 3 − 2 sin 3 = "
                    "−0.990 − 0.282 = −1.272.",
        mistakes=(
            KnownMistake(float(reference.rope([[1.0, 2.0]], [-3], [1.0])[0, 0]),
                         "That turns the pair the other way (a cos φ + c sin φ): the first "
                         "coordinate has a minus in front of its sin."),
            KnownMistake(float(reference.rope([[1.0, 2.0]], [3], [math.pi / 180])[0, 0]),
                         "That reads the angle as 3 degrees; RoPE's angles are radians."),
            KnownMistake(float(reference.rope([[1.0, 2.0]], [1], [1.0])[0, 0]),
                         "That turns by θ_0 once; at position 3 the pair turns by 3 · θ_0."),
        ),
    ),
    NumericQuestion(
        id="rope-angle-slow-pair",
        lesson=3,
        prompt="A head of d = 8 dimensions uses RoPE with base b = 10000, θ_i = b^(−2i/d). By "
               "how many radians does pair i = 2 (dimensions 4 and 5, counting from 0) of the "
               "token at position m = 50 turn?",
        answer=50 * float(reference.rope_inv_freq(8, 10000.0)[2]),
        tolerance=0.001,
        unit="radians, e.g. 0.25",
        explanation="θ_2 = 10000^(−4/8) = 10000^(−1/2) = 0.01 radian per position, so at "
                    "position 50 the pair turns by 50 · 0.01 = 0.5 radian. Later pairs turn "
                    "ever more slowly; that is how RoPE covers both short and long distances.",
        mistakes=(
            KnownMistake(50 * 10000 ** (-2 / 8), "That uses b^(−i/d); the exponent is 2i/d, "
                                                  "because i counts pairs of dimensions."),
            KnownMistake(50 * 10000 ** (-8 / 8), "That takes i = 4, the pair's first dimension; "
                                                  "i counts pairs, and this is pair 2."),
            KnownMistake(float(reference.rope_inv_freq(8, 10000.0)[2]),
                         "That is θ_2, the turn per position; multiply by the position, 50."),
            KnownMistake(50 * 10000 ** (4 / 8), "The exponent lost its minus sign: θ_i = "
                                                 "b^(−2i/d) shrinks for later pairs."),
        ),
    ),
    choice(
        id="rope-relative-pair",
        lesson=3,
        prompt="With RoPE, a query vector at position 7 and a key vector at position 4 give a "
               "score s. Keeping both vectors the same, which positions give exactly the same "
               "score s?",
        right="Query at 10, key at 7",
        explanation="The query turns by 7θ and the key by 4θ; in their dot product only the "
                    "difference of the angles survives, (7 − 4)θ. Moving both by 3 keeps that "
                    "difference, so the score is the same: RoPE sees relative position only.",
        wrong={
            "Query at 4, key at 7":
                "The distance has the same size but the other sign: now the key comes after "
                "the query, and the score is that of a turn by −3θ, not 3θ, which differs in "
                "general.",
            "Query at 14, key at 8":
                "Doubling both positions doubles the distance to 6. The score depends on the "
                "difference m − n, not on the ratio of the positions.",
            "Query at 7, key at 7":
                "Only the query stayed put; the key moved, so the distance fell from 3 to 0 and "
                "the angles no longer differ by 3θ.",
        },
    ),
    choice(
        id="alibi-mechanism",
        lesson=3,
        prompt="What does ALiBi (attention with linear biases) change?",
        right="It adds to every attention score a negative bias proportional to the query-key "
              "distance, with a different slope per head",
        explanation="ALiBi adds no position vectors at all. Before the softmax it adds -m·|i-j| "
                    "to the score of query i and key j, so far-away tokens get less weight; each "
                    "head has its own slope m, from very local to almost global.",
        wrong={
            "It rotates queries and keys by position-dependent angles":
                "Rotating q and k is RoPE; ALiBi leaves q and k untouched and edits the scores.",
            "It adds sinusoids to the embeddings":
                "Sinusoids added to the embeddings are the original Transformer's position "
                "encoding. ALiBi adds nothing to the embeddings; it works directly on the "
                "attention scores.",
            "It replaces the softmax by a linear function":
                "The softmax stays; ALiBi's 'linear' refers to the bias growing linearly with "
                "distance.",
        },
    ),
    choice(
        id="learned-positions-limit",
        lesson=3,
        prompt="Compared with the fixed sinusoidal formula, what is the main limitation of a "
               "learned table of absolute position vectors?",
        right="It has no vector for positions beyond the longest length seen in training",
        explanation="A learned table has one row per position up to a fixed maximum "
                    "(512 for BERT). Position 600 simply has no row, whereas a formula can be "
                    "evaluated at any position. That is only half the story: a model trained "
                    "with the formula has still never learned what its far positions mean, and "
                    "lesson 3 measures it (gpt-tiny's loss rises once its sentences start later; "
                    "the relative schemes, which see only distances, do not move). In exchange "
                    "for its limit, a learned table's rows are flexible.",
        wrong={
            "It cannot be trained by gradient descent":
                "The table is an ordinary parameter matrix and is trained like the token "
                "embeddings.",
            "It makes attention order-blind again":
                "Learned positions do encode order; the issue is only lengths never seen.",
            "It changes the embedding dimension":
                "Each position vector has the same size d as a token embedding "
                "(that is what lets the two be added), so the width of the model does not "
                "change.",
        },
    ),
)
