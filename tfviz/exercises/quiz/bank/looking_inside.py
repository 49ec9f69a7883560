"""Looking inside: the logit lens, direct logit attribution, activation patching, induction heads.

The numbers are worked here from the formulas of ``tfviz.interpret``; the tests recompute them
with torch and check the choice answers on our models (tests/test_quiz_looking_inside.py).
"""

from __future__ import annotations

import numpy as np

from ..spec import KnownMistake, NumericQuestion, Question, choice

# A head's part p of the final stream, a final LayerNorm's frozen scale s (γ = 1, β = 0), the
# answer's column u of W_U: its share is ((p − mean(p)) / s) · u.
DLA_PART, DLA_SCALE, DLA_U = np.array([2.0, 0.0, -1.0, 3.0]), 4.0, np.array([1.0, 2.0, 0.0, -1.0])


def dla_share(part, scale: float, u, *, centre: bool = True) -> float:
    """((part − mean(part)) / scale) · u; ``centre=False``: part / scale · u."""
    p = np.asarray(part, dtype=float)
    return float(((p - p.mean()) if centre else p) / scale @ np.asarray(u, dtype=float))


# A patching cell: the clean run's logit difference, the corrupt run's, and one patched run's.
PATCH_CLEAN, PATCH_CORRUPT, PATCH_VALUE = 5.0, -1.0, 3.2
# One head's attention from each second-half token to the token after its earlier copy.
INDUCTION_WEIGHTS = (0.9, 0.8, 0.7, 0.6)

LOOKING_INSIDE: tuple[Question, ...] = (
    choice(
        id="logit-lens-last-row",
        lesson=24,
        prompt="The logit lens sends the residual stream after each block through the model's "
               "final norm and its unembedding. What is its row after the last block?",
        right="Exactly the model's own logits",
        explanation="After the last block the model itself does just that: its final norm, then "
                    "the unembedding (and any scaling of the logits). The lens applies the same "
                    "steps to the earlier layers' streams, as if the model stopped there.",
        wrong={
            "The logits of the first layer": "The first rows read the early layers; the last "
                                             "row reads the stream the model's head reads.",
            "A rough guess that differs from the logits": "Nothing is approximated at the last "
                                                          "row: the same norm and matrix give the "
                                                          "same numbers.",
            "The probabilities of the embeddings": "Row 0 reads the embeddings; the last row "
                                                   "is after every block.",
        },
    ),
    choice(
        id="logit-lens-norm",
        lesson=24,
        prompt="When the logit lens reads an early layer's residual stream, which norm does it "
               "apply before the unembedding?",
        right="The model's final norm, with that vector's own mean and scale",
        explanation="The unembedding was trained to read the output of the final norm, so the "
                    "lens puts each layer's stream through that norm, computed afresh for that "
                    "vector, before multiplying by W_U.",
        wrong={
            "That layer's own LayerNorm (ln1 of the next block)":
                "ln1 prepares the stream for attention; the unembedding reads what the final "
                "norm produces, so the lens uses that one.",
            "No norm at all": "Without the final norm an early stream's size and offset would "
                              "decide the logits, not its direction, and the last row would not "
                              "be the model's logits.",
            "The final norm with the last layer's scale frozen":
                "Freezing the scale is what direct attribution does to split one stream into "
                "parts; the lens reads each layer's whole stream and uses its own statistics.",
        },
    ),
    NumericQuestion(
        id="dla-share",
        lesson=25,
        prompt="A head wrote p = [2, 0, −1, 3] into the final residual stream. The final "
               "LayerNorm's scale at this position is s = 4 (frozen; γ = 1, β = 0), and the "
               "answer's column of W_U is u = [1, 2, 0, −1]. What is the head's direct share of "
               "the answer's logit?",
        answer=dla_share(DLA_PART, DLA_SCALE, DLA_U),
        tolerance=0.01,
        unit="a decimal, e.g. -0.5",
        explanation="Centre the part: mean(p) = 1, so p − 1 = [1, −1, −2, 2]. Divide by the frozen "
                    "s = 4: [0.25, −0.25, −0.5, 0.5]. Dot with u: 0.25 − 0.5 + 0 − 0.5 = −0.75. "
                    "The head pushes this answer down.",
        mistakes=(
            KnownMistake(dla_share(DLA_PART, DLA_SCALE, DLA_U, centre=False),
                         "The mean was not taken away: a LayerNorm centres the whole stream, so "
                         "each part is centred too (an RMSNorm would not)."),
            KnownMistake(dla_share(DLA_PART, 1.0, DLA_U),
                         "The division by the frozen scale s = 4 is missing."),
            KnownMistake(dla_share(DLA_PART, 1.0, DLA_U, centre=False),
                         "That is p · u: neither centred nor divided by s."),
        ),
    ),
    choice(
        id="dla-post-ln",
        lesson=25,
        prompt="Why does direct logit attribution not apply to a post-LN model (a norm after "
               "every residual add)?",
        right="Its final stream is not a sum of what each head and MLP wrote",
        explanation="In a pre-LN model every sublayer adds its output to a stream that is never "
                    "rescaled until the final norm, so the stream is a sum of parts. A post-LN "
                    "model normalises the stream after every add, mixing all earlier parts "
                    "together each time: there is no sum to split.",
        wrong={
            "Its heads have no output matrix W^O": "Post-LN heads have W^O like any other; the "
                                                   "trouble is the norm after the add.",
            "It has no unembedding": "A post-LN decoder has an unembedding and logits as usual.",
            "Its attention is not causal": "Masking has nothing to do with it: the split needs "
                                           "a stream that is a plain sum.",
        },
    ),
    choice(
        id="dla-direct-vs-total",
        lesson=25,
        prompt="On llama-tiny, a layer-0 head's direct share of the answer's logit is 0.65 of "
               "11.5, but removing the head (its output set to zero) lowers the logit by 8.6. "
               "Why can removing it cost far more than its share?",
        right="Later layers built on what it wrote, and lose that too",
        explanation="Direct attribution counts only the path from the head straight to the "
                    "logits. Removing the head also changes everything later layers read, so "
                    "the MLPs that wrote most of this logit from its output write less: that is "
                    "its total effect, and here most of it runs through others.",
        wrong={
            "The attribution forgot the head's bias": "The output bias is its own part of the "
                                                      "split; it cannot explain a gap of 8.",
            "Removing a head also removes the embeddings": "Ablation zeroes only that head's "
                                                           "output z; the embeddings stay.",
            "Direct attribution is only an estimate that rounds": "The shares add up to the "
                                                                  "logit exactly; they measure "
                                                                  "something else (the direct "
                                                                  "path only).",
        },
    ),
    NumericQuestion(
        id="patching-fraction",
        lesson=26,
        prompt="The clean run's logit difference is 5 and the corrupt run's is −1. Patching one "
               "cell from the clean run into the corrupt run gives 3.2. What fraction of the "
               "clean answer did the patch restore?",
        answer=(PATCH_VALUE - PATCH_CORRUPT) / (PATCH_CLEAN - PATCH_CORRUPT),
        tolerance=0.01,
        unit="a fraction between 0 and 1",
        explanation="Measure from the corrupt run: (3.2 − (−1)) / (5 − (−1)) = 4.2 / 6 = 0.7. "
                    "0 would be the corrupt run, 1 the clean one.",
        mistakes=(
            KnownMistake(PATCH_VALUE / PATCH_CLEAN,
                         "3.2 / 5 leaves out the corrupt run's −1: the fraction is measured from "
                         "it, (v − c) / (C − c)."),
            KnownMistake(1 - (PATCH_VALUE - PATCH_CORRUPT) / (PATCH_CLEAN - PATCH_CORRUPT),
                         "That is the part still missing, 1 − 0.7."),
            KnownMistake((PATCH_VALUE - PATCH_CORRUPT) / PATCH_CLEAN,
                         "The numerator is right, but the gap to divide by is C − c = 6."),
        ),
    ),
    choice(
        id="patching-same-token",
        lesson=26,
        prompt="Clean and corrupt texts differ only in word 4. You patch the residual stream "
               "entering block 0 at position 2 from the clean run. What happens to the "
               "corrupt run's answer?",
        right="Nothing: at block 0, position 2 is the same in both runs",
        explanation="Before block 0 each position holds its own token's embedding (and its "
                    "position), and position 2 holds the same token in both texts. Only later "
                    "layers, after attention has mixed in word 4, can differ there.",
        wrong={
            "The clean answer comes back fully": "Only patching the changed word's own position "
                                                 "at block 0 brings the clean run back.",
            "It restores about a fifth, one position of five": "Patching does not share the "
                                                               "answer out evenly over positions.",
            "The answer becomes random": "The patched values are the same numbers the corrupt "
                                         "run already had.",
        },
    ),
    NumericQuestion(
        id="induction-score-mean",
        lesson=27,
        prompt="A sequence of 4 random tokens is repeated. One head's attention from each "
               "second-half token to the token that followed its earlier copy is 0.9, 0.8, 0.7 "
               "and 0.6. What is its induction score?",
        answer=float(np.mean(INDUCTION_WEIGHTS)),
        tolerance=0.01,
        unit="a decimal between 0 and 1",
        explanation="The mean of the four weights: (0.9 + 0.8 + 0.7 + 0.6) / 4 = 0.75. A head "
                    "near 1 copies by induction; one near 0 looks elsewhere.",
        mistakes=(
            KnownMistake(float(np.sum(INDUCTION_WEIGHTS)),
                         "That is their sum; the score is their mean."),
            KnownMistake(float(np.mean(INDUCTION_WEIGHTS[1:])),
                         "The first second-half token counts too: average all four."),
        ),
    ),
    choice(
        id="induction-which-key",
        lesson=27,
        prompt="A text reads “… Ada Lovelace … Ada”. At the second “Ada”, where does an "
               "induction head look?",
        right="At “Lovelace”, the token after the first “Ada”",
        explanation="It finds the earlier copy of the current token and attends to what came "
                    "next, then copies it forward: the model can predict “Lovelace”. A "
                    "previous-token head in an earlier layer makes this possible by writing "
                    "into each token what came before it.",
        wrong={
            "At the first “Ada” itself": "Looking at the copy tells the head nothing new; the "
                                         "useful token is the one that followed it.",
            "At the token just before the second “Ada”": "That is a previous-token head's "
                                                         "pattern, the helper of an induction "
                                                         "head.",
            "At the first token of the text": "Many heads rest there when they have nothing to "
                                              "do; an induction head has something to copy.",
        },
    ),
    choice(
        id="induction-loss",
        lesson=27,
        prompt="A model with induction heads reads 50 random tokens, then the same 50 again. "
               "How does its loss on the second half compare with the first?",
        right="Much lower: each next token can be copied from the first half",
        explanation="The first half is random, so the loss is near log(vocabulary size). In the "
                    "second half an induction head finds the earlier copy and the token after "
                    "it, so the model predicts almost every token.",
        wrong={
            "About the same: the tokens are random": "They are random only the first time; "
                                                     "the second time they repeat.",
            "Higher: repeated text is unusual": "Repetition is exactly what induction heads "
                                                "exploit.",
            "Lower only for the first token of the second half":
                "The first token of the second half follows a random token and cannot be "
                "predicted; it is the later ones that get easy.",
        },
    ),
)
