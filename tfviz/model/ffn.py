"""The position-wise feed-forward block: FFN(x) = act(x W_1 + b_1) W_2 + b_2.

Every token goes through the same two layers on its own; this is where a transformer does
per-token computation rather than mixing tokens. (A mixture-of-experts layer has several such
networks, each an ``Expert`` in ``tfviz/model/moe.py``.)

A gated block (SwiGLU in Llama, Mistral and Qwen; GeGLU) has a third matrix: one projection
goes through the activation and scales the other, unit by unit, before the way back down:

    FFN(x) = (act(x W_gate) * (x W_in)) W_out          act = SiLU (swiglu) or GELU (geglu)

The names are TransformerLens's: W_gate is transformers' ``gate_proj``, W_in its ``up_proj``,
W_out its ``down_proj``; ``hook_pre`` is x W_gate (what the activation reads),
``hook_pre_linear`` is x W_in, ``hook_post`` their gated product.

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
    """relu, gelu (exact: x * Phi(x)) or gelu_tanh (GPT-2's tanh approximation); for a gated
    block the function applied to its gate: SiLU (swiglu, x * sigmoid(x)) or exact GELU (geglu)."""
    if name == "gelu_tanh":
        return partial(F.gelu, approximate="tanh")
    if name == "swiglu":
        return F.silu
    return F.relu if name == "relu" else F.gelu


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)  # W_1, b_1 (gated: up)
        self.W_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)  # W_2, b_2 (gated: down)
        # Made after W_in and W_out, so that a plain block's seeded first weights stay as they were.
        self.W_gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias) if cfg.gated else None
        self.hook_pre = HookPoint()  # (B, T, d_ff): x W_1 + b_1 (gated: x W_gate)
        if cfg.gated:
            self.hook_pre_linear = HookPoint()  # (B, T, d_ff): x W_in, the gated values
        self.hook_post = HookPoint()  # (B, T, d_ff): after the activation (gated: times x W_in)

    def forward(self, x: Tensor) -> Tensor:
        if self.W_gate is None:
            pre = self.hook_pre(self.W_in(x))  # (B, T, d_ff): x W_1 + b_1
            post = self.hook_post(self.act(pre))  # (B, T, d_ff): act(x W_1 + b_1)
            return self.W_out(post)  # (B, T, d): act(...) W_2 + b_2
        gate = self.hook_pre(self.W_gate(x))  # (B, T, d_ff): x W_gate
        up = self.hook_pre_linear(self.W_in(x))  # (B, T, d_ff): x W_in
        post = self.hook_post(self.act(gate) * up)  # (B, T, d_ff): act(x W_gate) * x W_in
        return self.W_out(post)  # (B, T, d)
