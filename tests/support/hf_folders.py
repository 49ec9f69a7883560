"""What the tests of Hugging Face folders share (tests/unit/hf/test_gpt2.py, tests/test_hf_bert*.py):
saving a small random checkpoint with its weights spread, editing a copied folder's
config.json, and reading the CheckpointError a bad folder earns."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfviz
from tfviz.hf import CheckpointError, describe


def save_spread(model, tokenizer, folder: Path, *, spread: bool, is_gain) -> object:
    """Save a freshly made transformers ``model`` (safetensors) with ``tokenizer`` beside it in
    ``folder``, and return it in eval mode.

    ``spread``: transformers initialises with std 0.02, which at d = 32 leaves every attention
    map nearly uniform and every logit nearly equal, where a wrong transpose could hide. So the
    weights are redrawn wider first (std 0.3; the LayerNorm gains, the parameters ``is_gain``
    picks by name, around 1), in parameter order from the torch seed the caller set."""
    import torch

    if spread:
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(1 + 0.2 * torch.randn_like(p) if is_gain(name) else 0.3 * torch.randn_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return model.eval()


def edit_config(path: Path, **changes) -> None:
    """Change keys of ``path``'s config.json in place."""
    data = json.loads((path / "config.json").read_text())
    data.update(changes)
    (path / "config.json").write_text(json.dumps(data))


def problem(path: Path, *, described: bool = False) -> str:
    """The message of the CheckpointError ``tfviz.load(path)`` raises, which names the folder.
    With ``described``, ``describe`` (which reads no tokenizer's contents) says the same about a
    folder whose fault it can see."""
    with pytest.raises(CheckpointError) as info:
        tfviz.load(path)
    message = str(info.value)
    assert str(path) in message
    assert isinstance(info.value, ValueError) and info.value.folder == path
    if described and "tokenizer.json cannot" not in message and "WordPiece" not in message:
        with pytest.raises(CheckpointError) as seen:
            describe(path)
        assert str(seen.value) == message
    return message
