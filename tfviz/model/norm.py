"""LayerNorm and RMSNorm written out, so their statistics can be shown.

For each token vector x of width d:
    LayerNorm:  mu = mean(x),  sigma = sqrt(mean((x - mu)^2) + eps)
                LN(x) = (x - mu) / sigma * gamma + beta
    RMSNorm:    rms = sqrt(mean(x^2) + eps)
                RMS(x) = x / rms * gamma             (no mean taken away, no beta)

RMSNorm (Llama, Mistral, Qwen) keeps only LayerNorm's rescaling: the vector's direction is
kept, its length set to about sqrt(d).

>>> import torch
>>> ln = LayerNorm(4)
>>> ln(torch.tensor([[1.0, 2.0, 3.0, 4.0]])).round(decimals=3)
tensor([[-1.3420, -0.4470,  0.4470,  1.3420]], grad_fn=<RoundBackward1>)
>>> RMSNorm(4, eps=0.0)(torch.tensor([[1.0, 1.0, 1.0, 1.0]]))   # rms 1: unchanged
tensor([[1., 1., 1., 1.]], grad_fn=<MulBackward0>)
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.hooks import HookPoint


class LayerNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.bias = nn.Parameter(torch.zeros(d))  # beta
        self.hook_mean = HookPoint()  # (B, T)
        self.hook_scale = HookPoint()  # (B, T): sqrt(var + eps), the "std" we divide by
        self.hook_normalized = HookPoint()  # (B, T, d): before gamma and beta

    def forward(self, x: Tensor) -> Tensor:
        mean = self.hook_mean(x.mean(-1))  # (B, T)
        centred = x - mean[..., None]  # (B, T, d)
        var = (centred * centred).mean(-1)  # (B, T), biased like torch.nn.LayerNorm
        scale = self.hook_scale((var + self.eps).sqrt())  # (B, T)
        normalized = self.hook_normalized(centred / scale[..., None])  # (B, T, d)
        return normalized * self.weight + self.bias


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis, computed in float32 whatever the
    input's dtype, as transformers' LlamaRMSNorm does (a bfloat16 square would lose the sum).

    Any leading axes are carried along: a block's norm reads (B, T, d), Qwen3's norm of each
    head's queries (B, T, H, d_head), whose scale is then (B, T, H).
    """

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.hook_scale = HookPoint()  # (B, T): sqrt(mean(x^2) + eps), the rms we divide by
        self.hook_normalized = HookPoint()  # (B, T, d): x / rms, before gamma

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        mean_square = x32.pow(2).mean(-1, keepdim=True)  # (B, T, 1)
        self.hook_scale((mean_square[..., 0] + self.eps).sqrt())  # (B, T)
        # x * rsqrt(...) rather than x / sqrt(...): transformers' own two operations, so a
        # checkpoint's numbers are theirs to the bit (the two differ in the last bit at times).
        normalized = self.hook_normalized((x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype))
        return self.weight * normalized  # (B, T, d)


def make_norm(cfg: ModelConfig, d: int | None = None) -> LayerNorm | RMSNorm:
    """The norm ``cfg`` asks for, over ``d`` entries (the model width unless given)."""
    d = cfg.d_model if d is None else d
    return RMSNorm(d, cfg.ln_eps) if cfg.norm_type == "rmsnorm" else LayerNorm(d, cfg.ln_eps)
