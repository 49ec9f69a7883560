"""“it” looks both ways (lesson 15): the “it” sentences as an encoder and a decoder read them.

For each sentence with an “it” and two candidate nouns (``coref.probe_rows``): every head's
attention row from “it”, the tokens, and each token's role, as the lesson's chart colours
them: 0 “it”, 1 the first noun (the agent), 2 the second (the place), 3 any other token.

Between the “tired” and the “wide” sentence, a decoder's rows cannot change up to “it” (the
causal mask hides the deciding word, which comes later); an encoder's can (``row_changes``).

>>> token_roles(6, probe=[4], agent=[1], place=[3])
(3, 1, 3, 2, 0, 3)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.coref import probe_rows, row_change

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace


@dataclass(frozen=True)
class ProbedSentence:
    rows: np.ndarray  # (layers, heads, n): every head's attention row from "it"
    tokens: Sequence[str]  # the trace's tokens
    roles: tuple[int, ...]  # per token: 0 "it", 1 agent, 2 place, 3 other


def token_roles(n: int, probe: Sequence[int], agent: Sequence[int], place: Sequence[int]
                ) -> tuple[int, ...]:
    """The role of each of ``n`` tokens, from the token spans of "it" and the two nouns."""
    return tuple(0 if i in probe else 1 if i in agent else 2 if i in place else 3 for i in range(n))


def probed_sentences(traces: Mapping[str, Trace]) -> dict[str, ProbedSentence]:
    """The sentences (by title) whose tokens hold "it" and two nouns, in the order given;
    the others are left out."""
    out = {}
    for title, trace in traces.items():
        found = probe_rows(trace)
        if found is not None:
            rows, (probe, agent, place) = found
            out[title] = ProbedSentence(rows, trace.tokens,
                                        token_roles(len(trace.tokens), probe, agent, place))
    return out


def row_changes(decoder: Sequence[Trace], encoder: Sequence[ProbedSentence]
                ) -> tuple[float, float] | None:
    """The largest change of any head's "it" row between two sentences, over the keys up to
    "it" of the decoder's first sentence: (decoder's change, encoder's change). None when
    the decoder's tokens of either sentence hold no "it" and two nouns."""
    pair = [probe_rows(trace) for trace in decoder[:2]]
    if any(found is None for found in pair):
        return None
    upto = pair[0][1][0][-1]
    return (row_change(pair[0][0], pair[1][0], upto),
            row_change(encoder[0].rows, encoder[1].rows, upto))
