"""Checking an attribution by removing the head: its share, and what removing it really costs.

Direct logit attribution gives a head's *direct* share: what its output adds to the logit
through the final norm, with the norm's scale frozen. Removing the head (its z set to zero,
``RunOptions(ablate_heads=...)``) measures something larger, its *total* effect: the logit
also loses whatever later heads and MLPs made of the head's output, and the final norm
rescales the stream it changed. Three numbers side by side:

    share         the head's direct share (direct_logit_attribution)
    direct_fall   the fall when only its own vector leaves the final stream, the final norm
                  taking its new scale: share but for the rescaling
    fall          the fall when the head is removed from the run (every later part reacts)

For a head in the last layer of a model without a feed-forward after it, fall = direct_fall;
for an early head they can differ a lot, and that gap is what the head did through others.

>>> import tfviz
>>> b = tfviz.load("llama-tiny")
>>> a = ablate_head(b, "the dog didn't cross the road because it was too tired", 2, 0)
>>> a.fall != a.share         # removing a head costs more (or less) than its direct share
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.config import RunOptions
from tfviz.interpret.attribution import direct_logit_attribution, residual_parts
from tfviz.interpret.common import final_norm, text_ids, to_logits, weights_of
from tfviz.trace import run_with_trace


@dataclass(frozen=True)
class Ablation:
    """One head removed: its direct share, the fall without its vector, the fall without it."""

    layer: int
    head: int
    position: int
    token: int
    against: int | None
    before: float  # the logit (or difference) of the whole model
    after: float  # the same with the head's z set to zero
    share: float
    direct_fall: float

    @property
    def fall(self) -> float:
        return self.before - self.after


def ablate_head(bundle, text, layer: int, head: int, position: int = -1, token: int | None = None,
                against: int | None = None) -> Ablation:
    """Remove head ``head`` of layer ``layer`` and compare the fall of the logit of ``token``
    (default: the model's top token at ``position``; or of ``token`` − ``against``) with the
    head's direct share. Refuses a post-LN model in words, as attribution does."""
    cfg = bundle.config
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ValueError(f"{cfg.name} has layers 0-{cfg.n_layers - 1} and heads 0-{cfg.n_heads - 1}")
    ids = text_ids(bundle, text)
    clean = run_with_trace(bundle.model, ids, tokens=bundle.token_strings(ids))
    position %= len(ids)
    if token is None:
        token = int(clean.logits[position].argmax())
    W = weights_of(bundle)
    dla = direct_logit_attribution(clean, position, token, against, weights=W)
    ablated = run_with_trace(bundle.model, ids, names=(),
                             options=RunOptions(ablate_heads=frozenset({(layer, head)})))

    def read(logits: np.ndarray) -> float:
        row = np.asarray(logits, dtype=np.float64)
        return float(row[token] - (0.0 if against is None else row[against]))

    parts, _ = residual_parts(clean, W, position)
    x = sum(parts.values())  # (d,): the final stream, as the parts add up
    without = x - parts[f"L{layer}H{head}"]
    both = to_logits(clean, W, final_norm(clean, W, np.stack([x, without])))  # (2, vocab)
    return Ablation(layer=layer, head=head, position=position, token=token, against=against,
                    before=read(clean.logits[position]), after=read(ablated.logits[position]),
                    share=dla[f"L{layer}H{head}"], direct_fall=read(both[0]) - read(both[1]))
