"""tfviz: a small transformer whose every intermediate can be seen.

    import tfviz
    bundle = tfviz.load("gpt-tiny")
    trace = bundle.trace("the animal didn't cross the street because it was too tired")
    trace["pattern", 0]          # (heads, query, key) attention of layer 0

The names below are imported when first used, so that a part that needs no model (the live-class
store, ``python -m tfviz.classroom.store``) starts without importing torch.
"""
from __future__ import annotations

import importlib

_HOMES = {"Bundle": "tfviz.bundle", "load": "tfviz.opening", "ModelConfig": "tfviz.config",
          "RunOptions": "tfviz.config", "preset": "tfviz.config",
          "CheckpointError": "tfviz.hf"}

__all__ = ["Bundle", "CheckpointError", "ModelConfig", "RunOptions", "load", "preset"]


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'tfviz' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
