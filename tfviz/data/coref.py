"""The coreference probe: does the model know what "it" refers to?

    the animal didn't cross the street because it was too tired. it refers to the animal.
    the animal didn't cross the street because it was too wide.  it refers to the street.

Only the adjective decides the answer: agent adjectives (tired, hungry, ...) describe
the agent, place adjectives (wide, busy, ...) describe the place. A model that has
learned this puts " animal" or " street" after "it refers to the".

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


def coref_sentence(agent: str, verb: str, place: str, adj: str) -> tuple[str, str, str]:
    """(prefix up to the probe, answer noun, distractor noun).

    >>> coref_sentence("animal", "cross", "street", "tired")
    ("the animal didn't cross the street because it was too tired. it refers to the", 'animal', 'street')

    The full training text is ``prefix + " " + answer + "."``.
    """
    if agent not in AGENTS or place not in PLACES or verb not in COREF_VERBS:
        raise ValueError(f"unknown coreference words: {agent!r}, {verb!r}, {place!r}")
    answer, distractor = coref_answer(agent, place, adj)
    prefix = f"the {agent} didn't {verb} the {place} because it was too {adj}. it refers to the"
    return prefix, answer, distractor


def coref_text(combo: CorefCombo) -> str:
    """The whole item as it appears in the training corpus, answer included."""
    prefix, answer, _ = coref_sentence(*combo)
    return f"{prefix} {answer}."


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


def coref_eval_items(seed: int = 0) -> list[tuple[str, str, str]]:
    """(prefix, answer, distractor) for every held-out combination, for evaluation."""
    return [coref_sentence(*c) for c in coref_split(seed)[1]]
