"""Exercise "beam search": two beams through a three-step tree of probabilities.

The notes describe beam search with beam size 2 without a table; this is ours. Tokens are
A and B; P(next | prefix):

    start: A .2  B .8     A: A .2 B .8     B: A .55 B .45
    AA: A .6 B .4   AB: A .95 B .05   BA: A .45 B .55   BB: A .9 B .1

    step 1  A .2, B .8                    (both kept)
    step 2  AA .04, AB .16, BA .44, BB .36  -> keep BA, BB
    step 3  BAA .198, BAB .242, BBA .324, BBB .036  -> BBA, probability .324
    greedy also starts with B, then takes the likelier A (.55 against .45) at step 2 and ends
    with BAB (.242): the likeliest single step does not lie on the best sequence.

>>> [f.answer_text for f in SPEC.make(None).answer_fields]
['BA, BB', 'BBA', '0.324']
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.beam import beam_search, first_difference, path_probs
from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number)

ID = "beam-search"
TITLE = "Beam search with two beams"
PREFIXES = ("", "A", "B", "AA", "AB", "BA", "BB")
SOURCE_P_A = (0.2, 0.2, 0.55, 0.6, 0.95, 0.45, 0.9)  # P(A | prefix); P(B) = 1 - P(A)
GRID = tuple(x / 20 for x in range(1, 20) if x != 10)

MESSAGES = {
    "greedy": ("That is greedy decoding: one best token at a time. Beam search keeps two "
               "partial sequences alive and compares whole-sequence probabilities."),
    "last_only": ("The candidates were ranked by their last step's probability alone. Rank "
                  "each partial sequence by the product of all its probabilities so far."),
    "added": ("The probabilities along the path were added. A sequence's probability is the "
              "product of its step probabilities."),
}


def tree_of(p_a) -> dict:
    return {p: {"A": float(a), "B": round(1 - float(a), 2)} for p, a in zip(PREFIXES, p_a)}


def _fine(tree: dict) -> bool:
    """No near-ties where beam search or greedy decoding has to choose."""
    right, greedy = beam_search(tree, 3, 2), beam_search(tree, 3, 1)
    c = right.candidates
    return (c[1][1][1] - c[1][2][1] > 0.005 and c[2][0][1] - c[2][1][1] > 0.005
            and right.best[0] != greedy.best[0])


def greedy_text(tree: dict, greedy: tuple[str, float], beam: tuple[str, float]) -> str:
    """Where greedy decoding parts from beam search's answer, read off the tree itself."""
    (g, g_prob), (b, b_prob) = greedy, beam
    text = f"Greedy decoding takes the likeliest token at every step and ends with {g} " \
           f"({fmt_number(g_prob, 4)})."
    step = first_difference(g, b)
    if step is None:
        return text + " Here that is the same sequence beam search finds."
    prefix = g[:step - 1]
    p_g, p_b = tree[prefix][g[step - 1]], tree[prefix][b[step - 1]]
    where = (f"Both start with {prefix}; they part at step {step}" if prefix
             else "They part at the very first token")
    return (f"{text} {where}, where greedy takes {g[step - 1]} ({fmt_number(p_g)}) and beam "
            f"search's winner takes the less likely {b[step - 1]} ({fmt_number(p_b)}). That "
            f"weaker step leads to better continuations: {b} ({fmt_number(b_prob, 4)}) beats "
            f"{g}.")


def build(p_a, seed: int | None) -> Instance:
    tree = tree_of(p_a)
    right, greedy = beam_search(tree, 3, 2), beam_search(tree, 3, 1)
    last = beam_search(tree, 3, 2, rank="last")
    seq, prob = right.best
    fields = (
        answer_field("kept", "the two partial sequences kept after step 2",
                     tuple(s for s, _ in right.kept[1]),
                     {"last_only": (tuple(s for s, _ in last.kept[1]), MESSAGES["last_only"])},
                     unordered=True),
        answer_field("sequence", "the sequence beam search returns", (seq,),
                     {"greedy": ((greedy.best[0],), MESSAGES["greedy"])}),
        answer_field("probability", "its probability", prob,
                     {"greedy": (greedy.best[1], MESSAGES["greedy"]),
                      "added": (sum(path_probs(tree, seq)), MESSAGES["added"])}),
    )
    rows = "\n".join(f"| {p or '(start)'} | {fmt_number(tree[p]['A'])} | "
                     f"{fmt_number(tree[p]['B'])} |" for p in PREFIXES)
    prompt = (
        "A tiny language model knows two tokens, A and B, and always writes exactly three of "
        "them. The table gives the probability of the next token after each prefix:\n\n"
        f"| after | P(A) | P(B) |\n|---|---|---|\n{rows}\n\n"
        "Decode with beam search, beam size 2: at every step extend each kept sequence by both "
        "tokens, score every candidate by the product of its probabilities, and keep the two "
        "best. Which two partial sequences survive step 2 (write them like AB, BA)? Which "
        "three-token sequence wins, and with what probability?")

    def listing(cands):
        return ", ".join(f"{s} {fmt_number(p, 4)}" for s, p in cands)

    steps = (
        Step("Step 1", r"P(x_1)", f"Both first tokens fit in the beam: {listing(right.kept[0])}.",
             {"kept": right.kept[0]}),
        Step("Step 2", r"P(x_1 x_2) = P(x_1)\,P(x_2 \mid x_1)",
             f"Extend both: {listing(right.candidates[1])}. Keep the two best: "
             f"{' and '.join(s for s, _ in right.kept[1])}.", {"candidates": right.candidates[1]}),
        Step("Step 3", r"P(x_1 x_2 x_3) = P(x_1 x_2)\,P(x_3 \mid x_1 x_2)",
             f"Extend the two survivors: {listing(right.candidates[2])}. The best is {seq} with "
             f"{fmt_number(prob, 4)}.", {"candidates": right.candidates[2]}),
        Step("Compare with greedy", r"x_t = \arg\max P(x_t \mid x_{<t})",
             greedy_text(tree, greedy.best, right.best), {"greedy": greedy.best}),
    )
    data = {"tree": tree, "beam_size": 2, "steps": 3}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    for _ in range(5000):
        p_a = rng.choice(GRID, size=len(PREFIXES))
        if _fine(tree_of(p_a)):
            break
    return build(p_a, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_P_A, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 14, "Keep two sequences alive; multiply probabilities.", _make,
                    has_source=False)
