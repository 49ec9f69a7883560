"""``tfviz.load("vit-tiny")``: the vision transformer, its config and its measured manifest.

>>> import numpy as np, tfviz
>>> from tfviz.vision import shapes_image
>>> b = tfviz.load("vit-tiny")
>>> image, label = shapes_image(3, size=16, kind="square", noise=0.0)
>>> tr = b.trace(image)
>>> tr["pattern", 0].shape, b.config.classes[int(tr.logits.argmax())]
((4, 17, 17), 'square')

A text bundle (:class:`tfviz.bundle.Bundle`) reads a sentence through its tokenizer; this one
reads an (H, W, C) image, which the model itself cuts into patches. ``weights()`` gives every
parameter as read-only numpy, with the blocks under the text models' names (W_Q[l, h], …) and
the parts only a ViT has under the names the lesson uses:

    E (P²·C, D)  b_E (D,)  class_token (D,)  E_pos (N+1, D)  ln_final.w/b (D,)
    W_head (D, classes)  b_head (classes,)
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.torch import load_file

from tfviz.manifest import Measured
from tfviz.model.vit import VIT_PRESETS, ViTConfig, VisionTransformer
from tfviz.reference import softmax
from tfviz.trace import NamesFilter, Trace, trace_image
from tfviz.weights import export_vit_weights


@dataclass(frozen=True)
class VisionBundle(Measured):
    name: str
    model: VisionTransformer
    config: ViTConfig
    manifest: dict = field(default_factory=dict)
    trained: bool = False
    _weights: Mapping[str, np.ndarray] | None = field(default=None, init=False, repr=False,
                                                      compare=False)

    def weights(self) -> Mapping[str, np.ndarray]:
        """Every parameter as read-only numpy, built on the first call and shared after."""
        if self._weights is None:
            object.__setattr__(self, "_weights", export_vit_weights(self.model))
        return self._weights

    def trace(self, image, *, names: NamesFilter = None) -> Trace:
        """Every activation of one pass on ``image`` (H, W, C), without the batch axis."""
        return trace_image(self.model, image, names)

    def probabilities(self, image) -> np.ndarray:
        """softmax of the logits: one probability per class, in ``config.classes`` order."""
        return softmax(self.trace(image, names=()).logits)


def load_vision_dir(path: Path) -> VisionBundle:
    cfg = ViTConfig.from_dict(json.loads((path / "config.json").read_text()))
    model = VisionTransformer(cfg)
    model.load_state_dict(load_file(path / "model.safetensors"))
    model.eval()
    manifest_path = path / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return VisionBundle(cfg.name, model, cfg, manifest, trained=True)


def fresh_vision(name: str) -> VisionBundle:
    """The preset with its seeded, untrained weights (when assets/ has no trained files)."""
    cfg = VIT_PRESETS[name]
    return VisionBundle(name, VisionTransformer(cfg).eval(), cfg)
