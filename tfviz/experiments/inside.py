"""What the "Looking inside" lessons show, ready for a page: the logit lens as token strings
and probabilities, direct logit attribution at every position with the removal check,
patching on a pair of texts, and the induction run. Each calls ``tfviz.interpret`` and keeps
only what the page draws (plain, picklable numbers and strings, so the pages' caches can copy
them).

>>> import tfviz
>>> b = tfviz.load("llama-tiny")
>>> v = lens_view(b, b.trace("the dog didn't cross the road because it was too tired"))
>>> v.top[-1] == tuple(b.token_strings(b.trace("the dog didn't cross the road because it was too tired").logits.argmax(-1)))
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.data.coref import coref_sentence
from tfviz.interpret import (Ablation, Induction, Patching, ablate_head, direct_logit_attribution,
                             induction_report, lens_top, logit_lens, patch)
from tfviz.interpret.attribution import decomposable
from tfviz.reference import softmax
from tfviz.trace import Trace, run_with_trace


@dataclass(frozen=True)
class LensView:
    """The logit lens of one text: rows are the embeddings, then after each block."""

    tokens: tuple[str, ...]
    layers: tuple[str, ...]
    top: tuple[tuple[str, ...], ...]  # (rows, positions): the top next token's string
    top_prob: np.ndarray  # (rows, positions)
    final_prob: np.ndarray  # (rows, positions): probability of the last row's top token
    settles: np.ndarray  # (positions,): the row from which the final top token stays on top

    def appears(self, position: int) -> str:
        """Where the final prediction at ``position`` appears and stays: "after block 2"."""
        return self.layers[int(self.settles[position])]

    @property
    def settled_at_embeddings(self) -> int:
        """Positions whose final prediction is on top from the embeddings on."""
        return int((self.settles == 0).sum())

    @property
    def settled_after_last(self) -> int:
        """Positions whose final prediction reaches the top only after the last block."""
        return int((self.settles == len(self.layers) - 1).sum())

    def columns(self, positions) -> dict[str, list]:
        """Lesson 24's table by column for ``positions``: each one, its final prediction, that
        prediction's probability to 3 decimals, and where it appears and stays."""
        return {"position": [f"{p} {self.tokens[p]}" for p in positions],
                "final prediction": [self.top[-1][p] for p in positions],
                "its probability": [round(float(self.top_prob[-1, p]), 3) for p in positions],
                "on top from": [self.appears(p) for p in positions]}


def lens_view(bundle, trace: Trace) -> LensView:
    """The logit lens of ``trace`` as a page shows it (``tfviz.interpret.lens_top``)."""
    top = lens_top(trace, bundle)
    lens = logit_lens(trace, bundle)  # (rows, T, vocab)
    probs = softmax(lens, axis=-1)
    final_ids = top.ids[-1]  # (T,)
    final = np.take_along_axis(probs, np.broadcast_to(final_ids, top.ids.shape)[..., None], -1)[..., 0]
    return LensView(tokens=tuple(trace.tokens), layers=top.layers,
                    top=tuple(tuple(bundle.token_strings(row)) for row in top.ids),
                    top_prob=top.probs, final_prob=final, settles=top.settles())


@dataclass(frozen=True)
class AttributionView:
    """Direct logit attribution at every position, each of its model's top next token."""

    tokens: tuple[str, ...]
    answers: tuple[str, ...]  # the top next token at each position
    answer_ids: tuple[int, ...]
    parts: tuple[dict[str, float], ...]  # per position {component: share}
    kinds: dict[str, str]
    logits: tuple[float, ...]  # the model's own logit of that token
    scale: tuple[float | None, ...]  # the final norm's frozen scale at each position

    def total(self, position: int) -> float:
        """The parts' shares at ``position`` added up: the logit again, up to float rounding."""
        return sum(self.parts[position].values())

    def rounding_gap(self, position: int) -> float:
        """How far the shares' total lies from the model's own logit at ``position``."""
        return abs(self.total(position) - self.logits[position])

    def top_head(self, position: int) -> tuple[int, int, float]:
        """(layer, head, share) of the head with the largest share at ``position``."""
        parts = self.parts[position]
        name = max((k for k in parts if self.kinds[k] == "head"), key=parts.get)
        layer, head = name[1:].split("H")
        return int(layer), int(head), parts[name]


def why_no_attribution(cfg) -> str | None:
    """Why this model's logits cannot be split into parts (post-LN and the like), or None."""
    return decomposable(cfg)


def attribution_view(bundle, trace: Trace) -> AttributionView:
    """``direct_logit_attribution`` at each position, of the model's top next token there.
    Raises ValueError (in words) for a model it cannot split."""
    W = bundle.weights()
    answers = trace.logits.argmax(-1)  # (T,)
    dla = [direct_logit_attribution(trace, p, int(t), weights=W) for p, t in enumerate(answers)]
    return AttributionView(tokens=tuple(trace.tokens), answers=tuple(bundle.token_strings(answers)),
                           answer_ids=tuple(int(t) for t in answers),
                           parts=tuple(dict(d.parts) for d in dla), kinds=dict(dla[0].kinds),
                           logits=tuple(d.logit for d in dla), scale=tuple(d.scale for d in dla))


def head_removed(bundle, text: str, layer: int, head: int, position: int) -> Ablation:
    """The head removed (its z set to 0): its direct share against the logit's real fall, for
    the model's top token at ``position`` (``tfviz.interpret.ablate_head``)."""
    return ablate_head(bundle, text, layer, head, position)


def coref_pair(agent: str = "animal", place: str = "street", agent_adj: str = "tired",
               place_adj: str = "wide", verb: str = "cross") -> tuple[str, str]:
    """(clean, corrupt): the "it" sentences that differ only in the adjective.

    >>> coref_pair()[1]
    "the animal didn't cross the street because it was too wide. it refers to the"
    """
    return (coref_sentence(agent, verb, place, agent_adj)[0],
            coref_sentence(agent, verb, place, place_adj)[0])


@dataclass(frozen=True)
class PatchView:
    """Patching of one pair: the layers × positions map of each block's input, and the
    layers × heads map of each head's output."""

    by_position: Patching
    by_head: Patching
    answer: str  # the clean run's top next token
    distractor: str  # the corrupt run's

    def best(self) -> tuple[int, int, float]:
        """(layer, position, share restored) of the cell that restores the most."""
        r = self.by_position.restored()
        layer, pos = np.unravel_index(int(np.argmax(r)), r.shape)
        return int(layer), int(pos), float(r[layer, pos])

    def best_head(self) -> tuple[int, int, float]:
        r = self.by_head.restored()
        layer, head = np.unravel_index(int(np.argmax(r)), r.shape)
        return int(layer), int(head), float(r[layer, head])


def patch_view(bundle, clean: str, corrupt: str) -> PatchView:
    """Patch every block's input (``hook_resid_pre``) by position and every head's output
    (``hook_z``) by head. Raises ValueError in words (different lengths, the same answer)."""
    by_position = patch(bundle, clean, corrupt, "hook_resid_pre")
    by_head = patch(bundle, clean, corrupt, "hook_z", by="head")
    return PatchView(by_position, by_head, bundle.token_strings([by_position.answer])[0],
                     bundle.token_strings([by_position.distractor])[0])


@dataclass(frozen=True)
class InductionView:
    """The repeated random sequence run, with the attention maps of the heads worth showing."""

    report: Induction
    heads: tuple[tuple[int, int], ...]  # (layer, head) of each map, best induction heads first
    patterns: np.ndarray  # (len(heads), T, T)

    @property
    def strongest_induction(self) -> tuple[int, int]:
        """(layer, head) of the largest induction score (the first of equal ones)."""
        scores = self.report.scores  # (layers, heads)
        return divmod(int(scores.argmax()), scores.shape[1])

    def strongest_previous_before(self, layer: int) -> tuple[int, int]:
        """(layer, head) of the largest previous-token score in the layers before ``layer``."""
        previous = self.report.previous[:layer]  # (layer, heads)
        return divmod(int(previous.argmax()), previous.shape[1])


def induction_view(bundle, length: int, seed: int, shown: int = 6) -> InductionView:
    """``tfviz.interpret.induction_report`` on ``length`` random tokens (``seed``) repeated,
    and the maps of ``shown`` heads (:func:`shown_heads`) from the same run's trace."""
    report = induction_report(bundle, length=length, seed=seed)
    heads = shown_heads(report, shown)
    tr = run_with_trace(bundle.model, list(report.ids),
                        names=lambda n: n.endswith("attn.hook_pattern"))
    pattern = tr.stack("pattern")  # (layers, heads, T, T)
    return InductionView(report, tuple(heads), np.stack([pattern[lyr, h] for lyr, h in heads]))


def shown_heads(report: Induction, n: int = 6) -> list[tuple[int, int]]:
    """The heads worth showing on the repeated sequence, at most ``n``: the best induction heads
    first, then the best previous-token heads, without repeats.

    >>> import types
    >>> r = types.SimpleNamespace(scores=np.array([[0.1, 0.0], [0.9, 0.2]]),
    ...                           previous=np.array([[0.8, 0.1], [0.0, 0.0]]))
    >>> shown_heads(r, 3)
    [(1, 0), (1, 1), (0, 0)]
    """
    order = lambda a: [tuple(int(v) for v in np.unravel_index(i, a.shape)) for i in np.argsort(-a, axis=None)]
    ind, prev = order(report.scores), order(report.previous)
    half = max(1, n - n // 3)
    picked: list[tuple[int, int]] = []
    for h in ind[:half] + prev + ind[half:]:
        if h not in picked:
            picked.append(h)
        if len(picked) == n:
            break
    return picked
