"""One transformer block: attention and feed-forward sublayers, each wrapped in a residual.

post-LN (the original paper, and our sources):
    z = LN1(x + SelfAttn(x))          -> hook_resid_mid
    y = LN2(z + FFN(z))               -> hook_resid_post
pre-LN (GPT-2 and most modern models):
    z = x + SelfAttn(LN1(x))
    y = z + FFN(LN2(z))
A decoder block of an encoder-decoder model has a cross-attention sublayer in between, whose
queries come from the decoder and whose keys and values come from the encoder's output.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.attention import AttnContext, Attention
from tfviz.model.ffn import MLP
from tfviz.model.hooks import HookPoint
from tfviz.model.moe import MoE
from tfviz.model.norm import LayerNorm


@dataclass(frozen=True)
class BlockContext:
    self_attn: AttnContext
    cross_attn: AttnContext | None = None
    memory: Tensor | None = None  # (B, S, d) encoder output, for cross-attention
    moe_top_k: int | None = None


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool = False) -> None:
        super().__init__()
        self.pre_ln = cfg.norm == "pre"
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        self.attn = Attention(cfg)
        self.ln1 = LayerNorm(cfg.d_model, cfg.ln_eps)
        self.hook_attn_out = HookPoint()  # (B, T, d): after W_o
        self.hook_resid_mid = HookPoint()
        if cross:
            self.cross_attn = Attention(cfg)
            self.ln_cross = LayerNorm(cfg.d_model, cfg.ln_eps)
            self.hook_cross_attn_out = HookPoint()
            self.hook_resid_mid_cross = HookPoint()
        self.mlp = MoE(cfg) if cfg.is_moe else MLP(cfg)
        self.ln2 = LayerNorm(cfg.d_model, cfg.ln_eps)
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()

    def _sublayer(self, x: Tensor, ln: LayerNorm, run, hook_out: HookPoint, hook_resid: HookPoint):
        if self.pre_ln:
            out, extra = run(ln(x))
            return hook_resid(x + hook_out(out)), extra
        out, extra = run(x)
        return hook_resid(ln(x + hook_out(out))), extra

    def forward(self, x: Tensor, ctx: BlockContext, past: tuple | None = None):
        """Returns (output (B, T, d), this layer's self-attention (k, v), MoE aux loss or 0)."""
        x = self.hook_resid_pre(x)
        x, kv = self._sublayer(x, self.ln1, lambda h: self.attn(h, ctx.self_attn, past=past),
                               self.hook_attn_out, self.hook_resid_mid)
        if hasattr(self, "cross_attn"):
            x, _ = self._sublayer(x, self.ln_cross,
                                  lambda h: self.cross_attn(h, ctx.cross_attn, source=ctx.memory),
                                  self.hook_cross_attn_out, self.hook_resid_mid_cross)
        if isinstance(self.mlp, MoE):
            x, aux = self._sublayer(x, self.ln2, lambda h: self.mlp(h, ctx.moe_top_k),
                                    self.hook_mlp_out, self.hook_resid_post)
        else:
            x, aux = self._sublayer(x, self.ln2, lambda h: (self.mlp(h), 0.0),
                                    self.hook_mlp_out, self.hook_resid_post)
        return x, kv, aux
