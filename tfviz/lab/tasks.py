"""The training lab's tasks: small problems a transformer learns in seconds, each with its
vocabulary, train / held-out split, scoring and a default architecture.

Every task turns a symbolic example (source, answer) into one row of token ids and a row of
targets of the same length; a position whose target is ``IGNORE`` is not scored:

    reverse (decoder)   <bos> c a b <sep> b a c        predicts  b a c <eos> after <sep>
    order   (encoder)   <bos> d x k y <sep>            predicts  x at <sep> (x came first)
    induction (decoder) <bos> h q d w q d w            predicts  d w after the second q

A held-out example is *solved* when every scored position's most likely token is the target.
For a decoder this is the same as greedy decoding reproducing the whole answer: if every
prediction is right when the true prefix is fed in, greedy decoding feeds in that same prefix.

The split is fixed, whatever the seed: letter tasks keep out the sources whose hash falls in
the held-out tenth (``tfviz.data.tasks.is_heldout``), the stories keep out 15% of the
(agent, verb, place, adjective) combinations (``coref_split``). The seed only chooses which
examples are drawn.

>>> task = TASKS["reverse"]
>>> ids, targets = task.encode((("c", "a"), ("a", "c")))
>>> task.vocab.decode(ids), [task.vocab.tokens[t] if t >= 0 else "." for t in targets]
(['<bos>', 'c', 'a', '<sep>', 'a', 'c'], ['.', '.', '.', 'a', 'c', '<eos>'])
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import numpy as np

from tfviz.data.coref import (ALL_COMBOS, DEGREES, NEGATIONS, Surface, coref_sentence, coref_split,
                              random_surface)
from tfviz.data.stories import words_of
from tfviz.data.tasks import (DIGITS, LETTERS, TaskVocab, is_heldout, make_copy, make_reverse,
                              make_sort)

IGNORE = -100  # F.cross_entropy's ignore_index: this position is not scored
Split = Literal["train", "heldout"]
Example = tuple[tuple[str, ...], tuple[str, ...]]  # (source symbols, answer symbols)
TaskArch = Literal["decoder", "encoder"]

SEQ_LENGTHS = (3, 8)  # copy and reverse: 3 to 8 letters
# Sort: 3 to 6 of the letters a-h. With 3 to 8 of a-p the default needed about twice the steps
# to reach 95% held out, past the lab's 30 s target (``python -m bench.bench_lab``).
SORT_LENGTHS = (3, 6)
SORT_ALPHABET = LETTERS[:8]
ORDER_LENGTH = 8  # the order task: 8 symbols, two of them the markers x and y
MARKERS = ("x", "y")
RECALL_LENGTH = 16  # recall: 16 symbols, a digit somewhere in the first half
# induction: 0 to 5 symbols, a run of 5 to 9, the run again; all distinct symbols of 26 (rows of
# at most 1 + 5 + 2 x 9 - 1 = 23 tokens).
REPEAT_LENGTHS = (5, 9)
REPEAT_LEAD = (0, 5)
REPEAT_ALPHABET = tuple("abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class LabTask:
    """One task: how its examples are drawn, encoded and scored, and a setting that learns it.

    ``arch`` is "decoder" (causal attention, answers written after ``<sep>``) or "encoder"
    (every token sees every other, answer read at the final ``<sep>``). The order task needs
    the encoder: a causal mask alone tells a token what came before it, which would give the
    answer away without any positions.
    ``defaults`` are the :class:`~tfviz.lab.settings.LabSettings` fields that reach >= 95%
    held-out accuracy within 30 s on two shared cores (``python -m bench.bench_lab``).
    """

    key: str
    title: str
    blurb: str
    vocab: TaskVocab
    arch: TaskArch
    max_len: int  # longest input row, so the model's context is never exceeded
    chance: float  # held-out accuracy of guessing (what a model that learns nothing scores)
    draw: Callable[[int, int, Split], list[Example]] = field(repr=False)
    layout: Literal["seq2seq", "answer", "repeat"] = "seq2seq"
    # Train on every next token, not only the scored ones (the stories: learning to read the
    # whole sentence first makes the answer come much sooner). Held-out scoring is unchanged.
    train_on_all: bool = False
    defaults: dict = field(default_factory=dict)

    def examples(self, n: int, seed: int, split: Split) -> list[Example]:
        """``n`` symbolic examples of ``split``, the same for the same seed."""
        return self.draw(n, seed, split)

    def encode(self, example: Example) -> tuple[list[int], list[int]]:
        """(input ids, targets) of one example, both the same length."""
        source, answer = example
        v = self.vocab
        if self.layout == "seq2seq":  # <bos> source <sep> answer <eos>; score answer and <eos>
            row = v.encode(["<bos>", *source, "<sep>", *answer, "<eos>"])
            start = len(source) + 1  # the <sep>, whose next token is the first of the answer
            targets = [IGNORE] * start + row[start + 1:]
            return row[:-1], targets
        if self.layout == "repeat":  # <bos> lead run run: score the second copy's tokens after its first
            row = v.encode(["<bos>", *source, *answer])
            return row[:-1], [IGNORE] * (len(source) + 1) + row[len(source) + 2:]
        # "answer": the input is <bos> source (<sep> for the encoder task), scored at the last place
        row = v.encode(["<bos>", *source] + (["<sep>"] if self.arch == "encoder" else []))
        (answer_symbol,) = answer
        return row, [IGNORE] * (len(row) - 1) + [v.encode([answer_symbol])[0]]

    def encode_many(self, examples: Sequence[Example]) -> tuple[np.ndarray, np.ndarray]:
        """(ids, targets), each (N, T) int64, rows padded on the right with ``<pad>`` / IGNORE.

        A decoder never sees the padding (it lies to the right); the encoder task's rows all
        have the same length, so it has none.
        """
        rows = [self.encode(e) for e in examples]
        T = max(len(r) for r, _ in rows)
        ids = np.full((len(rows), T), self.vocab.pad_id, dtype=np.int64)
        targets = np.full((len(rows), T), IGNORE, dtype=np.int64)
        for i, (r, t) in enumerate(rows):
            ids[i, : len(r)], targets[i, : len(t)] = r, t
        return ids, targets


def next_token_targets(ids: np.ndarray, targets: np.ndarray, pad_id: int = 0) -> np.ndarray:
    """``targets``, with every other real position asked for its next token as well.

    >>> next_token_targets(np.array([[1, 7, 8, 0]]), np.array([[-100, -100, 9, -100]])).tolist()
    [[7, 8, 9, -100]]
    """
    shifted = np.full_like(targets, IGNORE)
    shifted[:, :-1] = np.where(ids[:, 1:] != pad_id, ids[:, 1:], IGNORE)
    return np.where(targets != IGNORE, targets, shifted)


def solved(predicted: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(N,) bool: every scored position of the row predicted right.

    >>> solved(np.array([[5, 7, 9], [5, 8, 9]]), np.array([[-100, 7, 9], [-100, 7, 9]])).tolist()
    [True, False]
    """
    scored = targets != IGNORE
    return ((predicted == targets) | ~scored).all(axis=1)


def accuracy(predicted: np.ndarray, targets: np.ndarray) -> float:
    """Share of rows solved (see :func:`solved`)."""
    return float(solved(predicted, targets).mean())


# ----- the order task --------------------------------------------------------------------------
def order_label(source: Sequence[str]) -> str:
    """Which marker comes first: ("d", "y", "k", "x") -> "y"."""
    return min(MARKERS, key=list(source).index)


def make_order(n: int, seed: int, split: Split = "train", length: int = ORDER_LENGTH) -> list[Example]:
    """``length`` symbols: letters, with x and y once each at random places; answer: which came
    first. Each drawn source also comes with x and y swapped, so both answers are equally common
    and a model blind to order scores exactly one half.

    >>> make_order(2, seed=0)[0][1] != make_order(2, seed=0)[1][1]
    True
    """
    rng = random.Random(seed)
    out: list[Example] = []
    while len(out) < n:
        source = [rng.choice(LETTERS) for _ in range(length)]
        i, j = rng.sample(range(length), 2)
        source[i], source[j] = "x", "y"
        if is_heldout(sorted(source)) != (split == "heldout"):  # the swap stays on the same side
            continue
        swapped = tuple({"x": "y", "y": "x"}.get(s, s) for s in source)
        for s in (tuple(source), swapped):
            out.append((s, (order_label(s),)))
    return out[:n]


# ----- recall far back -------------------------------------------------------------------------
def make_recall(n: int, seed: int, split: Split = "train", length: int = RECALL_LENGTH) -> list[Example]:
    """``length`` letters, one of them replaced by a digit in the first half; answer: the digit.

    The digit lies :func:`recall_reach` (9 to 16) tokens back from the ``<sep>`` where the
    answer is asked, so one attention hop has to reach it across the sequence, by what it is
    (a digit), not by where it is.

    >>> (source, answer), = make_recall(1, seed=3)
    >>> len(source), [s for s in source if s in DIGITS] == list(answer)
    (16, True)
    """
    rng = random.Random(seed)
    out: list[Example] = []
    while len(out) < n:
        source = [rng.choice(LETTERS) for _ in range(length)]
        digit = rng.choice(DIGITS)
        source[rng.randrange(length // 2)] = digit
        if is_heldout(source) == (split == "heldout"):
            out.append((tuple(source), (digit,)))
    return out


def recall_reach(length: int = RECALL_LENGTH) -> tuple[int, int]:
    """How many tokens back from the final ``<sep>`` the recall digit can lie: (nearest,
    farthest). The row is ``<bos> s_0 … s_{length-1} <sep>`` and the digit is one of the first
    ``length // 2`` symbols, so s_i lies length − i tokens back.

    >>> recall_reach()
    (9, 16)
    """
    return length - (length // 2 - 1), length


# ----- induction: a random sequence, repeated ---------------------------------------------------
def make_repeat(n: int, seed: int, split: Split = "train", lengths: tuple[int, int] = REPEAT_LENGTHS,
                lead: tuple[int, int] = REPEAT_LEAD, alphabet: Sequence[str] = REPEAT_ALPHABET
                ) -> list[Example]:
    """``n`` examples: 0 to 5 random symbols, then a run of 5 to 9 more; the answer is the run
    again. Every symbol of a source is distinct, so only the repeat can be predicted.

    The run's length and start vary, so its copy is not at a fixed distance back: a head has to
    find the earlier copy by what it holds (an induction head). The symbols before the run keep
    a shortcut away: with a bare run, "the earliest symbol seen only once" would be the answer.

    >>> (source, answer), = make_repeat(1, seed=0)
    >>> source[-len(answer):] == answer, len(set(source)) == len(source)
    (True, True)
    """
    rng = random.Random(seed)
    out: list[Example] = []
    while len(out) < n:
        k, L = rng.randint(*lead), rng.randint(*lengths)
        source = tuple(rng.sample(alphabet, k + L))  # k lead symbols, then the run of L
        if is_heldout(source) == (split == "heldout"):
            out.append((source, source[k:]))
    return out


def repeat_layout(ids: Sequence[int], pad_id: int = 0) -> tuple[int, int]:
    """(start, L) of an induction row ``<bos> n_1 … n_k s_1 … s_L s_1 … s_{L-1}`` (padding on the
    right ignored): the first copy of the run sits at start … start+L-1, the second at
    start+L …; found as the first token that has been seen before.

    >>> repeat_layout([1, 9, 7, 8, 6, 7, 8, 0])   # <bos> n s_1 s_2 s_3 s_1 s_2 <pad>
    (2, 3)
    """
    seen: dict[int, int] = {}
    for j, t in enumerate(ids):
        if t == pad_id:
            break
        if t in seen:
            return seen[t], j - seen[t]
        seen[t] = j
    raise ValueError("no repeated token: not a row of the induction task")


# ----- the coreference stories ----------------------------------------------------------------
@cache
def story_words() -> tuple[str, ...]:
    """Every word and punctuation mark of the "it refers to the" items, in every surface form
    (sorted); the stories task's vocabulary."""
    words = set()
    for negation in NEGATIONS:  # the fixed words of every surface form, on one combination
        for degree in DEGREES:
            prefix, _, _ = coref_sentence(*ALL_COMBOS[0], Surface(negation, degree, comma=True))
            words |= set(words_of(prefix))
    for combo in ALL_COMBOS:  # and every agent, verb, place and adjective
        words |= set(combo)
    return tuple(sorted(words))


def make_stories(n: int, seed: int, split: Split = "train") -> list[Example]:
    """"the dog did not cross the road , because it was so wide . it refers to the" -> road.

    Held out: the combinations ``coref_split(0)`` keeps out of training, so the model is tested
    on stories it never read; only the adjective decides which noun is meant.
    """
    train, heldout = coref_split(0)
    combos = heldout if split == "heldout" else train
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prefix, answer, _ = coref_sentence(*rng.choice(combos), random_surface(rng))
        out.append((tuple(words_of(prefix)), (answer,)))
    return out


def _seq(make, lengths: tuple[int, int] = SEQ_LENGTHS,
         alphabet: Sequence[str] = LETTERS) -> Callable[[int, int, Split], list[Example]]:
    return lambda n, seed, split: make(n, seed, lengths=lengths, alphabet=alphabet, split=split)


_LETTERS = TaskVocab(LETTERS)
_SEQ_LEN = 2 * SEQ_LENGTHS[1] + 2  # <bos> 8 letters <sep> 8 letters (the <eos> is only a target)

TASKS: dict[str, LabTask] = {
    "copy": LabTask(
        "copy", "Copy", "Write the letters again: c a b → c a b. A head learns to look back to "
        "the letter after the one it just wrote (an induction head).", _LETTERS, "decoder",
        _SEQ_LEN, 1 / 16 ** 3, _seq(make_copy),
        defaults=dict(n_layers=2, n_heads=2, d_model=64, lr=3e-3, steps=400)),
    "reverse": LabTask(
        "reverse", "Reverse", "Write the letters backwards: c a b → b a c. Each answer letter "
        "sits at a mirrored distance, so positions matter.", _LETTERS, "decoder", _SEQ_LEN,
        1 / 16 ** 3, _seq(make_reverse),
        defaults=dict(n_layers=2, n_heads=2, d_model=64, lr=3e-3, steps=400)),
    "sort": LabTask(
        "sort", "Sort", "Put the letters in alphabetical order: c a b → a b c. The next letter "
        "is the smallest one not written yet.", TaskVocab(SORT_ALPHABET), "decoder",
        2 * SORT_LENGTHS[1] + 2, 1 / 8 ** 3, _seq(make_sort, SORT_LENGTHS, SORT_ALPHABET),
        defaults=dict(n_layers=2, n_heads=2, d_model=64, lr=3e-3, steps=400)),
    "stories": LabTask(
        "stories", "Who is “it”?", "Finish “the animal didn't cross the street because it was "
        "too tired. it refers to the …”: the adjective decides between the two nouns. Tested on "
        "stories never seen in training.", TaskVocab(story_words()), "decoder", 24, 1 / 2,
        make_stories, layout="answer", train_on_all=True,
        defaults=dict(n_layers=2, n_heads=2, d_model=32, lr=3e-3, steps=500)),
    "order": LabTask(
        "order", "Which came first?", "Eight symbols hold an x and a y: which one came first? "
        "Without positions every token sees the same crowd in any order, so the model can only "
        "guess (50%).", TaskVocab(LETTERS + MARKERS), "encoder", ORDER_LENGTH + 2, 1 / 2,
        make_order, layout="answer",
        defaults=dict(n_layers=2, n_heads=2, d_model=64, lr=3e-3, steps=200)),
    "recall": LabTask(
        "recall", "Recall far back", f"{RECALL_LENGTH} letters hide one digit in their first half; "
        f"at the end, say the digit. It lies {recall_reach()[0]} to {recall_reach()[1]} tokens "
        "back from the `<sep>` where the answer is asked, so attention must reach it "
        "across the sequence and find it by what it is.", TaskVocab(LETTERS + DIGITS), "encoder",
        RECALL_LENGTH + 2, 1 / 10, make_recall, layout="answer",
        defaults=dict(n_layers=1, n_heads=1, d_model=32, lr=3e-3, steps=200)),
    "induction": LabTask(
        "induction", "Repeat a random sequence (induction)", "Random letters, then a run of "
        "them again: h q d w q d w. Nothing before the repeat can be predicted; in it, each "
        "letter is the one that followed the same letter before. Attention alone (no feed-forward) "
        "grows two heads that work as a pair: one copies each token's previous token into it, and "
        "an induction head looks for the earlier token whose previous token matches the current one.",
        TaskVocab(REPEAT_ALPHABET), "decoder", REPEAT_LEAD[1] + 2 * REPEAT_LENGTHS[1],
        1 / 26 ** (REPEAT_LENGTHS[0] - 1), make_repeat,
        layout="repeat", train_on_all=True,
        defaults=dict(n_layers=2, n_heads=4, d_model=64, positional="rope", lr=3e-3, steps=600,
                      ffn=False)),
}
TASK_NAMES = tuple(TASKS)
