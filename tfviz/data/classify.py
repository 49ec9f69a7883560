"""Two-way sentence tasks of our own, for fine-tuning bert-tiny on a labelled job (lesson 15).

Each example is (sentence, label), with label 0 or 1. Held-out examples come from word
combinations that no training example uses, so held-out accuracy measures a rule learned,
not sentences remembered.

``number``: do the two nouns agree in number (both one, or both many)?

    the cats chased the dog.      -> 0 (different)
    The chef pushed the boxes .   -> 0 (different)
    the cats chased the dogs.     -> 1 (same)

Neither noun alone says anything: each is singular or plural half the time, and the label
is whether the two match. A classifier that only adds up what each word brings cannot
answer (adding cannot compute "the same or not"); the words must be compared, and in a
transformer tokens compare each other by attention.

``it``: does "it" stand for the first noun or the second? The notes' sentence, in the
surfaces people type (``tfviz.data.coref``):

    the dog didn't cross the road because it was too tired.   -> 0 (the first noun)
    The dog did not cross the road, because it was so wide.   -> 1 (the second noun)

Training uses ``coref_split``'s training combinations, held-out examples its held-out ones,
the same split bert-tiny's pretraining kept apart.

>>> make_examples("number", 3, seed=0) == make_examples("number", 3, seed=0)
True
>>> TASKS["number"].labels
('different', 'same')
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tfviz.data.coref import coref_answer, coref_split, coref_statement, random_surface
from tfviz.data.lexicon import NOUNS, TRANSITIVE, past, plural
from tfviz.data.stories import SUBJECTS, written

Split = Literal["train", "heldout"]
HELDOUT_SHARE = 0.2  # of the number task's (subject, object) pairs


@dataclass(frozen=True)
class ClassifyTask:
    key: str
    title: str  # what the page calls it
    question: str  # the question each label answers
    labels: tuple[str, str]  # the meaning of label 0 and label 1
    note: str  # why the task is easy or hard for a head on frozen vectors, for the page
    make: Callable[[int, int, Split], list[tuple[str, int]]]  # (n, seed, split) -> examples


def number_pair_heldout(subject: str, obj: str) -> bool:
    """Whether the (subject, object) noun pair belongs to the number task's held-out split:
    a hash of the pair, so the split is the same for every seed and size."""
    digest = hashlib.blake2b(f"{subject}\x1f{obj}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 1000 < HELDOUT_SHARE * 1000


def number_examples(n: int, seed: int, split: Split = "train") -> list[tuple[str, int]]:
    """``n`` sentences "the SUBJECT VERBED the OBJECT." with label 1 when both nouns are singular
    or both plural, 0 otherwise; half of each, in random order. The held-out split uses only
    the (subject, object) pairs :func:`number_pair_heldout` keeps apart."""
    rng = random.Random(seed)
    want = split == "heldout"
    pairs = [(s, o) for s in SUBJECTS for o in NOUNS if s != o and number_pair_heldout(s, o) == want]
    out = []
    for i in range(n):
        subject, obj = rng.choice(pairs)
        many = rng.random() < 0.5
        same = i % 2 == 1  # balanced: half the examples of any n agree
        s = plural(subject) if many else subject
        o = plural(obj) if many == same else obj
        out.append((written(f"the {s} {past(rng.choice(TRANSITIVE))} the {o}.", rng), int(same)))
    rng.shuffle(out)
    return out


def it_examples(n: int, seed: int, split: Split = "train") -> list[tuple[str, int]]:
    """``n`` coreference statements, label 0 when "it" is the first noun (the agent), 1 when it
    is the second (the place); training or held-out combinations of ``coref_split(0)``."""
    rng = random.Random(seed)
    combos = coref_split(0)[0 if split == "train" else 1]
    out = []
    for _ in range(n):
        combo = rng.choice(combos)
        answer, _ = coref_answer(combo.agent, combo.place, combo.adj)
        out.append((coref_statement(*combo, random_surface(rng)), int(answer == combo.place)))
    return out


TASKS = {
    "number": ClassifyTask(
        "number", "Same number?", "Are the two nouns both one, or both many?", ("different", "same"),
        "Neither noun alone gives the answer: each is one or many half the time, and the label says "
        "whether the two match. The head reads only the mean of the last layer's vectors, and a "
        "mean adds up what each token brings; adding cannot tell “the same” from “different”. "
        "So the tokens must have compared each other inside the model; whether bert-tiny's "
        "pretrained layers already do is what the head-only run tests.", number_examples),
    "it": ClassifyTask(
        "it", "Which noun is “it”?", "Does “it” stand for the first noun or the second?",
        ("first noun", "second noun"),
        "The adjective decides, and bert-tiny's pretraining already asked its “it” for the noun "
        "(section 3): its vectors may carry the answer before any fine-tuning. Held out: the "
        "word combinations its pretraining never read.", it_examples),
}


def make_examples(task: str, n: int, seed: int, split: Split = "train") -> list[tuple[str, int]]:
    """``n`` (sentence, label) examples of the task called ``task``."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {sorted(TASKS)}")
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    return TASKS[task].make(n, seed, split)
