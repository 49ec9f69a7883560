"""Places where the source notes are wrong or ambiguous, for the "In the notes" callouts.

A student reading the slides beside a lesson should not be puzzled when the two disagree, so
the lesson that teaches the idea says what the notes write, what is right, and why. Each entry
also says exactly where the notes write it (seed file, line, a few words found on that line),
so anybody can check; ``tests/test_notes_errata.py`` does, against ``shared/seeds``.

``lesson`` is the URL of the lesson that teaches the idea; a few are lessons still to be
written (``tfviz.curriculum.PLANNED``) and show up there once the page exists. ``also`` lists
other pages that already touch the idea; on the exercises page an entry shows only beside the
exercises named in ``exercises``, and one that states answers (``gives_away``) only once those
boxes are answered.

>>> [e.id for e in errata_for("layernorm")]
['layernorm-epsilon', 'layernorm-unit-mean']
>>> [e.id for e in errata_for("exercises", exercise="beam-search")]
['beam-ground-truth']
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Erratum:
    id: str
    seed: str  # file name under shared/seeds
    line: int  # 1-based line of that file
    fragment: str  # a few words that stand on that line, to find the place
    place: str  # where a student finds it, in words
    lesson: str  # URL of the lesson that teaches the idea
    notes: str  # what the notes do, to follow “the notes …”
    right: str  # what is right
    why: str  # the reason, in a sentence or two
    also: tuple[str, ...] = ()  # other pages that touch the idea and show this too
    exercises: tuple[str, ...] = ()  # on the exercises page: only beside these exercises
    gives_away: tuple[str, ...] = ()  # answer boxes of those exercises whose answers it states


ERRATA: tuple[Erratum, ...] = (
    Erratum("sinusoid-indices", "000_727fe46d25c1ca1d.txt", 57, "sin(i/10000^{2+1/d})",
            "the handwritten notes, sinusoidal position representations", "embeddings",
            "count positions from 1 and the frequency pairs from 1 to d/2, so the first pair "
            "uses 10000^(2/d) and the last 10000^1 (the “+” there is a garbled “·”)",
            "this lesson and the lecture slides' table count both from 0: position k = 0, 1, 2, "
            "… and pair i = 0 … d/2 − 1, so the first pair is simply sin(k), cos(k)",
            "Both are the same family of waves, but the indices are shifted by one, so the "
            "numbers in any one table cell differ. Check which counting a table uses before "
            "comparing it with ours.",
            also=("exercises",), exercises=("positional-table",)),
    Erratum("learned-positions-shape", "001_36956249c90c22b5.txt", 756, "[1 \\times N]",
            "the lecture slides, lecture 23, learned positional embedding", "embeddings",
            "give the learned position table E_pos the shape [1 × N]",
            "it has shape N × d: one row of width d for each of the N positions",
            "Each position gets a whole vector, added to the token's embedding of the same "
            "width d, exactly like a second embedding table indexed by position."),
    Erratum("thinking-machines-score", "004_a3145455295d71ab.txt", 150, "q_2 * k_2 = 96",
            "the BERT notes, the Thinking Machines example", "self-attention",
            "call the second score q₂·k₂ = 96",
            "it is q₁·k₂ = 96: the query of “Thinking” against the key of “Machines”",
            "Both scores belong to the same query, the one being rebuilt; q₂ only matters when "
            "“Machines” is the word asking.",
            also=("exercises",), exercises=("thinking-machines",)),
    Erratum("thinking-machines-dk", "004_a3145455295d71ab.txt", 154, "(\\sqrt{dk} = 64)",
            "the BERT notes, the Thinking Machines example", "self-attention",
            "divide by 8 and label it “√dk = 64”",
            "d_k = 64, so √d_k = 8",
            "The 8 is right; only the label is swapped: 64 is the key width, 8 its root.",
            also=("exercises",), exercises=("thinking-machines",)),
    Erratum("thinking-machines-softmax", "004_a3145455295d71ab.txt", 166, "96 \\Rightarrow 0.12",
            "the BERT notes, the Thinking Machines example", "self-attention",
            "write the softmax step as 14 ⇒ 0.88 and 96 ⇒ 0.12",
            "it is 12 ⇒ 0.12: the softmax takes the scaled scores 14 and 12",
            "The raw 96 was already divided by 8; softmax(14, 12) gives 0.88 and 0.12.",
            also=("exercises",), exercises=("thinking-machines",),
            gives_away=("scaled", "weights")),
    Erratum("scale-before-softmax", "002_6e1befd5d5c3dd59.txt", 38, "Take the softmax, and divide",
            "the ML notes page on transformers, step 4 of the attention summary", "scaling",
            "take the softmax first, then divide by √d",
            "divide the scores by √d_k first, then take the softmax",
            "The scale exists to keep the scores out of softmax's flat, saturated region, so it "
            "must act before the softmax; dividing the weights afterwards would only make them "
            "stop adding up to 1. The divisor is the width of a key (w on that page), not of "
            "the embedding."),
    Erratum("scale-d-over-n", "000_727fe46d25c1ca1d.txt", 194, "\\sqrt{d/n}",
            "the handwritten notes, scaled dot product", "scaling",
            "divide the scores by √(d/n)",
            "divide by √(d/h) = √d_k, the width of one head's keys",
            "Elsewhere in those notes n mostly counts the words, and the scale does not depend "
            "on the sentence length: it depends only on how many products one head's score "
            "adds up, which is d/h."),
    Erratum("head-matrix-shape", "000_727fe46d25c1ca1d.txt", 156, "Q_h, V_h, K_h \\in",
            "the handwritten notes, multi-head attention", "multi-head",
            "make each head's Q_h, K_h, V_h d × d matrices",
            "each is d × (d/h): it maps a d-wide token to a d/h-wide query, key or value",
            "That is why h heads cost no more than one full-width head, and why the notes "
            "themselves give each head's output a width of d/h a few lines further down."),
    Erratum("complexity-per-layer", "003_bea8d878b533e619.txt", 115, "O(1) per layer",
            "the NLP lab slides, “Why Self-Attention”", "tour",
            "give self-attention's computational complexity as O(1) per layer",
            "the work per layer is O(n²·d); O(1) is the number of sequential steps per layer "
            "(and the longest path between two tokens)",
            "Every one of the n² pairs is compared with a d-wide dot product, so the work grows "
            "with the square of the length; what does not grow is how many steps must wait "
            "for each other."),
    Erratum("causal-not-bidirectional-lm", "000_727fe46d25c1ca1d.txt", 353,
            "language modelling is now possible",
            "the handwritten notes, pretraining encoders", "bert",
            "say an encoder's two-sided context is what makes language modelling possible",
            "with bidirectional context, ordinary left-to-right language modelling is "
            "*not* possible; that is why BERT is trained with masked language modelling",
            "An encoder lets every token see the words after it, so asking it for the next word "
            "would let it read the answer. Hiding some words with [MASK] and predicting those "
            "gives it a task it cannot cheat on.",
            also=("masking",)),
    Erratum("layernorm-epsilon", "001_36956249c90c22b5.txt", 597, "\\sigma^l + \\epsilon",
            "the lecture slides, lecture 22, layer normalization", "layernorm",
            "write LayerNorm as (x − μ)/(σ + ε)",
            "the usual form, and the one our models and PyTorch compute, is "
            "(x − μ)/√(σ² + ε), then · γ + β",
            "ε only keeps the division safe when σ is near 0; the two forms differ slightly "
            "then, so the model's numbers follow the square-root form.",
            also=("exercises",), exercises=("layernorm",)),
    Erratum("layernorm-unit-mean", "000_727fe46d25c1ca1d.txt", 229, "unit mean",
            "the handwritten notes, layer normalisation", "layernorm",
            "say LayerNorm normalises to “unit mean” and standard deviation",
            "it normalises to zero mean and a standard deviation of one (before γ and β)",
            "Subtracting μ makes the mean 0, and dividing by σ makes the spread 1.",
            also=("exercises",), exercises=("layernorm",)),
    Erratum("sparse-mask-zero", "001_36956249c90c22b5.txt", 1138, "0 & \\text{otherwise}",
            "the lecture slides, lecture 25, Sparse Transformer", "long-sequences",
            "give blocked pairs of the local and strided patterns a score of “0 otherwise”",
            "a blocked pair needs −∞ before the softmax (or must be left out of it)",
            "A score of 0 still counts as e⁰ = 1 in the softmax, so nothing would be blocked; "
            "−∞ gives e^(−∞) = 0, exactly as in the causal mask.",
            also=("masking",)),
    Erratum("beam-ground-truth", "002_6e1befd5d5c3dd59.txt", 88, "compared to the truth",
            "the ML notes page on transformers, beam search", "decoding",
            "keep the beam candidates with the lowest error “compared to the truth”",
            "beam search ranks candidates by the model's own probability of the whole "
            "sequence so far (the product, or the sum of logs), and uses no ground truth",
            "When the model is decoding there is no right answer to compare with: that is what "
            "it is producing. Beam search only asks which partial sequences the model itself "
            "finds most likely.",
            also=("exercises",), exercises=("beam-search",)),
    Erratum("cross-attention-weights", "002_6e1befd5d5c3dd59.txt", 69,
            "from the final encoder layer",
            "the ML notes page on transformers, the decoder block", "encoder-decoder",
            "say the decoder blocks take W_K and W_V from the final encoder layer",
            "the decoder takes the encoder's output vectors; each decoder layer multiplies "
            "them by its own W^K and W^V in its cross-attention",
            "What passes from encoder to decoder is data (the top encoder's vectors), not "
            "weights; every cross-attention layer learns its own projections.",
            also=("forward-walk",)),
    Erratum("decoder-only-embeddings", "002_6e1befd5d5c3dd59.txt", 76, "creates no embeddings for the",
            "the ML notes page on transformers, the transformer block", "encoder-decoder",
            "say GPT-3 is a decoder-only model because it “creates no embeddings for the "
            "vocabulary”",
            "GPT-3 embeds its vocabulary like every transformer: a token embedding table turns "
            "each token id into a vector. What makes it decoder-only is that it has no encoder, "
            "and so no cross-attention: every block is masked self-attention and a feed-forward "
            "layer",
            "Without an embedding table a model could not read tokens at all. Our gpt-tiny has "
            "one too, and its LM head reuses it (lesson 14)."),
    Erratum("target-typo", "002_6e1befd5d5c3dd59.txt", 80, "P(o_2=34)=1,",
            "the ML notes page on transformers, training criteria", "decoding",
            "give the label “Thank you”, tokens [34, 23, 9, 0], the targets P(o₁=34)=1, "
            "P(o₂=34)=1, P(o₃=34)=1, P(o₄=0)=1",
            "each position's target is that position's own token: P(o₁=34)=1, P(o₂=23)=1, "
            "P(o₃=9)=1, P(o₄=0)=1",
            "The 34 is copied by mistake from the first position. The training loss scores every "
            "position against its own target token, as the per-token loss at the end of this "
            "page shows."),
    Erratum("bert-512-tokens", "004_a3145455295d71ab.txt", 383, "Max of 512 words",
            "the BERT notes, the encoder stack", "bert",
            "say at most 512 words in a sentence can be given to BERT",
            "BERT reads at most 512 tokens (WordPiece pieces, [CLS] and [SEP] included), whether "
            "the input is one sentence or a pair",
            "The limit is the number of rows in its learned position table, one per token "
            "position. A rare word is split into several pieces, so 512 tokens usually hold "
            "fewer than 512 words."),
    Erratum("linformer-projection-shape", "001_36956249c90c22b5.txt", 1265, "values to $N \\times k$",
            "the lecture slides, lecture 25, Linformer", "long-sequences",
            "say Linformer projects the N × d keys and values “to N × k”",
            "they are projected to k × d: a k × N matrix (E for the keys, F for the values) "
            "mixes the N positions into k rows and keeps every row d wide",
            "Linformer shortens the sequence axis, not the width, so each query meets only k "
            "keys and the attention matrix is N × k; the slides' own formula a few lines further "
            "on gives F V W^V the shape k × d."),
)


def errata_for(url: str, exercise: str | None = None) -> list[Erratum]:
    """The errata a page shows: those of its lesson and those listing it in ``also``.

    With ``exercise`` (the exercises page), only the entries that name that exercise.
    """
    return [e for e in ERRATA if url in (e.lesson, *e.also)
            and (exercise is None or exercise in e.exercises)]
