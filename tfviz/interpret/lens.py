"""The logit lens: what the model would predict if it stopped after each layer.

The residual stream after the embeddings and after each block is sent through the model's own
last steps: its final norm (if it has one, with each vector's own statistics), its unembedding
W_U (and b_U), and a Granite's division by ``logits_scaling``. After the last block this is
exactly how the model makes its logits, so the last row is the logits themselves.

>>> import tfviz
>>> b = tfviz.load("gpt-tiny")
>>> tr = b.trace("the animal didn't cross the street because it was too tired")
>>> lens = logit_lens(tr, b)
>>> lens.shape[0] == b.config.n_layers + 1, lens.shape[1:] == tr.logits.shape
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.interpret.common import final_norm, require_lm, to_logits, weights_of
from tfviz.reference import softmax
from tfviz.trace import Trace


def residual_stack(trace: Trace) -> np.ndarray:
    """(n_layers + 1, positions, d): the stream entering block 0, then after each block."""
    n = trace.config.n_layers
    return np.stack([trace["blocks.0.hook_resid_pre"]]
                    + [trace[f"blocks.{i}.hook_resid_post"] for i in range(n)])


def logit_lens(trace: Trace, weights) -> np.ndarray:
    """(n_layers + 1, positions, vocab) float64 logits of each layer's residual stream.

    ``weights``: the bundle, or ``bundle.weights()``. Row 0 reads the embeddings (times a
    Granite's embedding_multiplier, what enters block 0), row ℓ the output of block ℓ − 1.
    """
    require_lm(trace, "The logit lens")
    W = weights_of(weights)
    return to_logits(trace, W, final_norm(trace, W, residual_stack(trace)))


@dataclass(frozen=True)
class LensTop:
    """The logit lens's best guess at each layer and position.

    ids, probs: (n_layers + 1, positions): the most probable token and its probability;
    layers: the row names ("embed", "after block 0", ...); :meth:`settles`: per position, the
    row from which the final prediction is on top and stays there.
    """

    ids: np.ndarray
    probs: np.ndarray
    layers: tuple[str, ...]

    def settles(self) -> np.ndarray:
        """(positions,): the first row from which every later row's top token is the last
        row's (the row where the final answer appears and stays)."""
        same = self.ids == self.ids[-1]  # (rows, positions)
        rows = same.shape[0]
        out = np.full(same.shape[1], rows - 1)
        for p in range(same.shape[1]):
            r = rows - 1
            while r > 0 and same[r - 1, p]:
                r -= 1
            out[p] = r
        return out


def lens_top(trace: Trace, weights) -> LensTop:
    """The top token and its probability at each row of :func:`logit_lens`."""
    lens = logit_lens(trace, weights)
    probs = softmax(lens, axis=-1)  # (rows, positions, vocab)
    ids = lens.argmax(-1)
    top = np.take_along_axis(probs, ids[..., None], -1)[..., 0]
    names = ("embed",) + tuple(f"after block {i}" for i in range(lens.shape[0] - 1))
    return LensTop(ids=ids, probs=top, layers=names)
