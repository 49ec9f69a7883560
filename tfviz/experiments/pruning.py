"""Pruning heads (lesson 7): how much of a trained model's attention can go before it notices.

Michel et al. (2019, "Are Sixteen Heads Really Better than One?") found that many heads of a
trained transformer can be removed with little loss. The what-if here does that on our model,
with no retraining:

1. the held-out loss of the whole model;
2. each head removed alone (its output z set to zero, ``RunOptions.ablate_heads``): how much
   the loss rises without it, the head's *importance*;
3. the heads removed one after another, least important first, and the loss after each.

The loss is the mean next-token cross-entropy (nats) over every predicted token of a set of
sentences, each read as one row of a padded batch (right padding: a decoder's real tokens never
read the padding, and padded targets are not counted).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from tfviz.config import RunOptions

Head = tuple[int, int]  # (layer, head)
MAX_HEADS = 64  # the what-if runs 2·heads + 1 passes; GPT-2 small's 144 heads would take minutes


def heldout_loss(model, rows: Sequence[Sequence[int]], pad_id: int,
                 options: RunOptions | None = None) -> float:
    """Mean next-token cross-entropy (nats) over all predicted tokens of ``rows`` (each at least
    two ids), run as one right-padded batch."""
    rows = [list(r) for r in rows if len(r) >= 2]
    if not rows:
        raise ValueError("need at least one row of two or more tokens")
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # (B, T)
    mask = torch.zeros(len(rows), width, dtype=torch.long)  # (B, T) 1 = real token
    for b, r in enumerate(rows):
        ids[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
    with torch.no_grad():
        logits = model(ids, attention_mask=mask, options=options)  # (B, T, V)
    targets = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)  # (B, T-1): padding not counted
    return float(F.cross_entropy(logits[:, :-1].double().reshape(-1, logits.shape[-1]),
                                 targets.reshape(-1), ignore_index=-100))


@dataclass(frozen=True)
class Pruning:
    base: float  # the whole model's loss
    importance: dict[Head, float]  # loss without that head alone, minus base
    order: tuple[Head, ...]  # heads in the order removed (least important first)
    losses: tuple[float, ...]  # losses[k]: loss with the first k heads of ``order`` removed (k = 0..all)

    @property
    def kept(self) -> list[int]:
        """Heads kept at each point of ``losses``."""
        total = len(self.order)
        return [total - k for k in range(len(self.losses))]

    def columns(self) -> dict[str, list]:
        """The lesson's table by column: each head in the order removed, its loss rise alone
        and the loss after it went, both to 4 decimals."""
        return {"removed": list(range(1, len(self.order) + 1)),
                "head (layer, head)": [f"{layer}, {head}" for layer, head in self.order],
                "alone: loss rise": [round(self.importance[h], 4) for h in self.order],
                "loss after": [round(x, 4) for x in self.losses[1:]]}

    def removable(self, tolerance: float) -> int:
        """How many heads go (in ``order``) before the loss first rises more than ``tolerance``
        nats above the whole model's."""
        for k, loss in enumerate(self.losses):
            if loss - self.base > tolerance:
                return k - 1
        return len(self.order)


def prune(model, rows: Sequence[Sequence[int]], pad_id: int, n_layers: int, n_heads: int) -> Pruning:
    """The pruning what-if (module docstring) on ``rows``; ties in importance keep layer order."""
    heads = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    if len(heads) > MAX_HEADS:
        raise ValueError(f"{len(heads)} heads would need {2 * len(heads) + 1} runs of the model; "
                         f"the what-if runs models of up to {MAX_HEADS} heads")
    base = heldout_loss(model, rows, pad_id)
    importance = {h: heldout_loss(model, rows, pad_id, RunOptions(ablate_heads=frozenset([h]))) - base
                  for h in heads}
    order = tuple(sorted(heads, key=lambda h: importance[h]))  # stable: ties keep layer order
    losses = [base]
    for k in range(1, len(order) + 1):
        losses.append(heldout_loss(model, rows, pad_id, RunOptions(ablate_heads=frozenset(order[:k]))))
    return Pruning(base, importance, order, tuple(losses))


def rarest_keys(ids: Sequence[int], counts: dict[int, int], causal: bool) -> np.ndarray:
    """(n,) for each query position, the key it may see (all keys, or with ``causal`` keys up to
    itself) whose token the training corpus used least (``counts``; a token it never used counts
    0); ties go to the earlier position. Voita et al. (2019) found heads that point at the least
    frequent token of a sentence: their "rare-word" heads."""
    used = np.array([counts.get(int(i), 0) for i in ids], dtype=np.int64)  # (n,)
    n = len(used)
    if causal:  # the running minimum: np.argmin keeps the first of equal counts
        return np.array([int(np.argmin(used[:i + 1])) for i in range(n)], dtype=np.int64)
    return np.full(n, int(np.argmin(used)) if n else 0, dtype=np.int64)


def rare_share(patterns: np.ndarray, rarest: np.ndarray, causal: bool) -> tuple[np.ndarray, float]:
    """Per head of one layer (patterns (h, n, n)): the mean weight a query puts on its rarest
    visible key (``rarest_keys``); and what any head spreading evenly over the keys it may see
    would put there (1 / the number of those keys, averaged). Row 0 is left out when there are
    other rows, as ``head_stats`` does."""
    h, n, _ = patterns.shape
    rows = np.arange(1, n) if n > 1 else np.arange(n)
    got = patterns.astype(np.float64)[:, rows, rarest[rows]].mean(-1)  # (h,)
    visible = rows + 1 if causal else np.full(len(rows), n)  # keys each row may see
    return got, float((1.0 / visible).mean())
