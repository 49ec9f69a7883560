"""Beam search: keep the ``beam_width`` best partial continuations instead of only one.

    step t:  every unfinished hypothesis is extended by every token of the vocabulary;
             a finished one (it emitted <eos>) is carried over as it is;
             of all these candidates, the beam_width with the highest SUM of log-probabilities
             survive (no length normalisation, so finished ones compete on equal terms)
    until:   every hypothesis is finished, or after max_new_tokens steps

Ties go to the earlier candidate: the better-ranked parent, then the lower token id. Each
step's candidates are kept as a tree (:class:`BeamStep`), so a page can draw every expansion,
the kept beams and their sums. With ``beam_width=1`` this is greedy decoding.

>>> import tfviz
>>> b = tfviz.load("gpt-tiny")
>>> [(b.tokenizer.decode(ids), round(lp, 2)) for ids, lp in beam_search(b, "the dog", 3, 4)]
[("didn't leave the", -2.19), ("didn't reach the", -2.26), ("didn't cross the", -2.28)]
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import torch

from tfviz.decoding.prompt import read_prompt, require_decoder
from tfviz.model import KVCache
from tfviz.tokenizer.base import end_ids

BeamStop = Literal["finished", "length", "context"]


class Hypothesis(NamedTuple):
    """A continuation (prompt excluded; ends with <eos> when finished) and its summed log-prob."""

    new_ids: tuple[int, ...]
    logprob: float


@dataclass(frozen=True)
class BeamStep:
    """Every candidate of one step, one row each (read-only arrays of equal length n):

    parent:  index into the previous step's ``beams`` (at step 0, 0 = the bare prompt)
    token:   the token appended, or -1 where a finished parent is carried over unchanged
    logprob: log p(token | parent) (0 for a carry)
    total:   parent's sum + logprob: what the candidates are ranked by
    kept:    True for the beam_width candidates that survive
    beams:   the survivors, best first; ``beams[i]`` is row ``rows[i]``
    """

    parent: np.ndarray
    token: np.ndarray
    logprob: np.ndarray
    total: np.ndarray
    kept: np.ndarray
    rows: tuple[int, ...]
    beams: tuple[Hypothesis, ...]


@dataclass(frozen=True)
class BeamSearch:
    """The result with its tree: ``hypotheses`` best first, ``tree[t]`` the candidates of step t."""

    prompt_ids: tuple[int, ...]
    hypotheses: tuple[Hypothesis, ...]
    tree: tuple[BeamStep, ...]
    stop_reason: BeamStop
    eos_ids: tuple[int, ...]  # the end tokens (a checkpoint may name several), the first its eos
    notice: str | None = None  # set when the prompt was cut to the context

    def finished(self, h: Hypothesis) -> bool:
        return _ended(h, self.eos_ids)


def _ended(h: Hypothesis, ends: tuple[int, ...]) -> bool:
    """Whether ``h`` emitted an end token: it is finished and never extended again."""
    return bool(h.new_ids) and h.new_ids[-1] in ends


def _frozen(a) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def _next_logprobs(model, ids: Sequence[int], cache: KVCache | None) -> tuple[np.ndarray, KVCache]:
    """log p(next token) (vocab,) float64 after feeding ``ids`` on top of ``cache``."""
    logits, cache = model.step(torch.tensor([list(ids)]), cache)  # (1, len(ids), V)
    return torch.log_softmax(logits[0, -1].double(), dim=-1).numpy(), cache


def beam_search_tree(bundle, prompt: str | Sequence[int], beam_width: int = 3,
                     max_new_tokens: int = 8) -> BeamSearch:
    """Beam search with its whole tree, for a page; :func:`beam_search` gives the list alone.

    Each hypothesis keeps its own KV cache (caches are never changed, so children share their
    parent's), and the model reads one sequence at a time.
    """
    require_decoder(bundle, "beam_search()")
    for name, value, low in (("beam_width", beam_width, 1), ("max_new_tokens", max_new_tokens, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}; got {value!r}")
    prompt_ids, notice = read_prompt(bundle, prompt)
    model, context, eos = bundle.model, bundle.config.max_seq_len, end_ids(bundle.tokenizer)
    vocab = bundle.config.vocab_size
    beams = [Hypothesis((), 0.0)]
    caches: list[KVCache | None] = [None]  # each beam's cache, before its last token is read
    tree: list[BeamStep] = []
    reason: BeamStop = "length"
    with torch.no_grad():
        for t in range(max_new_tokens):
            if all(_ended(h, eos) for h in beams):
                break
            if len(prompt_ids) + t >= context:  # a new token would sit past the last position
                reason = "context"
                break
            cols: list[tuple] = []  # per beam: (parent, token, logprob, total) columns
            grown: list[KVCache | None] = []
            for i, (h, cache) in enumerate(zip(beams, caches)):
                if _ended(h, eos):  # finished: carried over as it is, as one candidate
                    cols.append(([i], [-1], [0.0], [h.logprob]))
                    grown.append(cache)
                    continue
                lp, after = _next_logprobs(model, h.new_ids[-1:] or prompt_ids, cache)  # (V,)
                cols.append((np.full(vocab, i), np.arange(vocab), lp, h.logprob + lp))
                grown.append(after)
            parent, token, logprob, total = (np.concatenate(c) for c in zip(*cols))  # (n,) each
            rows = np.argsort(-total, kind="stable")[:beam_width]  # best first; ties: earlier row
            kept = np.zeros(total.size, dtype=bool)
            kept[rows] = True
            beams = [Hypothesis(beams[parent[r]].new_ids + (() if token[r] < 0 else (int(token[r]),)),
                                float(total[r])) for r in rows]
            caches = [grown[parent[r]] for r in rows]
            tree.append(BeamStep(*(_frozen(a) for a in (parent, token, logprob, total, kept)),
                                 tuple(int(r) for r in rows), tuple(beams)))
    if reason == "length" and all(_ended(h, eos) for h in beams):
        reason = "finished"
    return BeamSearch(prompt_ids, tuple(beams), tuple(tree), reason, eos, notice)


def beam_search(bundle, prompt: str | Sequence[int], beam_width: int = 3,
                max_new_tokens: int = 8) -> list[Hypothesis]:
    """The ``beam_width`` best continuations as (new_ids, summed log-prob), best first."""
    return list(beam_search_tree(bundle, prompt, beam_width, max_new_tokens).hypotheses)
