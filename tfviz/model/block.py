"""One transformer block: attention and feed-forward sublayers, each wrapped in a residual.

post-LN (the original paper, and our sources):
    z = LN1(x + SelfAttn(x))          -> hook_resid_mid
    y = LN2(z + FFN(z))               -> hook_resid_post
pre-LN (GPT-2 and most modern models):
    z = x + SelfAttn(LN1(x))          -> hook_resid_mid
    y = z + FFN(LN2(z))               -> hook_resid_post
A decoder block of an encoder-decoder model has a cross-attention sublayer in between, whose
queries come from the decoder and whose keys and values come from the encoder's output m:
    post-LN  z' = LN_cross(z + CrossAttn(z, m))      pre-LN  z' = z + CrossAttn(LN_cross(z), m)
Each sublayer's own output (before it is added to the residual) is hook_attn_out,
hook_cross_attn_out and hook_mlp_out. "LN" is the config's norm: LayerNorm, or RMSNorm for a
Llama-shaped model (``norm_type``), whose pre-LN block is Llama's decoder layer.

Granite multiplies each sublayer's output by its ``residual_multiplier`` m before the add,
z = x + m * SelfAttn(LN1(x)); the hooks hold m * SelfAttn(...) and m * FFN(...), what is added,
so resid_mid = resid_pre + attn_out and resid_post = resid_mid + mlp_out still hold.

With ``residual=False`` (the training lab's what-if) there is no skip path: "x +" goes from
every line above, so pre-LN computes z = SelfAttn(LN1(x)), y = FFN(LN2(z)) and post-LN
z = LN1(SelfAttn(x)), y = LN2(FFN(z)): a plain stack, where every layer's input is only what
the layer below made of it.

With ``ffn=False`` (the lab's attention-only models) the block is its attention sublayer alone:
no LN2, no FFN, no hook_mlp_out, and resid_post = resid_mid.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.attention import AttnContext, Attention
from tfviz.model.ffn import MLP
from tfviz.model.hooks import HookPoint
from tfviz.model.moe import MoE
from tfviz.model.norm import make_norm


@dataclass(frozen=True)
class BlockContext:
    self_attn: AttnContext
    cross_attn: AttnContext | None = None
    memory: Tensor | None = None  # (B, S, d) encoder output, for cross-attention
    moe_top_k: int | None = None
    cross_kv: tuple[Tensor, Tensor] | None = None  # this layer's K, V of the memory, if computed
    offset: int = 0  # position of the first token of x in its sentence (MoE capacity counts it)


class BlockOutput(NamedTuple):
    x: Tensor  # (B, T, d)
    kv: tuple[Tensor, Tensor]  # this layer's self-attention keys and values, for the KV cache
    aux_loss: Tensor  # MoE load-balancing loss, a zero scalar for a dense feed-forward block
    served: Tensor | None  # MoE: (B, E) tokens each expert has served so far; None if dense or uncapped


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool = False, first: bool = False) -> None:
        """``first``: the stack's first block, whose attention holds a T5 model's bias table."""
        super().__init__()
        self.pre_ln = cfg.norm == "pre"
        self.residual_multiplier = cfg.residual_multiplier  # Granite's; 1.0 everywhere else
        self.residual = cfg.residual  # False: no skip path (the lab's what-if)
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        self.attn = Attention(cfg, bias_table=first and cfg.positional == "t5_bias")
        self.ln1 = make_norm(cfg)
        self.hook_attn_out = HookPoint()  # (B, T, d): after W_o
        self.hook_resid_mid = HookPoint()  # (B, T, d)
        # Cross-attention exists only in the decoder of an encoder-decoder model.
        self.cross_attn = Attention(cfg, cross=True) if cross else None
        self.ln_cross = make_norm(cfg) if cross else None
        self.hook_cross_attn_out = HookPoint() if cross else None  # (B, T, d)
        self.hook_resid_mid_cross = HookPoint() if cross else None  # (B, T, d)
        # ffn=False: attention only (no feed-forward sublayer, its norm or its hook)
        self.mlp = (MoE(cfg) if cfg.is_moe else MLP(cfg)) if cfg.ffn else None
        self.ln2 = make_norm(cfg) if cfg.ffn else None
        self.hook_mlp_out = HookPoint() if cfg.ffn else None  # (B, T, d)
        self.hook_resid_post = HookPoint()  # (B, T, d)

    def forward(self, x: Tensor, ctx: BlockContext, past: tuple[Tensor, Tensor] | None = None,
                served: Tensor | None = None) -> BlockOutput:
        """x: (B, T, d) -> BlockOutput. ``past``: this layer's cached (k, v) of earlier tokens;
        ``served``: its MoE's counts from earlier tokens (both from the KV cache)."""
        x = self.hook_resid_pre(x)  # (B, T, d)
        if self.pre_ln:
            a, kv = self.attn(self.ln1(x), ctx.self_attn, past=past)
            x = self.hook_resid_mid(self._skip(x, self.hook_attn_out(self._added(a))))  # z = x + SelfAttn(LN1(x))
            if self.cross_attn is not None:
                # z' = z + CrossAttn(LN_cross(z), m)
                c, _ = self.cross_attn(self.ln_cross(x), ctx.cross_attn, source=ctx.memory,
                                      kv=ctx.cross_kv)
                x = self.hook_resid_mid_cross(self._skip(x, self.hook_cross_attn_out(self._added(c))))
            if self.mlp is None:  # attention only: y = z
                return BlockOutput(self.hook_resid_post(x), kv, x.new_zeros(()), None)
            f, aux, served = self._feed_forward(self.ln2(x), ctx, served)
            y = self.hook_resid_post(self._skip(x, self.hook_mlp_out(self._added(f))))  # y = z + FFN(LN2(z))
            return BlockOutput(y, kv, aux, served)

        a, kv = self.attn(x, ctx.self_attn, past=past)
        x = self.hook_resid_mid(self.ln1(self._skip(x, self.hook_attn_out(self._added(a)))))  # z = LN1(x + SelfAttn(x))
        if self.cross_attn is not None:
            # z' = LN_cross(z + CrossAttn(z, m))
            c, _ = self.cross_attn(x, ctx.cross_attn, source=ctx.memory, kv=ctx.cross_kv)
            x = self.hook_resid_mid_cross(self.ln_cross(self._skip(x, self.hook_cross_attn_out(self._added(c)))))
        if self.mlp is None:  # attention only: y = z
            return BlockOutput(self.hook_resid_post(x), kv, x.new_zeros(()), None)
        f, aux, served = self._feed_forward(x, ctx, served)
        y = self.hook_resid_post(self.ln2(self._skip(x, self.hook_mlp_out(self._added(f)))))  # y = LN2(z + FFN(z))
        return BlockOutput(y, kv, aux, served)

    def _skip(self, x: Tensor, out: Tensor) -> Tensor:
        """The residual add x + out (B, T, d); without the skip path, out alone."""
        return x + out if self.residual else out

    def _added(self, out: Tensor) -> Tensor:
        """A sublayer's output (B, T, d) as it is added to the residual: times Granite's
        residual_multiplier, untouched (the same tensor) for every other model."""
        return out if self.residual_multiplier == 1.0 else out * self.residual_multiplier

    def _feed_forward(self, h: Tensor, ctx: BlockContext, served: Tensor | None
                      ) -> tuple[Tensor, Tensor, Tensor | None]:
        """FFN(h) (B, T, d), the MoE load-balancing loss (a zero scalar for a dense FFN) and
        the MoE's grown served counts (None for a dense FFN or an MoE without a capacity)."""
        if isinstance(self.mlp, MoE):
            return self.mlp(h, ctx.moe_top_k, served, ctx.offset)
        return self.mlp(h), h.new_zeros(()), None
