"""The position-wise feed-forward block: FFN(x) = act(x W_1 + b_1) W_2 + b_2.

Every token goes through the same two layers on its own; this is where a transformer does
per-token computation rather than mixing tokens.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.hooks import HookPoint


def activation(name: str):
    return F.relu if name == "relu" else F.gelu


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig, hooks: bool = True) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)
        self.W_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        if hooks:
            self.hook_pre = HookPoint()  # (B, T, d_ff): x W_1 + b_1
            self.hook_post = HookPoint()  # (B, T, d_ff): after the activation

    def forward(self, x: Tensor) -> Tensor:
        if not hasattr(self, "hook_pre"):  # an expert inside a MoE layer
            return self.W_out(self.act(self.W_in(x)))
        pre = self.hook_pre(self.W_in(x))
        return self.W_out(self.hook_post(self.act(pre)))
