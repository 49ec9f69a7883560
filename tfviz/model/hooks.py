"""Identity modules that mark where an activation can be read.

A HookPoint returns its input unchanged. Because it is a module, its name comes from the
module tree (``blocks.0.attn.hook_pattern``), the same names TransformerLens uses, and
:func:`tfviz.trace.run_with_trace` attaches a forward hook to it for one call only.

>>> import torch
>>> HookPoint()(torch.tensor([1.0, 2.0]))
tensor([1., 2.])
"""
from __future__ import annotations

from torch import Tensor, nn


class HookPoint(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x
