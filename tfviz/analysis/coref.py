"""Which attention head links "it" to the noun it stands for?

In "the animal didn't cross the street because it was too tired", "it" is the animal; swap
"tired" for "wide" and "it" is the street. This module finds the three words in any
tokenization and reads how much the probe token attends to each noun.

Finding the words. Tokens may be BPE pieces with a leading-space marker ("␣animal", "Ġit")
or single characters ("a", "n", …, "␣"). We glue the token strings back into text, split it
into words, and remember which tokens each word came from:

>>> toks = ["␣the", "␣animal", "␣didn", "'t", "␣cross", "␣the", "␣street", "␣because",
...         "␣it", "␣was", "␣too", "␣tired"]
>>> find_coref_positions(toks)
CorefPositions(probe=8, agent=1, place=6)
>>> find_coref_positions(list("the dog saw the park because it was wide"))
CorefPositions(probe=30, agent=6, place=19)
>>> find_coref_positions(["␣hello", "␣world"]) is None
True

Each position is the LAST token of its word (where a decoder has read the whole word).
``probe="last"`` uses the final token instead of "it", e.g. for a prompt ending in
"… it refers to the" whose next token should be the antecedent.

Measuring. ``antecedent_weights(trace, probe, [agent, place])`` is an array
(layers, heads, 2) of attention weights; ``antecedent_gap`` is "weight on the agent noun minus
weight on the place noun" for one sentence, per (layer, head).

Both ways (lesson 15). ``probed_sentences`` keeps, for each sentence with an "it" and two
nouns, every head's attention row from "it" and each token's role as the lesson's chart
colours it: 0 "it", 1 the first noun (the agent), 2 the second (the place), 3 any other token.
Between the "tired" and the "wide" sentence a decoder's rows cannot change up to "it" (the
causal mask hides the deciding word, which comes later); an encoder's can (``row_changes``).

>>> token_roles(6, probe=[4], agent=[1], place=[3])
(3, 1, 3, 2, 0, 3)
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace

SPACE_MARKERS = ("␣", "Ġ", "▁")  # readable byte-level, raw GPT-2 byte-level, SentencePiece
DETERMINERS = ("the", "a", "an", "this", "that", "my", "his", "her", "their", "our", "your")
PRONOUNS = ("it",)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


class CorefPositions(NamedTuple):
    probe: int  # the query token ("it", or the last token)
    agent: int  # the first noun (the one doing things: "animal")
    place: int  # the second noun ("street")


def is_wordpiece(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` are WordPiece's (a BERT checkpoint's): no token of two or more
    carries a space or a space marker, since WordPiece marks the pieces that continue a word
    ("##imal") instead of the ones that start one. Byte-level and letter tokenizers keep every
    space, so any text of two words or more shows one.

    >>> is_wordpiece(["[CLS]", "the", "an", "##imal", "[SEP]"]), is_wordpiece(["␣the", "␣cat"])
    (True, False)
    """
    return len(tokens) > 1 and not any(m in tok for tok in tokens for m in (*SPACE_MARKERS, " "))


def token_words(tokens: Sequence[str]) -> list[tuple[str, list[int]]]:
    """[(lower-case word, token positions it came from), …] in order. WordPiece tokens
    (:func:`is_wordpiece`) start a word unless they begin with "##".

    >>> token_words(["␣the", "␣an", "imal", "."])
    [('the', [0]), ('animal', [1, 2])]
    >>> token_words(["[CLS]", "the", "an", "##imal", "it", "[SEP]"])
    [('cls', [0]), ('the', [1]), ('animal', [2, 3]), ('it', [4]), ('sep', [5])]
    """
    wordpiece = is_wordpiece(tokens)
    text, owner = [], []
    for pos, tok in enumerate(tokens):
        if wordpiece:
            tok = tok[2:] if tok.startswith("##") else " " + tok
        for marker in SPACE_MARKERS:
            tok = tok.replace(marker, " ")
        text.append(tok.lower())
        owner.extend([pos] * len(tok))
    joined = "".join(text)
    return [(m.group(), sorted(set(owner[m.start():m.end()]))) for m in _WORD.finditer(joined)]


def coref_spans(tokens: Sequence[str], probe: str = "it") -> tuple[list[int], list[int], list[int]] | None:
    """Token positions of every piece of (probe word, agent noun, place noun), or None.

    The probe is the first "it" after "because" (else the first "it"); the two nouns are the
    words right after the first two determiners ("the", "a", …) before it. With
    ``probe="last"`` the probe span is just the final token (an "it" is still required).
    """
    words = token_words(tokens)
    names = [w for w, _ in words]
    its = [i for i, w in enumerate(names) if w in PRONOUNS]
    if not its:
        return None
    after_because = [i for i in its if "because" in names[:i]]
    it_index = (after_because or its)[0]
    nouns = [i + 1 for i in range(it_index - 1) if names[i] in DETERMINERS
             and names[i + 1] not in DETERMINERS + PRONOUNS]
    if len(nouns) < 2:
        return None
    agent, place = words[nouns[0]][1], words[nouns[1]][1]
    probe_span = [len(tokens) - 1] if probe == "last" else words[it_index][1]
    if probe_span[-1] <= place[-1]:
        return None
    return probe_span, agent, place


def find_coref_positions(tokens: Sequence[str], probe: str = "it") -> CorefPositions | None:
    """(probe_pos, agent_pos, place_pos) as the last token of each word, or None if the text
    is not an "X … the Y because it …" sentence. ``probe`` is "it" or "last"."""
    spans = coref_spans(tokens, probe)
    if spans is None:
        return None
    return CorefPositions(*(span[-1] for span in spans))


def _patterns(trace_or_patterns) -> np.ndarray:
    """(layers, heads, n, n) from a Trace or from an array / list of per-layer patterns."""
    if hasattr(trace_or_patterns, "activations"):
        trace = trace_or_patterns
        return trace.stack("pattern")
    return np.asarray(trace_or_patterns if not isinstance(trace_or_patterns, list)
                      else np.stack(trace_or_patterns))


def antecedent_weights(trace, query_pos: int, positions: Iterable[int | Sequence[int]]) -> np.ndarray:
    """(layers, heads, len(positions)): attention from ``query_pos`` to each position.

    ``trace`` is a Trace or an array (layers, heads, n, n). A position may also be a list of
    token positions (a word split into pieces): its weights are added up.
    """
    p = _patterns(trace)[:, :, query_pos, :]  # (layers, heads, n_keys)
    cols = []
    for pos in positions:
        idx = [pos] if isinstance(pos, (int, np.integer)) else list(pos)
        cols.append(p[:, :, idx].sum(axis=-1))  # (layers, heads)
    return np.stack(cols, axis=-1).astype(np.float64)


def antecedent_gap(trace, probe: str = "it") -> np.ndarray | None:
    """(layers, heads): weight on the agent noun minus weight on the place noun, from the probe
    ("it" or "last"), each noun's pieces added up. None if the text is not a coref sentence."""
    spans = coref_spans(trace.tokens, probe)
    if spans is None:
        return None
    w = antecedent_weights(trace, spans[0][-1], [spans[1], spans[2]])  # (L, H, 2)
    return w[..., 0] - w[..., 1]


SWITCH_FLOOR = 1e-6  # a move smaller than this is float noise: no head switches


def switches(moved: float) -> bool:
    """Whether ``switching_head``'s move is a real one (above float noise).

    >>> switches(0.6), switches(-2e-7)
    (True, False)
    """
    return abs(moved) >= SWITCH_FLOOR


def switching_head(gap_agent: np.ndarray, gap_place: np.ndarray) -> tuple[tuple[int, int], float]:
    """The head whose preference moves most between the "tired" and the "wide" sentence.

    A head that always looks at the first noun has the same gap in both and scores 0; a head
    that follows the meaning moves towards the agent for "tired" and the place for "wide".
    Returns ((layer, head), gap_agent − gap_place at that head).

    >>> head, moved = switching_head(np.array([[0.9, 0.1]]), np.array([[0.9, -0.5]]))
    >>> head, round(moved, 2)
    ((0, 1), 0.6)
    """
    change = gap_agent - gap_place
    head = best_head(change)
    return head, float(change[head])


def best_head(diff: np.ndarray) -> tuple[int, int]:
    """(layer, head) with the largest |difference| in a (layers, heads) array."""
    layer, head = np.unravel_index(int(np.argmax(np.abs(diff))), diff.shape)
    return int(layer), int(head)


def head_pick(pair: np.ndarray) -> str | None:
    """Which noun a head's two weights (agent first, then place) favour: "agent", "place", or
    None when they tie.

    >>> head_pick(np.array([0.011, 0.176])), head_pick(np.array([0.5, 0.5]))
    ('place', None)
    """
    agent, place = (float(w) for w in pair)
    return None if agent == place else "agent" if agent > place else "place"


def answer_for(tokens: Sequence[str]) -> str | None:
    """"agent" if the sentence ends with a word about the agent ("tired"), "place" for one about
    the place ("wide"), None if we don't know the word. Small built-in lists; see
    tfviz/data for the training vocabulary."""
    words = [w for w, _ in token_words(tokens)]
    for w in reversed(words):
        if w in AGENT_WORDS:
            return "agent"
        if w in PLACE_WORDS:
            return "place"
    return None


AGENT_WORDS = ("tired", "hungry", "scared", "sleepy", "weak", "lazy", "afraid", "slow")
PLACE_WORDS = ("wide", "busy", "long", "wet", "dark", "steep", "narrow", "crowded")


# --- which head resolves "it", measured over many sentences ------------------------------


class CorefHead(NamedTuple):
    layer: int
    head: int
    share: float  # of the held-out sentences, where this head prefers the right noun


def prefers_right(patterns: np.ndarray, spans: tuple[Sequence[int], Sequence[int], Sequence[int]],
                  answer: str) -> np.ndarray:
    """(layers, heads) booleans: from the probe (the last token of ``spans[0]``), does each head
    give the right noun more weight than the other? Each noun's pieces are added up.

    >>> p = np.zeros((1, 2, 3, 3)); p[0, 0, 2] = [0.6, 0.3, 0.1]; p[0, 1, 2] = [0.2, 0.7, 0.1]
    >>> prefers_right(p, ([2], [0], [1]), "place").tolist()
    [[False, True]]
    """
    if answer not in ("agent", "place"):
        raise ValueError("answer must be 'agent' or 'place'")
    w = antecedent_weights(patterns, spans[0][-1], [spans[1], spans[2]])  # (L, H, 2)
    agent_wins = w[..., 0] > w[..., 1]
    place_wins = w[..., 1] > w[..., 0]
    return agent_wins if answer == "agent" else place_wins


def preference_share(items: Iterable[tuple[np.ndarray, tuple, str]]) -> np.ndarray:
    """(layers, heads): the share of ``items`` (patterns, spans, answer) on which each head
    prefers the right noun (``prefers_right``). A head that always looks at the first noun
    scores the share of "agent" answers (0.5 on a balanced set); only a head that switches
    with the adjective can score near 1."""
    wins = [prefers_right(p, spans, answer) for p, spans, answer in items]
    if not wins:
        raise ValueError("preference_share needs at least one item")
    return np.mean(wins, axis=0)


def chosen_head(selection: np.ndarray, heldout: np.ndarray) -> CorefHead:
    """The head with the best share on the ``selection`` sentences (ties: the first), scored on
    the ``heldout`` ones. Choosing on one set and scoring on another keeps the reported share
    honest: the best of eight heads on the same sentences would flatter it.

    >>> chosen_head(np.array([[0.6, 0.9]]), np.array([[0.7, 0.8]]))
    CorefHead(layer=0, head=1, share=0.8)
    """
    layer, head = np.unravel_index(int(np.argmax(selection)), selection.shape)
    return CorefHead(int(layer), int(head), float(heldout[layer, head]))


def probe_rows(trace) -> tuple[np.ndarray, tuple[list[int], list[int], list[int]]] | None:
    """(layers, heads, n): every head's attention row from "it" (the last token of the word),
    with the (probe, agent, place) token spans; None if the text is not a coref sentence."""
    spans = coref_spans(trace.tokens)
    if spans is None:
        return None
    return _patterns(trace)[:, :, spans[0][-1], :], spans


def row_change(rows_a: np.ndarray, rows_b: np.ndarray, upto: int) -> float:
    """The largest |difference| between two sentences' probe rows over keys 0..upto, which
    both sentences share (the words before and including "it").

    A decoder's "it" cannot see the adjective that comes after it, so for it this is 0 (up
    to float rounding); an encoder's "it" reads the whole sentence and can change its mind.

    >>> row_change(np.array([[[0.5, 0.5, 0.0]]]), np.array([[[0.5, 0.5, 0.0]]]), 1)
    0.0
    """
    return float(np.abs(rows_a[..., :upto + 1] - rows_b[..., :upto + 1]).max())


# ----- "it" read both ways: an encoder's rows against a decoder's ---------------------------


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
    and including "it", the words both sentences share: (decoder's change, encoder's change).
    Each model is read at its own "it", since their tokenizers may place it differently (a
    BERT checkpoint's text starts with [CLS]). None when the decoder's tokens of either
    sentence hold no "it" and two nouns."""
    pair = [probe_rows(trace) for trace in decoder[:2]]
    if any(found is None for found in pair):
        return None
    upto = pair[0][1][0][-1]
    encoder_upto = max(i for i, role in enumerate(encoder[0].roles) if role == 0)
    return (row_change(pair[0][0], pair[1][0], upto),
            row_change(encoder[0].rows, encoder[1].rows, encoder_upto))
