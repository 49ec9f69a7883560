"""Exercise "BPE merges": the next three merges on a tiny corpus.

Uses the teaching BPE trainer of ``tfviz.tokenizer.teaching_bpe`` (characters plus an
end-of-word symbol </w>, pair counts weighted by word frequency, ties to the smaller pair).
Our standard corpus: tea ×4, team ×3, steam ×2, meat ×5, mat ×2.

    counts: (e,a) 4+3+2+5 = 14 is the most frequent pair          -> merge "ea"
    then:   (t,ea) 4+3+2 = 9                                     -> merge "tea"
    then:   (t,</w>) from meat and mat, 5+2 = 7                  -> merge "t</w>"
    behind merges 2 and 3, four pairs tie at 5; the worked steps name all four each time

>>> SPEC.make(None).field("merges").answer_text
'ea, tea, t</w>'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_values)
from tfviz.tokenizer.teaching_bpe import EOW, count_pairs, initial_symbols, merge_symbols, train_bpe

ID = "bpe-merges"
TITLE = "BPE: the next three merges"
SOURCE = {"tea": 4, "team": 3, "steam": 2, "meat": 5, "mat": 2}
WORDS = ("tea", "team", "steam", "meat", "mat", "eat", "seat", "sea", "low", "lower", "slow",
         "hug", "hugs", "mug", "bug", "bun", "ten", "net", "nest", "west", "newest")
N_MERGES = 3

MESSAGES = {
    "ignore_freq": ("Each word was counted once. A pair's count is weighted by how often its "
                    "word occurs in the corpus."),
    "no_recount": ("All three merges were read off the first count. After every merge the "
                   "pairs change (the new symbol forms new pairs), so count again."),
    "no_eow": ("The end-of-word symbol </w> is missing. Every word ends with it, and pairs "
               "such as (t, </w>) are counted like any other."),
}


def _best(counts) -> tuple[tuple[str, str], int]:
    """Most frequent pair, ties to the smaller pair (the trainer's rule)."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _merges(freqs: dict, eow: bool = True, recount: bool = True):
    """(new symbols, counts) of the first merges under a chosen slip."""
    words = list(freqs)
    symbols = [initial_symbols(w) if eow else tuple(w) for w in words]
    counts = count_pairs(symbols, [freqs[w] for w in words])
    if not recount:
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:N_MERGES]
        return tuple(a + b for (a, b), _ in top), tuple(c for _, c in top)
    new, got = [], []
    for _ in range(N_MERGES):
        counts = count_pairs(symbols, [freqs[w] for w in words])
        if not counts:
            break
        pair, c = _best(counts)
        new.append(pair[0] + pair[1])
        got.append(c)
        symbols = [merge_symbols(s, pair) for s in symbols]
    return tuple(new), tuple(got)


def next_best(counts, winner, shown: int = 3) -> str:
    """The runners-up to ``winner``, best count first, each count with every pair that has it,
    until at least ``shown`` pairs are named (a tie is never cut in half).

    >>> next_best({("e", "a"): 14, ("t", "e"): 9, ("a", "t"): 7, ("t", "</w>"): 7,
    ...            ("m", "e"): 5}, ("e", "a"))
    '9 for (t, e), then 7 for (a, t) and (t, </w>)'
    """
    by_count: dict[int, list] = {}
    for pair, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if pair != winner and c > 0:
            by_count.setdefault(c, []).append(pair)
    groups, named = [], 0
    for c, pairs in by_count.items():
        if named >= shown:
            break
        names = [f"({a}, {b})" for a, b in pairs]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        groups.append(f"{c} for {listed}")
        named += len(pairs)
    return ", then ".join(groups) or "none"


def _tie_free(history) -> bool:
    return all(not s.runners_up or s.runners_up[0][1] < s.count for s in history.steps[1:])


def build(freqs: dict, seed: int | None) -> Instance:
    history = train_bpe(freqs, num_merges=N_MERGES)
    merged = tuple(s.new_symbol for s in history.steps[1:])
    counts = tuple(s.count for s in history.steps[1:])
    slips = {"ignore_freq": _merges({w: 1 for w in freqs}),
             "no_recount": _merges(freqs, recount=False),
             "no_eow": _merges(freqs, eow=False)}
    fields = (
        answer_field("merges", "the three new symbols, in order", merged,
                     {k: (v[0], MESSAGES[k]) for k, v in slips.items()}),
        answer_field("counts", "the count of each merged pair", counts,
                     {k: (slips[k][1], MESSAGES[k]) for k in ("ignore_freq", "no_recount")},
                     tol=0),
    )
    corpus = ", ".join(f"{w} ×{c}" for w, c in freqs.items())
    prompt = (
        f"Train byte-pair encoding on this corpus (word ×times it occurs): {corpus}.\n\n"
        f"Start from single characters, with the end-of-word symbol {EOW} after every word "
        "(so “tea” is t e a </w>). Count every pair of neighbouring symbols, weighting each "
        "word by its frequency, merge the most frequent pair everywhere, and repeat. Give the "
        "first three new symbols (type _ for </w> if you like) and the count of each merged "
        "pair when it was chosen.")
    steps = [Step("Start", r"\text{word} \to c_1\,c_2 \dots c_n\,\texttt{</w>}",
                  "Split every word into characters and add the end-of-word symbol: "
                  + "; ".join(f"{w} → {' '.join(s)}" for w, s in
                              history.steps[0].segmentation.items()) + ".", {})]
    for before, s in zip(history.steps, history.steps[1:]):
        others = next_best(count_pairs(before.symbols, before.freqs), s.pair)
        steps.append(Step(
            f"Merge {s.step}", r"\arg\max_{(a,b)} \textstyle\sum_{w} f_w \cdot n_w(a,b)",
            f"The most frequent pair is ({s.pair[0]}, {s.pair[1]}) with {s.count}. Next best: "
            f"{others}. Glue the winner into “{s.new_symbol}” everywhere: "
            + "; ".join(f"{w} → {' '.join(seg)}" for w, seg in s.segmentation.items()) + ".",
            {"pair": s.pair, "count": s.count}))
    steps.append(Step("Answer", "", f"New symbols {fmt_values(merged)} with counts "
                      f"{fmt_values(np.array(counts))}.", {}))
    data = {"corpus": dict(freqs)}
    return Instance(ID, TITLE, prompt, data, fields, tuple(steps), seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    for _ in range(1000):
        n = int(rng.integers(3, 6))
        words = [str(w) for w in rng.choice(WORDS, size=n, replace=False)]
        freqs = {w: int(c) for w, c in zip(words, rng.integers(1, 7, size=n))}
        if _tie_free(train_bpe(freqs, num_merges=N_MERGES)):
            break
    return build(freqs, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 2, "Count pairs, merge the most frequent, count again.", _make,
                    has_source=False)
