"""Prefix tuning and prompt tuning: trained vectors placed before the text, the model frozen.

    prompt tuning (Lester et al. 2021)   p trained input vectors P (p × d) stand before the
                                         text's token embeddings; the model reads [P; E(x)]
                                         (its positions are added to both, as the model adds
                                         them to any input, so the text's shift by p)
    prefix tuning (Li & Liang 2021)      in every attention layer, p trained keys K_P and values
                                         V_P (p × heads × d_head each) stand before the text's:
                                         every query i scores and reads them too,

        α_i = softmax([q_i·K_Pᵀ, q_i·Kᵀ] / √d_k),    z_i = α_i [V_P; V]

Nothing else trains (but the classifier's head). A prompt is read by the first layer only and
changes what reaches the others through it; a prefix speaks to every layer directly, so it
trains 2 · layers times as many numbers for the same p (``tfviz.analysis.finetune``'s
``prompt_params`` and ``prefix_params`` count them).

Both start from real words, as the papers found works better than random numbers: the first p
tokens of the training sentences. The prompt starts as their token embeddings (Lester et al.'s
"sampled vocabulary" start); each layer's prefix as the keys and values that layer computes for
them when the frozen model reads them as a sentence (Li & Liang's "real words' activations").
Li & Liang also train the prefix through a small network that is dropped after training; here
it is trained directly: what is kept and used, and counted, is the same.

The prefix wraps each frozen :class:`~tfviz.model.attention.Attention` from outside
(:class:`PrefixAttention`): the layer already accepts earlier keys and values (``past``, as a
KV cache passes them), so the prefix goes in there, and the mask gains p columns every query
may read. The attention module itself is not changed.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import Tensor, nn

from tfviz.model.attention import AttnContext, Attention
from tfviz.model.hooks import recording


class PrefixAttention(nn.Module):
    """A frozen attention layer whose every query also reads ``p`` trained keys and values.

    ``keys`` and ``values``: (p, kv heads, d_head), the prefix's starting values (copied).
    Returns what the layer returns, its keys and values without the prefix's.

    >>> from tfviz.config import ModelConfig
    >>> att = Attention(ModelConfig(name="t", d_model=8, n_heads=2, n_layers=1, vocab_size=5))
    >>> wrapped = PrefixAttention(att, torch.zeros(3, 2, 4), torch.zeros(3, 2, 4))
    >>> out, (k, v) = wrapped(torch.randn(1, 5, 8), AttnContext(allowed=None, scale=True))
    >>> out.shape, k.shape      # 5 tokens in, 5 out; 3 more keys were read, not returned
    (torch.Size([1, 5, 8]), torch.Size([1, 5, 2, 4]))
    """

    def __init__(self, inner: Attention, keys: Tensor, values: Tensor) -> None:
        super().__init__()
        self.inner = inner
        self.prefix_k = nn.Parameter(keys.detach().clone())  # (p, Hkv, dh)
        self.prefix_v = nn.Parameter(values.detach().clone())  # (p, Hkv, dh)

    @property
    def length(self) -> int:
        return self.prefix_k.shape[0]

    def forward(self, x: Tensor, ctx: AttnContext, source: Tensor | None = None,
                past: tuple[Tensor, Tensor] | None = None,
                kv: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if source is not None or past is not None or kv is not None:
            raise ValueError("a prefix is read by self-attention over a whole text, without a cache")
        if ctx.alibi is not None or ctx.rel_index is not None or ctx.position_bias is not None:
            raise ValueError("prefix tuning here needs a model whose positions go into the tokens "
                             "(or RoPE): a distance-based bias has no distance for a prefix")
        B, p = x.shape[0], self.length
        prefix = (self.prefix_k.expand(B, *self.prefix_k.shape),  # (B, p, Hkv, dh)
                  self.prefix_v.expand(B, *self.prefix_v.shape))
        allowed = ctx.allowed
        if allowed is not None:  # (B or 1, 1, Tq, Tk) -> (B or 1, 1, Tq, p + Tk): every query reads the prefix
            allowed = torch.cat([allowed.new_ones(*allowed.shape[:-1], p), allowed], dim=-1)
        out, (k, v) = self.inner(x, dataclasses.replace(ctx, allowed=allowed), past=prefix)
        return out, (k[:, p:], v[:, p:])  # (B, T, Hkv, dh): the text's own


def starting_tokens(ids: Tensor, mask: Tensor, p: int) -> Tensor:
    """The first ``p`` real tokens of the rows, row after row: (p,) ids a prompt or prefix
    starts from.

    >>> starting_tokens(torch.tensor([[5, 6, 0], [7, 8, 9]]), torch.tensor([[1, 1, 0], [1, 1, 1]]), 4)
    tensor([5, 6, 7, 8])
    """
    real = ids[mask.bool()]  # (n,) every real token, row by row
    if len(real) < p:
        raise ValueError(f"the rows hold {len(real)} tokens, fewer than the {p} asked for")
    return real[:p]


@torch.no_grad()
def prompt_start(body: nn.Module, tokens: Tensor) -> Tensor:
    """(p, d): the token embeddings of ``tokens``, a prompt's starting vectors."""
    return body.embed(tokens).detach().clone()  # (p, d)


@torch.no_grad()
def prefix_start(body: nn.Module, tokens: Tensor) -> list[tuple[Tensor, Tensor]]:
    """Per layer, the (keys, values), each (p, Hkv, dh), that the frozen ``body`` computes for
    ``tokens`` read as one sentence: each layer's prefix's starting vectors."""
    n = len(body.blocks)
    wanted = {f"blocks.{i}.attn.hook_{kv}" for i in range(n) for kv in "kv"}
    with recording(lambda name: name in wanted) as store:
        body(tokens[None])  # (1, p) -> the layers' keys and values, recorded
    return [(store[f"blocks.{i}.attn.hook_k"][0], store[f"blocks.{i}.attn.hook_v"][0])  # (p, Hkv, dh)
            for i in range(n)]


def add_prefix(body: nn.Module, tokens: Tensor) -> None:
    """Wrap every attention layer of ``body`` (a frozen copy) in a :class:`PrefixAttention`
    that starts from ``tokens``' keys and values."""
    for block, (k, v) in zip(body.blocks, prefix_start(body, tokens)):
        block.attn = PrefixAttention(block.attn, k, v)
