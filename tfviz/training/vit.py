"""vit-tiny's recipe pieces: which shape is in the picture, from our own generated images.

    rows      shapes_dataset(TRAIN_IMAGES, split="train"): (image, class) pairs
    loss      cross-entropy of the class token's logits against the shape drawn
    evaluate  accuracy on shapes_dataset(HELDOUT_IMAGES, split="heldout"), overall and per class

A ViT reads pixels, not text, so its recipe has no tokenizer (``make_tokenizer`` gives None and
the bundle holds no tokenizer.json) and builds its own model (``Recipe.make_model``).
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from tfviz.data.shapes import FIRST_SEED, IMAGE_SIZE, MAX_NOISE, shapes_dataset
from tfviz.model.vit import VIT_PRESETS, VisionTransformer

TRAIN_IMAGES = 20_000
HELDOUT_IMAGES = 2_000


def make_model() -> VisionTransformer:
    return VisionTransformer(VIT_PRESETS["vit-tiny"])


def no_tokenizer() -> None:
    """A ViT's "tokenizer" is the patch cut, which lives in the model (tfviz.model.vit.patches_of)."""
    return None


def image_rows(tok=None) -> list[tuple[Tensor, int]]:
    images, labels = shapes_dataset(TRAIN_IMAGES, split="train")
    tensors = torch.from_numpy(images)  # (n, H, W, C)
    return [(tensors[i], int(labels[i])) for i in range(len(labels))]


def image_loss(model: VisionTransformer, rows: Sequence[tuple[Tensor, int]], gen: torch.Generator,
               tok=None) -> tuple[Tensor, Tensor]:
    """Cross-entropy of the predicted class, (loss, the same loss) as the text objectives return."""
    images = torch.stack([image for image, _ in rows])  # (B, H, W, C)
    labels = torch.tensor([label for _, label in rows])  # (B,)
    ce = F.cross_entropy(model(images), labels)
    return ce, ce


@cache
def heldout_set() -> tuple[np.ndarray, np.ndarray]:
    """The held-out images and classes (read-only: shared by every caller)."""
    images, labels = shapes_dataset(HELDOUT_IMAGES, split="heldout")
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def predict(model: VisionTransformer, images: np.ndarray, batch: int = 500) -> np.ndarray:
    """The predicted class of each image (n,), by the argmax of the logits."""
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch):
            out.append(model(torch.from_numpy(np.array(images[start:start + batch]))).argmax(-1))
    return torch.cat(out).numpy()


def evaluate(model: VisionTransformer, tok=None) -> dict:
    images, labels = heldout_set()
    right = predict(model, images) == labels
    classes = model.cfg.classes
    return {"heldout_accuracy": round(float(right.mean()), 4), "heldout_images": int(len(labels)),
            "heldout_accuracy_by_class": {c: round(float(right[labels == k].mean()), 4)
                                          for k, c in enumerate(classes)},
            "heldout_images_by_class": {c: int((labels == k).sum()) for k, c in enumerate(classes)}}


DATA = {"generator": "tfviz.data.shapes.shapes_dataset (tfviz.vision.shapes_image, one seed per image)",
        "train": f"shapes_dataset({TRAIN_IMAGES}, split='train'): seeds {FIRST_SEED['train']}..",
        "heldout": f"shapes_dataset({HELDOUT_IMAGES}, split='heldout'): seeds {FIRST_SEED['heldout']}..",
        "image": f"{IMAGE_SIZE}x{IMAGE_SIZE} RGB; noise std drawn in [0, {MAX_NOISE}] per image",
        "classes": list(VIT_PRESETS["vit-tiny"].classes)}
