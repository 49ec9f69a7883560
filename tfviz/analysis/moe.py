"""Mixture-of-experts routing, read from a trace (pure numpy).

    router logits  h(x) = W_r x,   gates p = softmax(h(x)),   T = top-k of p (or of h)
    y = Σ_{i in T} w_i E_i(x)          w by the model's rule (tfviz.analysis.moe_rules):
                                       p_i (Switch: k = 1), p_i / Σ_T p_j (Mixtral), or
                                       softmax over T of h (Granite), which is the same
    capacity = ceil(factor · tokens · k / n_experts)   slots per expert for the first ``tokens``
               tokens of a sentence (counted per prefix); a choice that does not fit is dropped

>>> capacity_of(2.0, n_tokens=10, k=1, n_experts=4)
5
>>> token_classes(["␣the", "␣cat", "s", "."], lambda w: {"the": "function", "cats": "noun"}.get(w, "punct"))
['function', 'noun', 'noun', 'punct']
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.moe_rules import PLAIN, RulesCompared, model_rule, model_weights_gap
from tfviz.labels import token_labels

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace

# Sentences in the style of the training stories, for the class x expert table.
SAMPLE_SENTENCES = (
    "the animal didn't cross the street because it was too tired.",
    "the animal didn't cross the street because it was too wide.",
    "the quick fox chased the boxes.",
    "the bakers like the warm lake.",
    "the robot is dancing near the river.",
    "did the child follow the horse?",
    "when the dog shouted, the cat rested too.",
    "two birds jumped over the old tree!",
    "the teacher is taller than the farmer.",
    "the chef painted the door slowly.",
    "the happiest painter walked into the hall.",
    "some children were playing with the ball, and the dog waited.",
    "the horse didn't reach the river because it was too steep.",
    "three cats watched the window quietly.",
)
_WORD = re.compile(r"[A-Za-z0-9']+|[^\sA-Za-z0-9']")
_SPECIAL = re.compile(r"^(<[^<>\s]+>|\[[A-Z]+\])$")


@dataclass(frozen=True)
class Routing:
    """One MoE layer's decisions for every token of a sequence."""

    logits: np.ndarray  # (T, E) router logits h(x)
    probs: np.ndarray  # (T, E) gates p = softmax(h)
    indices: np.ndarray  # (T, k) chosen experts, best first
    weights: np.ndarray  # (T, k) gate used for each choice (0 where dropped)
    dropped: np.ndarray  # (T, k) True where the expert was already full
    counts: np.ndarray  # (E,) tokens each expert processed
    rule: str = PLAIN  # how the weights came from the logits (tfviz.analysis.moe_rules.RULES)

    @property
    def k(self) -> int:
        return self.indices.shape[1]

    @property
    def n_experts(self) -> int:
        return self.probs.shape[1]

    def chosen_mask(self) -> np.ndarray:
        """(T, E) True where the expert is in the token's top-k (served or not)."""
        mask = np.zeros(self.probs.shape, dtype=bool)
        np.put_along_axis(mask, self.indices, True, axis=1)
        return mask

    def dropped_mask(self) -> np.ndarray:
        """(T, E) True where the token chose the expert but did not fit."""
        mask = np.zeros(self.probs.shape, dtype=bool)
        rows = np.nonzero(self.dropped)[0]
        mask[rows, self.indices[self.dropped]] = True
        return mask

    def dropped_per_expert(self) -> np.ndarray:
        """(E,) how many choices of each expert were turned away."""
        return np.bincount(self.indices[self.dropped], minlength=self.n_experts)


def routing(trace: Trace, layer: int) -> Routing:
    p = f"blocks.{layer}.mlp."
    a, cfg = trace.activations, trace.config
    return Routing(a[p + "hook_router_logits"], a[p + "hook_gate_probs"],
                   a[p + "hook_expert_indices"], a[p + "hook_expert_weights"],
                   a[p + "hook_dropped"].astype(bool), a[p + "hook_expert_counts"],
                   model_rule(cfg.moe_router, cfg.moe_renormalize))


def own_rule_gap(routes: Sequence[Routing], compared: RulesCompared) -> float:
    """Largest difference between every layer's own weights (the model's hooks) and their rule
    recomputed in ``compared`` (``tfviz.analysis.moe_rules.compare`` on the same logits), over
    the choices the model served."""
    return model_weights_gap(compared, routes[0].rule, np.stack([r.indices for r in routes]),
                np.stack([r.weights for r in routes]), np.stack([r.dropped for r in routes]))


def capacity_of(factor: float | None, n_tokens: int, k: int, n_experts: int) -> int | None:
    """Slots per expert: ceil(factor · tokens · k / experts), at least 1; None = no limit."""
    return None if factor is None else max(1, math.ceil(factor * n_tokens * k / n_experts))


def layer_load(n_tokens: int, k: int, n_experts: int) -> tuple[int, float]:
    """What a layer serves when no choice is dropped: n · k choices, and an even share of them,
    n · k / E, per expert (the load map compares each cell with it).

    >>> layer_load(13, 2, 4)
    (26, 6.5)
    """
    return n_tokens * k, n_tokens * k / n_experts


def dropped_tokens(r: Routing, tokens: Sequence[str], factor: float | None = None) -> list[dict]:
    """One row per dropped choice: which token, its 1st/2nd/... choice, the expert, the gate;
    with the capacity ``factor``, also how many tokens the expert had served before it and
    its budget by then, ceil(factor · (t + 1) · k / E) for the token at position t."""
    rows, labels = [], token_labels(tokens)
    k, E = r.indices.shape[1], r.probs.shape[1]
    for t, slot in zip(*np.nonzero(r.dropped)):
        e = int(r.indices[t, slot])
        row = {"token": labels[t], "choice": int(slot) + 1, "expert": e,
               "gate p": float(r.probs[t, e])}
        if factor is not None:
            earlier = (r.indices[:t] == e) & ~r.dropped[:t]  # its earlier tokens it served
            row |= {"served before": int(earlier.sum()),
                    "budget by then": capacity_of(factor, t + 1, k, E)}
        rows.append(row)
    return rows


def token_words(tokens: Sequence[str]) -> list[str]:
    """The word each token belongs to ("" for pure spaces). Works for characters and subwords:

    >>> token_words(["c", "a", "t", "␣", "sat", "."])
    ['cat', 'cat', 'cat', '', 'sat', '.']
    """
    pieces = [tok if _SPECIAL.match(tok) else tok.replace("␣", " ").replace("Ġ", " ")
              for tok in tokens]
    starts = np.cumsum([0] + [len(p) for p in pieces])
    text = "".join(pieces)
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    out = []
    for i, piece in enumerate(pieces):
        if _SPECIAL.match(piece):
            out.append(piece)
            continue
        lo, hi = starts[i], starts[i + 1]
        found = next((w for s, e, w in words if s < hi and e > lo), "")
        out.append(found)
    return out


def token_classes(tokens: Sequence[str], word_class_fn: Callable[[str], str]) -> list[str]:
    """Class of the word each token belongs to; tokens that are only spaces are "space"."""
    return [word_class_fn(w) if w else "space" for w in token_words(tokens)]


def class_expert_table(traces: Sequence[Trace], word_class_fn: Callable[[str], str], *,
                       layer: int = 0, order: Sequence[str] = ()) -> tuple[list[str], list[int], np.ndarray]:
    """Count, over many sequences, how often tokens of each class pick each expert first.

    Returns (classes, experts, counts) with counts of shape (classes, experts). Classes
    follow ``order`` where given, then any others alphabetically.
    """
    pairs: list[tuple[str, int]] = []
    for tr in traces:
        first = routing(tr, layer).indices[:, 0]
        pairs += list(zip(token_classes(tr.tokens, word_class_fn), first.tolist()))
    n_experts = traces[0].config.n_experts if traces else 0
    seen = {c for c, _ in pairs}
    classes = [c for c in order if c in seen] + sorted(seen - set(order))
    counts = np.zeros((len(classes), n_experts), dtype=int)
    for c, e in pairs:
        counts[classes.index(c), e] += 1
    return classes, list(range(n_experts)), counts


def row_shares(counts: np.ndarray) -> np.ndarray:
    """Each row divided by its total (rows of zeros stay zero). [[1, 3]] -> [[0.25, 0.75]]."""
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def concentration(counts: np.ndarray) -> np.ndarray:
    """Per class, the share of its tokens that went to its most-used expert.

    1.0 means the class always goes to one expert; 1/E means it is spread evenly.
    >>> concentration(np.array([[3, 1], [2, 2]])).tolist()
    [0.75, 0.5]
    """
    return row_shares(counts).max(axis=1) if len(counts) else np.zeros(0)


def class_summary(classes: Sequence[str], counts: np.ndarray) -> list[dict]:
    """Rows for a table: class, number of tokens, favourite expert, concentration."""
    conc = concentration(counts)
    return [{"class": c, "tokens": int(counts[i].sum()), "favourite expert": int(counts[i].argmax()),
             "concentration": float(conc[i])} for i, c in enumerate(classes)]


def table_from_manifest(manifest: dict, layer: int = 0):
    """A class × expert table recorded at training time, if the manifest has one, else None.

    Accepts ``manifest["moe"]`` holding {"classes", "experts"?, "counts"} or a list of such
    tables (one per layer), or {"layers": [...]}.
    """
    entry = manifest.get("moe") if isinstance(manifest, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("layers"), list):
        entry = entry["layers"]
    if isinstance(entry, list):
        entry = entry[layer] if layer < len(entry) else None
    if not isinstance(entry, dict) or "classes" not in entry or "counts" not in entry:
        return None
    counts = np.asarray(entry["counts"], dtype=int)
    if counts.ndim != 2 or counts.shape[0] != len(entry["classes"]):
        return None
    experts = list(entry.get("experts", range(counts.shape[1])))
    return list(entry["classes"]), experts, counts
