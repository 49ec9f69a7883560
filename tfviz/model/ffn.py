"""The position-wise feed-forward block: FFN(x) = act(x W_1 + b_1) W_2 + b_2.

Every token goes through the same two layers on its own; this is where a transformer does
per-token computation rather than mixing tokens. (A mixture-of-experts layer has several such
networks, each an ``Expert`` in ``tfviz/model/moe.py``.)

>>> import torch
>>> mlp = MLP(ModelConfig(d_model=4, d_ff=16))
>>> mlp(torch.zeros(2, 3, 4)).shape         # (B, T, d) in, (B, T, d) out
torch.Size([2, 3, 4])
"""
from __future__ import annotations

from functools import partial

import torch.nn.functional as F
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.hooks import HookPoint


def activation(name: str):
    """relu, gelu (exact: x * Phi(x)) or gelu_tanh (GPT-2's tanh approximation)."""
    if name == "gelu_tanh":
        return partial(F.gelu, approximate="tanh")
    return F.relu if name == "relu" else F.gelu


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)  # W_1, b_1
        self.W_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)  # W_2, b_2
        self.hook_pre = HookPoint()  # (B, T, d_ff): x W_1 + b_1
        self.hook_post = HookPoint()  # (B, T, d_ff): after the activation

    def forward(self, x: Tensor) -> Tensor:
        pre = self.hook_pre(self.W_in(x))  # (B, T, d_ff): x W_1 + b_1
        post = self.hook_post(self.act(pre))  # (B, T, d_ff): act(x W_1 + b_1)
        return self.W_out(post)  # (B, T, d): act(...) W_2 + b_2
