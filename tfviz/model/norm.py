"""LayerNorm written out, so its statistics can be shown.

For each token vector x of width d:
    mu = mean(x),  sigma = sqrt(mean((x - mu)^2) + eps)
    LN(x) = (x - mu) / sigma * gamma + beta

>>> import torch
>>> ln = LayerNorm(4)
>>> ln(torch.tensor([[1.0, 2.0, 3.0, 4.0]])).round(decimals=3)
tensor([[-1.3420, -0.4470,  0.4470,  1.3420]], grad_fn=<RoundBackward1>)
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

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
