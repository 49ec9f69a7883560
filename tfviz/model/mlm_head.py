"""BERT's masked-LM transform: what the last block's output goes through before the unembedding.

    h = LN(act(x W + b))          (dense d -> d, the model's activation, then LayerNorm)
    logits = h E^T + b_U          (the tied unembedding and its bias, in the Transformer)

Our own encoder (bert-tiny) reads logits straight from the last block; a BERT checkpoint was
trained with this transform in between, so its masked-word guesses need it.

>>> import torch
>>> from tfviz.config import ModelConfig
>>> head = MLMHead(ModelConfig(d_model=4, activation="gelu"))
>>> head(torch.zeros(2, 3, 4)).shape         # (B, T, d) in, (B, T, d) out
torch.Size([2, 3, 4])
"""
from __future__ import annotations

from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.ffn import activation
from tfviz.model.hooks import HookPoint
from tfviz.model.norm import LayerNorm


class MLMHead(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)  # W, b
        self.hook_pre = HookPoint()  # (B, T, d): x W + b
        self.hook_post = HookPoint()  # (B, T, d): after the activation
        self.ln = LayerNorm(cfg.d_model, cfg.ln_eps)

    def forward(self, x: Tensor) -> Tensor:
        pre = self.hook_pre(self.dense(x))  # (B, T, d)
        return self.ln(self.hook_post(self.act(pre)))  # (B, T, d)
