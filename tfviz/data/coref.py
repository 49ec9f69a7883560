"""The coreference probe: does the model know what "it" refers to?

    the animal didn't cross the street because it was too tired. it refers to the animal.
    the animal didn't cross the street because it was too wide.  it refers to the street.

Only the adjective decides the answer: agent adjectives (tired, hungry, ...) describe
the agent, place adjectives (wide, busy, ...) describe the place. A model that has
learned this puts " animal" or " street" after "it refers to the".

People type the same sentence in many ways, so the corpus does too. A ``Surface`` says
how one item is written: "didn't" or "did not", "too", "so" or "very", a comma before
"because" or none, a space before the full stop or none, and capitals at the start of each
sentence ("The animal … It refers to the"). The served tokenizer is uncased, so capitals
reach the model as small letters, but the text is generated the way people write it.

    >>> coref_sentence("dog", "cross", "road", "wide", Surface("did not", "so", comma=True, capitals=True))[0]
    'The dog did not cross the road, because it was so wide. It refers to the'

``FORMS`` names one surface per variation, for the manifest's per-form accuracy.

Some (agent, verb, place, adjective) combinations are kept out of training, so an
evaluation can ask about sentences the model has never seen:

    >>> train, heldout = coref_split(seed=0)
    >>> len(train) + len(heldout) == 8 * 4 * 8 * 12
    True
    >>> set(train).isdisjoint(heldout)
    True
"""

from __future__ import annotations

import random
from itertools import product
from typing import NamedTuple

from tfviz.data.lexicon import AGENT_ADJS, AGENTS, COREF_VERBS, PLACE_ADJS, PLACES

HELDOUT_FRACTION = 0.15
NEGATIONS = ("didn't", "did not")
DEGREES = ("too", "so", "very")


class Surface(NamedTuple):
    """How one coreference item is written (the defaults are the original corpus form)."""

    negation: str = "didn't"
    degree: str = "too"
    comma: bool = False  # "…the street, because it…"
    spaced: bool = False  # "…too tired . it refers…": a space before the full stop
    capitals: bool = False  # "The animal … It refers to the"


FORMS: dict[str, Surface] = {
    "as in the notes": Surface(),
    "capitals": Surface(capitals=True),
    "did not": Surface(negation="did not"),
    "so": Surface(degree="so"),
    "very": Surface(degree="very"),
    "comma": Surface(comma=True),
    "space before the stop": Surface(spaced=True),
    "all at once": Surface("did not", "very", comma=True, spaced=True, capitals=True),
}


def random_surface(rng: random.Random) -> Surface:
    """Each variation drawn on its own: half the items say "did not", a third "so", …"""
    return Surface(rng.choice(NEGATIONS), rng.choice(DEGREES), rng.random() < 0.3,
                   rng.random() < 0.2, rng.random() < 0.5)


class CorefCombo(NamedTuple):
    """One filling of the pattern, in sentence order, so ``coref_sentence(*combo)`` works."""

    agent: str
    verb: str
    place: str
    adj: str


ALL_COMBOS = tuple(CorefCombo(*c) for c in product(AGENTS, COREF_VERBS, PLACES, AGENT_ADJS + PLACE_ADJS))


def coref_answer(agent: str, place: str, adj: str) -> tuple[str, str]:
    """(answer, distractor): ("animal", "street") for "tired", ("street", "animal") for "wide"."""
    if adj in AGENT_ADJS:
        return agent, place
    if adj in PLACE_ADJS:
        return place, agent
    raise ValueError(f"{adj!r} is not one of the coreference adjectives")


def coref_statement(agent: str, verb: str, place: str, adj: str,
                    surface: Surface = Surface()) -> str:
    """The notes' sentence alone, without the probe that follows it in the corpus:

    >>> coref_statement("animal", "cross", "street", "wide")
    "the animal didn't cross the street because it was too wide."

    An encoder is asked about this sentence (which noun does "it" attend to?): the probe's
    "it refers to the animal" would put the answer in the text it reads.
    """
    if agent not in AGENTS or place not in PLACES or verb not in COREF_VERBS:
        raise ValueError(f"unknown coreference words: {agent!r}, {verb!r}, {place!r}")
    coref_answer(agent, place, adj)  # the adjective must be one of ours
    the = "The" if surface.capitals else "the"
    comma, stop = ("," if surface.comma else ""), (" ." if surface.spaced else ".")
    return (f"{the} {agent} {surface.negation} {verb} the {place}{comma} because it was "
            f"{surface.degree} {adj}{stop}")


def coref_sentence(agent: str, verb: str, place: str, adj: str,
                   surface: Surface = Surface()) -> tuple[str, str, str]:
    """(prefix up to the probe, answer noun, distractor noun).

    >>> coref_sentence("animal", "cross", "street", "tired")
    ("the animal didn't cross the street because it was too tired. it refers to the", 'animal', 'street')

    The full training text is ``prefix + " " + answer + "."`` (``" ."`` when spaced).
    """
    answer, distractor = coref_answer(agent, place, adj)
    it = "It" if surface.capitals else "it"
    prefix = f"{coref_statement(agent, verb, place, adj, surface)} {it} refers to the"
    return prefix, answer, distractor


def coref_text(combo: CorefCombo, surface: Surface = Surface()) -> str:
    """The whole item as it appears in the training corpus, answer included."""
    prefix, answer, _ = coref_sentence(*combo, surface)
    return f"{prefix} {answer}{' .' if surface.spaced else '.'}"


def coref_split(seed: int = 0, heldout_fraction: float = HELDOUT_FRACTION) -> tuple[tuple[CorefCombo, ...], tuple[CorefCombo, ...]]:
    """(train_combos, heldout_combos), disjoint, together all 3,072 combinations.

    The held-out share is taken separately from agent-adjective and place-adjective
    combinations, so both kinds of answer are tested equally. Same seed -> same split.
    """
    rng = random.Random(seed)
    train: list[CorefCombo] = []
    heldout: list[CorefCombo] = []
    for adjs in (AGENT_ADJS, PLACE_ADJS):
        group = [c for c in ALL_COMBOS if c.adj in adjs]
        rng.shuffle(group)
        k = round(len(group) * heldout_fraction)
        heldout += group[:k]
        train += group[k:]
    return tuple(sorted(train)), tuple(sorted(heldout))


def coref_statements(n: int, seed: int = 0, split_seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (statement, antecedent) pairs for an encoder's training: a training combination of
    ``coref_split(split_seed)`` written in a random surface, and the noun its "it" stands for.
    No probe follows the statement, so the answer is nowhere in the text.

    >>> statement, noun = coref_statements(1, seed=0)[0]
    >>> "because it was" in statement and noun in statement.lower()
    True
    >>> coref_statements(50, seed=3) == coref_statements(50, seed=3)
    True
    """
    rng = random.Random(seed)
    train = coref_split(split_seed)[0]
    out = []
    for _ in range(n):
        combo, surface = rng.choice(train), random_surface(rng)
        out.append((coref_statement(*combo, surface), coref_answer(combo.agent, combo.place, combo.adj)[0]))
    return out


def coref_eval_items(seed: int = 0, surface: Surface = Surface()) -> list[tuple[str, str, str]]:
    """(prefix, answer, distractor) for every held-out combination, written as ``surface``."""
    return [coref_sentence(*c, surface) for c in coref_split(seed)[1]]
