"""What the lab's induction task measures at each checkpoint: each head's induction and
previous-token scores, and the loss on the first copy of the run against the second.

A held-out row is ``<bos> n_1 … n_k s_1 … s_L s_1 … s_{L-1}``: the run's first copy starts at
position a = k + 1, its second at a + L (``tfviz.lab.tasks.repeat_layout``). With A the
attention weights of one head (query row, key column):

    induction score      mean over i = 1 … L-1 of A[a + L + i - 1, a + i]: from the second s_i
                         to the s_{i+1} that followed its first copy (what it should predict)
    previous-token score mean over every position q >= 1 of A[q, q - 1]
    first-half loss      mean cross-entropy of predicting s_2 … s_L the first time, where
                         nothing in the row tells the model what comes
    second-half loss     the same tokens predicted the second time

Each is averaged over the rows. A head that attends a fixed distance back cannot score on
every row: the run's length and start vary.

>>> A = np.zeros((1, 1, 6, 6)); A[0, 0, 4, 2] = A[0, 0, 5, 3] = 1.0   # a = 1, L = 3: queries 4, 5
>>> induction, previous = repeat_scores(A, 1, 3)
>>> float(induction[0, 0]), float(previous[0, 0])
(1.0, 0.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tfviz.lab.tasks import repeat_layout
from tfviz.model import Transformer
from tfviz.model.hooks import recording

INDUCTION_HEAD = 0.5  # a head "is" an induction head once its score passes this (issue #45)


def repeat_scores(pattern: np.ndarray, start: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """(induction, previous-token) scores, each (layers, heads), of one row's attention weights
    ``pattern`` (layers, heads, T, T); the row's real tokens end at start + 2L - 1 (columns past
    it are padding, never read)."""
    i = np.arange(1, L)  # the second copy's s_1 … s_{L-1}
    induction = pattern[:, :, start + L + i - 1, start + i].mean(-1)  # (layers, heads)
    q = np.arange(1, start + 2 * L - 1)
    previous = pattern[:, :, q, q - 1].mean(-1)  # (layers, heads)
    return induction, previous


def half_losses(logits: np.ndarray, ids: np.ndarray, start: int, L: int) -> tuple[float, float]:
    """(first-half, second-half) mean cross-entropy in nats of one row: ``logits`` (T, V),
    ``ids`` (T,) its input. Both halves predict s_2 … s_L; the targets are read from the first
    copy, since the row ends with s_{L-1} (its next token, s_L, is not in the row)."""
    x = logits.astype(np.float64)
    logp = x - x.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))  # (T, V) log-softmax
    first = np.arange(start, start + L - 1)  # s_1 … s_{L-1}, first time: they predict s_2 … s_L
    second = first + L  # the same, second time
    targets = ids[first + 1]  # s_2 … s_L
    return float(-logp[first, targets].mean()), float(-logp[second, targets].mean())


@dataclass(frozen=True)
class InductionProbe:
    """One checkpoint's measurements over the probe rows (means over rows)."""

    induction: np.ndarray  # (layers, heads)
    previous: np.ndarray  # (layers, heads)
    first_loss: float
    second_loss: float

    @property
    def best(self) -> tuple[int, int, float]:
        """(layer, head, score) of the head with the highest induction score."""
        layer, head = np.unravel_index(int(np.argmax(self.induction)), self.induction.shape)
        return int(layer), int(head), float(self.induction[layer, head])


@torch.no_grad()
def probe(model: Transformer, ids: np.ndarray, pad_id: int = 0) -> InductionProbe:
    """Measure ``model`` on rows ``ids`` (N, T) of the induction task, padded on the right (a
    causal model never reads the padding), in one forward pass."""
    n_layers = model.cfg.n_layers
    with recording(lambda n: n.endswith("attn.hook_pattern")) as store:
        logits = model(torch.from_numpy(ids)).numpy()  # (N, T, V)
    pattern = np.stack([store[f"blocks.{i}.attn.hook_pattern"].numpy() for i in range(n_layers)],
                       axis=1)  # (N, layers, heads, T, T)
    ind, prev, first, second = [], [], [], []
    for row, lp, pat in zip(ids, logits, pattern):
        start, L = repeat_layout(row, pad_id)
        a, b = repeat_scores(pat, start, L)
        ind.append(a)
        prev.append(b)
        f, s = half_losses(lp, row, start, L)
        first.append(f)
        second.append(s)
    return InductionProbe(np.mean(ind, 0), np.mean(prev, 0), float(np.mean(first)),
                          float(np.mean(second)))


def first_induction(checkpoints, threshold: float = INDUCTION_HEAD):
    """The first checkpoint (with an ``induction`` probe) where some head's induction score is
    above ``threshold``, or None."""
    return next((c for c in checkpoints if c.induction is not None and c.induction.best[2] > threshold),
                None)


def induction_summary(checkpoints, threshold: float = INDUCTION_HEAD) -> str:
    """What a run of the induction task did, in its own numbers: when a head first passed
    ``threshold``, then at the last checkpoint the best induction head, the strongest
    previous-token head of an earlier layer, and the two copies' losses (and before training).

    ``checkpoints``: a run's checkpoints (each with ``step``, ``seconds`` and ``induction``)."""
    probed = [c for c in checkpoints if c.induction is not None]
    if not probed:
        return "No checkpoint measured yet."
    start, last = probed[0].induction, probed[-1]
    layer, head, score = last.induction.best
    partner = ""
    if layer > 0:
        prev = last.induction.previous[:layer]  # (earlier layers, heads)
        pl, ph = np.unravel_index(int(np.argmax(prev)), prev.shape)
        partner = (f"; the strongest previous-token head before it, L{int(pl)}H{int(ph)}, scores "
                   f"{float(prev[pl, ph]):.2f}")
    end = (f"At step {last.step} the best induction head is L{layer}H{head} ({score:.2f}){partner}. "
           f"The loss on the second copy is {last.induction.second_loss:.2f} nats against "
           f"{last.induction.first_loss:.2f} on the first (before training: "
           f"{start.second_loss:.2f} and {start.first_loss:.2f}).")
    found = first_induction(probed, threshold)
    if found is None:
        return f"No head has passed an induction score of {threshold:g} yet. " + end
    fl, fh, _ = found.induction.best
    return (f"Head L{fl}H{fh} passed an induction score of {threshold:g} at step {found.step}, "
            f"{found.seconds:.0f} s into the run. " + end)
