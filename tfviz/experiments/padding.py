"""Several sentences as one padded batch, and proof that the padding changes no real token.

To batch sentences of different length, short ones are filled up with a padding token and a
0/1 attention mask (1 = real token) puts −∞ on every pad key (see
:func:`tfviz.analysis.masking.padding_mask`). Each sentence is then also run alone: its real
tokens' logits agree with the padded batch's to float round-off.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.analysis.masking import padding_mask
from tfviz.trace import Trace, run_with_trace


@dataclass(frozen=True)
class PaddingDemo:
    tokens: tuple[tuple[str, ...], ...]  # per sentence, padded with "<pad>"
    ids: np.ndarray  # (2, T)
    mask: np.ndarray  # (2, T) 1 = real token
    trace: Trace  # batched trace: patterns are (2, heads, T, T)
    max_change: float  # real tokens: |padded run − the sentence run alone|, largest logit change


def padding_demo(model, id_lists: Sequence[Sequence[int]], token_lists: Sequence[Sequence[str]],
                 pad_id: int = 0, pad_token: str = "<pad>") -> PaddingDemo:
    """Run several sentences as one padded batch (the model is only read, never changed).

    Also runs each sentence alone and reports how far its real tokens' logits moved because
    of the padding: with a correct mask, only float round-off (about 1e-6).
    """
    ids, mask = padding_mask(id_lists, pad_id)
    enc = {}
    if model.cfg.arch == "encoder-decoder":  # the source sentence is the same padded batch
        enc = {"enc_ids": ids, "enc_attention_mask": mask}
    trace = run_with_trace(model, ids, attention_mask=mask, **enc)
    change = 0.0
    for row, seq in enumerate(id_lists):
        alone_enc = {"enc_ids": list(seq)} if enc else {}
        alone = run_with_trace(model, list(seq), names=["logits"], **alone_enc).logits
        change = max(change, float(np.abs(trace.logits[row, :len(seq)] - alone).max()))
    tokens = tuple(tuple(toks) + (pad_token,) * (ids.shape[1] - len(toks)) for toks in token_lists)
    return PaddingDemo(tokens, ids, mask, trace, change)
