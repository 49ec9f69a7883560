"""What the tests of Hugging Face folders share (tests/test_hf_gpt2.py, tests/test_hf_bert*.py):
editing a copied folder's config.json, and reading the CheckpointError a bad folder earns."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfviz
from tfviz.hf import CheckpointError, describe


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
