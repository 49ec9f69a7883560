"""``tfviz.load``: a model by its preset's name, from a folder of ours, or from a Hugging Face
folder (GPT-2 or BERT), as one :class:`tfviz.bundle.Bundle`.

It stands a floor above both kinds of bundle it opens (``tfviz.bundle`` for ours, ``tfviz.hf``
for a checkpoint), so neither of them needs the other to find its way.
"""
from __future__ import annotations

from pathlib import Path

from tfviz.bundle import ASSETS, Bundle, fresh, load_dir
from tfviz.config import preset
from tfviz.hf import CheckpointError, is_checkpoint_folder, load_checkpoint


def load(preset_or_path: str | Path) -> Bundle:
    """A trained bundle from assets/ or a folder; else the preset with fresh seeded weights.
    A Hugging Face folder (config.json with a ``model_type``: GPT-2 or BERT) is converted to our model
    by :func:`tfviz.hf.load_checkpoint`, which raises :class:`tfviz.hf.CheckpointError` with
    what is wrong when it cannot be opened.
    ``load("vit-tiny")`` gives a :class:`tfviz.vision_bundle.VisionBundle`, which reads images."""
    path = Path(preset_or_path).expanduser()
    if path.is_dir():
        if is_checkpoint_folder(path):  # a Hugging Face folder: GPT-2 or BERT (tfviz.hf)
            return load_checkpoint(path)
        if (path / "model.safetensors").exists():
            return load_dir(path)
    elif "/" in str(preset_or_path) or "\\" in str(preset_or_path):  # a path, not a preset's name
        raise CheckpointError(path, "there is no such folder.")
    name = str(preset_or_path)
    if (ASSETS / name / "model.safetensors").exists():
        return load_dir(ASSETS / name)
    from tfviz.model.vit import VIT_PRESETS

    if name in VIT_PRESETS:  # vit-tiny: a VisionBundle, which reads images
        from tfviz.vision_bundle import fresh_vision

        return fresh_vision(name)
    return fresh(preset(name))
