"""Static and contextual vectors: the same word in two places, layer by layer (lesson 5).

A word-embedding table (word2vec, or a transformer's own token embedding) gives a word one
vector wherever it stands: "record" in "I record the record" gets the same row twice, and the
row of "it" cannot say what "it" refers to. Self-attention is what changes that: each block
adds to a token's vector what it read from the other tokens, so after a block the same word
in two contexts has two vectors.

:func:`same_word` measures it from two traces (or one trace twice, for a word that occurs twice
in one text). For each stage of the residual stream, the two vectors' cosine and each vector's
nearest neighbours among its own sentence's tokens at that stage:

- ``token embedding``: the row of the embedding table (``hook_embed``), the static vector;
- ``into block 0``: what the first block reads (``blocks.0.hook_resid_pre``: the embedding plus
  the position's vector, where the model adds one, and after BERT's embedding LayerNorm);
- ``after block l``: ``blocks.l.hook_resid_post``, the contextual vectors.

>>> import numpy as np
>>> cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])).round(4)
np.float64(0.7071)
>>> pairs = word_pairs([5, 9, 7], ["␣the", "␣cat", "␣it"], [5, 8, 7], ["␣the", "␣dog", "␣it"])
>>> [(p.word, p.pos_a, p.pos_b) for p in pairs]
[('the', 0, 0), ('it', 2, 2)]
>>> [(p.word, p.pos_a, p.pos_b) for p in word_pairs([4, 6, 4], ["I", "␣saw", "␣I"])]
[('I', 0, 2)]

Attention with no projections (:func:`plain_attention`) is the step before W^Q, W^K and W^V:
each token scores every token by the dot product of their vectors, xᵢ·xⱼ, and takes the
softmax-weighted sum of the vectors themselves. A vector's dot product with itself is its
squared length, usually the largest score in its row, so a token mostly attends to itself: the
learned projections are what let a query look for something other than its own vector.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.coref import SPACE_MARKERS

if TYPE_CHECKING:
    from tfviz.trace import Trace

NEIGHBOURS = 3  # nearest tokens listed per stage and sentence


def cosine(a: np.ndarray, b: np.ndarray) -> np.float64:
    """cos(a, b) in float64; 0 when either vector is all zeros."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    return np.float64(0.0) if norm == 0 else np.float64(a @ b / norm)


def word_of(token: str) -> str:
    """A token's text without its leading-space marker ("␣it" -> "it")."""
    for marker in SPACE_MARKERS:
        token = token.removeprefix(marker)
    return token.strip() or token


@dataclass(frozen=True)
class WordPair:
    word: str  # the token's text, without its space marker
    pos_a: int  # its position in text A
    pos_b: int  # its position in text B (or a later position of text A)


def word_pairs(ids_a: Sequence[int], tokens_a: Sequence[str], ids_b: Sequence[int] | None = None,
               tokens_b: Sequence[str] | None = None, skip: Collection[str] = ()) -> list[WordPair]:
    """Tokens the two texts share, by id: the first occurrence of each in A with its first in B,
    in A's order. Without B, tokens that occur twice in A: the first with the second. ``skip``:
    tokens left out by their text (special tokens such as "<bos>", which mark a place in the
    text rather than a word)."""
    pairs = []
    if ids_b is None:
        first: dict[int, int] = {}
        for j, i in enumerate(ids_a):
            i = int(i)
            if tokens_a[j] in skip:
                continue
            if i in first and first[i] >= 0:
                pairs.append(WordPair(word_of(tokens_a[j]), first[i], j))
                first[i] = -1  # one pair per token
            first.setdefault(i, j)
        return pairs
    where_b: dict[int, int] = {}
    for j, i in enumerate(ids_b):
        where_b.setdefault(int(i), j)
    seen = set()
    for j, i in enumerate(ids_a):
        i = int(i)
        if tokens_a[j] in skip or i in seen or i not in where_b:
            continue
        seen.add(i)
        pairs.append(WordPair(word_of(tokens_a[j]), j, where_b[i]))
    return pairs


@dataclass(frozen=True)
class Stage:
    name: str  # "token embedding", "into block 0", "after block 1"...
    cos: float  # cosine of the word's two vectors at this stage
    same: bool  # the two vectors are equal to the last bit
    neighbours_a: tuple[tuple[str, float], ...]  # nearest other tokens of text A: (token, cosine)
    neighbours_b: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class SameWord:
    word: str
    pos_a: int
    pos_b: int
    stages: tuple[Stage, ...]
    same_prefix: bool  # both occurrences read the same tokens up to themselves (same ids, same positions)

    def columns(self, names: Sequence[str]) -> dict[str, list]:
        """The lesson's table by column: each stage, its cosine to 4 decimals, and the nearest
        tokens in each text (``names``: the two texts' names) with their cosines."""
        def near(pairs) -> str:
            return ", ".join(f"{t} {c:.2f}" for t, c in pairs)

        return {"stage": [s.name for s in self.stages],
                "cosine": [round(s.cos, 4) for s in self.stages],
                f"nearest in {names[0]}": [near(s.neighbours_a) for s in self.stages],
                f"nearest in {names[1]}": [near(s.neighbours_b) for s in self.stages]}


def stage_vectors(trace: Trace) -> list[tuple[str, np.ndarray]]:
    """(name, (n, d) vectors) for each stage of the main stack's residual stream."""
    L = trace.config.n_layers
    out = [("token embedding", trace["hook_embed"]), ("into block 0", trace["hook_resid_pre", 0])]
    out += [(f"after block {layer}", trace["hook_resid_post", layer]) for layer in range(L)]
    return out


def nearest(vectors: np.ndarray, pos: int, tokens: Sequence[str], top: int = NEIGHBOURS
            ) -> tuple[tuple[str, float], ...]:
    """The ``top`` other positions whose vectors have the largest cosine with ``vectors[pos]``,
    best first (ties: the earlier position). A token equal to the word itself is listed too:
    it is another position."""
    v = np.asarray(vectors, np.float64)
    norms = np.linalg.norm(v, axis=1)
    cos = v @ v[pos] / np.where(norms * norms[pos] == 0, 1.0, norms * norms[pos])
    order = [j for j in np.argsort(-cos, kind="stable") if j != pos][:top]
    return tuple((tokens[j], float(cos[j])) for j in order)


def same_word(trace_a: Trace, pos_a: int, trace_b: Trace | None = None, pos_b: int | None = None,
              top: int = NEIGHBOURS) -> SameWord:
    """The word at ``pos_a`` of trace A against the same token at ``pos_b`` of trace B (A again
    when B is None), stage by stage."""
    b = trace_a if trace_b is None else trace_b
    if pos_b is None:
        raise ValueError("say where the word is in the second text (pos_b)")
    if int(trace_a.ids[pos_a]) != int(b.ids[pos_b]):
        raise ValueError(f"position {pos_a} of A and {pos_b} of B hold different tokens")
    stages = []
    for (name, va), (_, vb) in zip(stage_vectors(trace_a), stage_vectors(b)):
        stages.append(Stage(name, float(cosine(va[pos_a], vb[pos_b])),
                            bool(np.array_equal(va[pos_a], vb[pos_b])),
                            nearest(va, pos_a, trace_a.tokens, top), nearest(vb, pos_b, b.tokens, top)))
    same_prefix = pos_a == pos_b and np.array_equal(trace_a.ids[:pos_a + 1], b.ids[:pos_b + 1])
    return SameWord(word_of(trace_a.tokens[pos_a]), pos_a, pos_b, tuple(stages), bool(same_prefix))


@dataclass(frozen=True)
class PlainAttention:
    weights: np.ndarray  # (n, n) softmax(x_i·x_j [/√d] + M)
    self_share: float  # mean weight a query puts on itself (over the queries that can see another token)


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64; −inf entries get weight 0."""
    s = np.asarray(scores, np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def self_share(weights: np.ndarray, causal: bool) -> float:
    """Mean of the diagonal over the queries that could look elsewhere: every row, except a
    causal model's first, which sees only itself (its weight on itself is always 1). ``weights``
    (..., n, n): the mean runs over every leading axis too."""
    diag = np.diagonal(np.asarray(weights, np.float64), axis1=-2, axis2=-1)  # (..., n)
    if causal:
        diag = diag[..., 1:]
    return float(diag.mean()) if diag.size else float("nan")


def plain_attention(x: np.ndarray, *, causal: bool, scale: bool = False) -> PlainAttention:
    """Attention without W^Q, W^K, W^V on the vectors ``x`` (n, d): scores xᵢ·xⱼ (divided by
    √d with ``scale``), masked to the past when ``causal``, softmaxed, in float64."""
    x = np.asarray(x, np.float64)
    n, d = x.shape
    scores = x @ x.T / (np.sqrt(d) if scale else 1.0)
    if causal:
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    weights = softmax_rows(scores)
    return PlainAttention(weights, self_share(weights, causal))


SWAPS = (("tired", "wide"), ("wide", "tired"))  # the notes' two "it" sentences


def partner_text(text: str) -> str:
    """The second text a page opens with: the notes' other "it" sentence when ``text`` is one
    of them (its last "tired" made "wide", or "wide" made "tired"), else ``text`` itself, whose
    repeated tokens are then compared with each other.

    >>> partner_text("The animal didn't cross the street because it was too tired.")
    "The animal didn't cross the street because it was too wide."
    >>> partner_text("I record the record")
    'I record the record'
    """
    for old, new in SWAPS:
        found = list(re.finditer(rf"\b{old}\b", text, flags=re.IGNORECASE))
        if found:
            m = found[-1]
            word = new.capitalize() if m.group()[0].isupper() else new
            return text[:m.start()] + word + text[m.end():]
    return text


@dataclass(frozen=True)
class NounPull:
    agent: str  # the first noun of an "it" sentence ("animal")
    place: str  # the second ("street")
    agent_cos: float  # cosine of the probe's vector with each noun's, after the last block
    place_cos: float

    @property
    def nearer(self) -> str:
        return self.agent if self.agent_cos >= self.place_cos else self.place

    @property
    def farther(self) -> str:
        return self.place if self.agent_cos >= self.place_cos else self.agent

    @property
    def nearer_cos(self) -> float:
        return max(self.agent_cos, self.place_cos)

    @property
    def farther_cos(self) -> float:
        return min(self.agent_cos, self.place_cos)


def noun_pull(trace: Trace, pos: int) -> NounPull | None:
    """For an "it" sentence (``tfviz.analysis.coref``) whose "it" is at ``pos``: the cosine of
    its vector after the last block with each noun's; None for any other text or token."""
    from tfviz.analysis.coref import find_coref_positions

    found = find_coref_positions(trace.tokens)
    if found is None or found.probe != pos:
        return None
    last = trace["hook_resid_post", trace.config.n_layers - 1]  # (n, d)
    return NounPull(word_of(trace.tokens[found.agent]), word_of(trace.tokens[found.place]),
                    float(cosine(last[pos], last[found.agent])), float(cosine(last[pos], last[found.place])))
