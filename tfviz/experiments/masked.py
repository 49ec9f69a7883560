"""A BERT-style model reads [MASK] in place of one token and guesses what was there.

Lesson 1 replaces the token at one position by the tokenizer's [MASK]
(:func:`tfviz.analysis.pipeline.mask_token_id`) and traces the result; the logits at that
position are the model's guess. The shared model is only read, never changed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tfviz.analysis.pipeline import mask_token_id

if TYPE_CHECKING:  # tfviz.trace imports torch; the tour shows this function's code without it
    from tfviz.trace import Trace


def masked_trace(bundle, text: str, position: int) -> Trace:
    """Trace ``text`` with the token at ``position`` replaced by [MASK] (for BERT-style models).

    The shared model is only read, never changed.
    """
    from tfviz.trace import run_with_trace

    ids = bundle.encode(text)[: bundle.config.max_seq_len] or [0]
    mask_id = mask_token_id(bundle.tokenizer)
    if mask_id is None:
        raise ValueError("this tokenizer has no [MASK] token")
    position = min(max(position, 0), len(ids) - 1)
    ids = list(ids)
    ids[position] = mask_id
    return run_with_trace(bundle.model, ids, tokens=bundle.token_strings(ids))
