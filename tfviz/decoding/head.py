"""The LM head of a tfviz Transformer: which matrix turns the last hidden state into logits.

    logits = h Eᵀ      tied: the output layer is the token embedding E itself (V × d)
    logits = h W_U     untied: a matrix of its own (d × V)

>>> import tfviz
>>> model = tfviz.load("gpt-tiny").model
>>> is_tied(model), unembedding(model) is model.embed.weight
(True, True)
"""
from __future__ import annotations

from torch import Tensor


def unembedding(model) -> Tensor:
    """The (V, d) tensor the LM head multiplies the last hidden state by (as its transpose):
    the embedding's own weight when tied (``Transformer._logits``), else the head's."""
    return model.embed.weight if model.unembed is None else model.unembed.weight


def is_tied(model) -> bool:
    """Whether the LM head reads the very tensor that embeds the input tokens (one storage,
    so one set of V × d numbers, trained by both ends of the model)."""
    head, embed = unembedding(model), model.embed.weight
    return head is embed or (head.data_ptr() == embed.data_ptr() and head.shape == embed.shape)
