"""Identity modules that mark where an activation can be read.

A HookPoint returns its input unchanged. Its ``name`` comes from the module tree
(``blocks.0.attn.hook_pattern``), the same names TransformerLens uses. While a
:func:`recording` is active *in the current thread or context*, each HookPoint offers its
tensor to it; otherwise it does nothing. Recording lives in a context variable rather than in
hooks registered on the module, so two learners tracing one shared model at the same moment
(two server threads) never see each other's activations, and nothing is left on the model.

>>> import torch
>>> hp = HookPoint("demo.hook_x")
>>> with recording(lambda name: True) as store:
...     _ = hp(torch.tensor([1.0, 2.0]))
>>> store["demo.hook_x"]
tensor([1., 2.])

A :func:`patching` context does the one other thing a hook may do: hand the forward pass a
different tensor in place of the one that arrived (activation patching, :mod:`tfviz.interpret`).
It lives in a context variable too, so it edits this one call only; outside one, a HookPoint
returns the very tensor it was given, and every other run is untouched to the bit.

>>> with patching(lambda name, x: x * 0 if name == "demo.hook_x" else x):
...     hp(torch.tensor([1.0, 2.0]))
tensor([0., 0.])
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from torch import Tensor, nn

_RECORDING: ContextVar[tuple[dict, Callable[[str], bool]] | None] = ContextVar(
    "tfviz_recording", default=None)
#: (name, tensor) -> the tensor the forward pass goes on with, while a patching() is active
_PATCHING: ContextVar[Callable[[str, Tensor], Tensor] | None] = ContextVar(
    "tfviz_patching", default=None)


class HookPoint(nn.Module):
    def __init__(self, name: str = "") -> None:
        super().__init__()
        self.name = name  # filled in by name_hook_points once the module tree is built

    def forward(self, x: Tensor) -> Tensor:
        edit = _PATCHING.get()
        if edit is not None:  # activation patching: the recorded tensor is the one passed on
            x = edit(self.name, x)
        active = _RECORDING.get()
        if active is not None and active[1](self.name):
            active[0][self.name] = x.detach()
        return x


def name_hook_points(root: nn.Module) -> None:
    """Give every HookPoint under ``root`` its module-tree name."""
    for name, module in root.named_modules():
        if isinstance(module, HookPoint):
            module.name = name


@contextmanager
def recording(wanted: Callable[[str], bool]) -> Iterator[dict[str, Tensor]]:
    """Collect the tensors of the HookPoints whose names ``wanted`` accepts, in this context."""
    store: dict[str, Tensor] = {}
    token = _RECORDING.set((store, wanted))
    try:
        yield store
    finally:
        _RECORDING.reset(token)


@contextmanager
def patching(edit: Callable[[str, Tensor], Tensor]) -> Iterator[None]:
    """In this context, every HookPoint passes on ``edit(name, x)`` instead of its input ``x``.

    ``edit`` must return ``x`` itself for the names it leaves alone, and a new tensor (never
    ``x`` changed in place) for the ones it patches. Only hooks whose output the forward pass
    reads can patch anything: an RMSNorm's ``hook_scale`` is a record of a number the norm
    has already used, so :mod:`tfviz.interpret` patches only the activations it lists.
    """
    token = _PATCHING.set(edit)
    try:
        yield
    finally:
        _PATCHING.reset(token)
