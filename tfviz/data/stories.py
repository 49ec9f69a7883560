"""A tiny story corpus for our small language model, generated from a grammar.

About 40% of items are the coreference pattern (see ``coref.py``), drawn only from the
training combinations; the rest are simple sentences with clear word classes and
regular endings (-s, -ed, -ing, -er, -est, -ly) so BPE has shared pieces to merge:

    the quick fox chased the boxes.
    the bakers like the warm lake.
    the robot is dancing near the river.
    did the child follow the horse?
    when the dog shouted, the cat rested too.

Items are written with the surface variety people type (see ``coref.Surface``): about half
start with a capital, some have a space before the final punctuation, and the comma after a
"when" clause is optional. The served tokenizer lowercases, so capitals cost the model
nothing. The same seed gives the same corpus.

    >>> story_corpus(3, seed=0) == story_corpus(3, seed=0)
    True
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from tfviz.data.coref import CorefCombo, coref_split, coref_text, random_surface
from tfviz.data.lexicon import (
    ADVERBS,
    AGENTS,
    CREATURES,
    GRADABLE,
    INTRANSITIVE,
    NOUNS,
    NUMBERS,
    PLACES,
    PREPOSITIONS,
    TRANSITIVE,
    comparative,
    ing,
    past,
    plural,
    s_form,
    superlative,
)

COREF_FRACTION = 0.4
SUBJECTS = AGENTS + CREATURES  # things that can act
_WORD_OR_PUNCT = re.compile(r"[a-z']+|[^\sa-z']")


def _noun(rng: random.Random) -> str:
    """A singular or plural noun, e.g. "boat" or "boats"."""
    n = rng.choice(NOUNS)
    return plural(n) if rng.random() < 0.3 else n


def _transitive(rng: random.Random) -> str:
    c = rng.choice
    return f"the {c(GRADABLE)} {c(SUBJECTS)} {past(c(TRANSITIVE))} the {_noun(rng)}."


def _plural_subject(rng: random.Random) -> str:
    c = rng.choice
    return f"the {plural(c(SUBJECTS))} {c(TRANSITIVE)} the {c(GRADABLE)} {c(NOUNS)}."


def _present(rng: random.Random) -> str:
    c = rng.choice
    return f"the {c(SUBJECTS)} {s_form(c(INTRANSITIVE))} {c(PREPOSITIONS)} the {c(PLACES)}."


def _progressive(rng: random.Random) -> str:
    c = rng.choice
    return f"the {c(SUBJECTS)} is {ing(c(INTRANSITIVE))} {c(PREPOSITIONS)} the {c(PLACES)}."


def _comparison(rng: random.Random) -> str:
    c = rng.choice
    a, b = rng.sample(NOUNS, 2)
    return f"the {a} is {comparative(c(GRADABLE))} than the {b}."


def _superlative(rng: random.Random) -> str:
    c = rng.choice
    n = c(NOUNS)
    return f"the {n} is the {superlative(c(GRADABLE))} of the {plural(n)}."


def _question(rng: random.Random) -> str:
    c = rng.choice
    return f"did the {c(SUBJECTS)} {c(TRANSITIVE)} the {_noun(rng)}?"


def _exclaim(rng: random.Random) -> str:
    c = rng.choice
    a, b = rng.sample(SUBJECTS, 2)
    return f"the {a} and the {b} {past(c(INTRANSITIVE))} {c(ADVERBS)}!"


def _when(rng: random.Random) -> str:
    c = rng.choice
    a, b = rng.sample(SUBJECTS, 2)
    comma = "," if rng.random() < 0.7 else ""
    return f"when the {a} {past(c(INTRANSITIVE))}{comma} the {b} {past(c(INTRANSITIVE))} too."


def _counting(rng: random.Random) -> str:
    c = rng.choice
    return f"{c(NUMBERS)} {plural(c(SUBJECTS))} were {ing(c(INTRANSITIVE))} {c(ADVERBS)}."


TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    _transitive, _plural_subject, _present, _progressive, _comparison,
    _superlative, _question, _exclaim, _when, _counting,
)


def written(sentence: str, rng: random.Random) -> str:
    """A lowercase sentence as a person might type it: "The cat sat ." or "the cat sat."."""
    if rng.random() < 0.5:
        sentence = sentence[0].upper() + sentence[1:]
    if rng.random() < 0.15 and sentence[-1] in ".?!":
        sentence = sentence[:-1] + " " + sentence[-1]
    return sentence


def simple_sentence(rng: random.Random) -> str:
    """One non-coreference sentence from a randomly chosen template, as typed."""
    return written(rng.choice(TEMPLATES)(rng), rng)


def story_corpus(
    n_sentences: int,
    seed: int = 0,
    coref_fraction: float = COREF_FRACTION,
    split_seed: int = 0,
) -> list[str]:
    """``n_sentences`` items: coreference items (training combos of ``coref_split(split_seed)``,
    each in a random surface form) with probability ``coref_fraction``, simple sentences otherwise."""
    rng = random.Random(seed)
    train: tuple[CorefCombo, ...] = coref_split(split_seed)[0]
    return [coref_text(rng.choice(train), random_surface(rng)) if rng.random() < coref_fraction
            else simple_sentence(rng) for _ in range(n_sentences)]


def words_of(text: str) -> list[str]:
    """Split into lowercase words and punctuation:
    "Did the cat jump?" -> ["did", "the", "cat", "jump", "?"]."""
    return _WORD_OR_PUNCT.findall(text.lower())
