"""Images of shapes for the vision transformer: training and held-out sets, split by seed.

Image i of a split is ``tfviz.vision.shapes_image(seed)`` with seed = the split's first seed + i:
the seed draws the shape (circle, square or triangle), its size, position and colour; the
noise level is drawn too, between 0 and ``MAX_NOISE``, from the same seed. The training set uses
seeds from 0 and the held-out set seeds from 1,000,000, so no held-out picture was ever seen in
training. Nothing is downloaded.

>>> images, labels = shapes_dataset(4, split="heldout")
>>> images.shape, images.dtype, labels.tolist()
((4, 16, 16, 3), dtype('float32'), [2, 1, 2, 0])
"""
from __future__ import annotations

import numpy as np

from tfviz.vision import shapes_image

FIRST_SEED = {"train": 0, "heldout": 1_000_000}  # far apart: the two splits never share an image
IMAGE_SIZE = 16
MAX_NOISE = 0.15  # the noise's standard deviation is drawn in [0, MAX_NOISE] per image


def noise_level(seed: int, max_noise: float = MAX_NOISE) -> float:
    """The noise's standard deviation for image ``seed`` (its own draw, apart from the shape's)."""
    return float(np.random.default_rng([seed, 1]).uniform(0.0, max_noise))


def shapes_dataset(n: int, *, split: str = "train", size: int = IMAGE_SIZE,
                   max_noise: float = MAX_NOISE) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images (n, size, size, 3) float32 in [0, 1] and their class numbers (n,)."""
    if split not in FIRST_SEED:
        raise ValueError(f"split must be one of {tuple(FIRST_SEED)}, got {split!r}")
    first = FIRST_SEED[split]
    images = np.empty((n, size, size, 3), dtype=np.float32)
    labels = np.empty(n, dtype=np.int64)
    for i in range(n):
        seed = first + i
        images[i], label = shapes_image(seed, size, noise=noise_level(seed, max_noise))
        labels[i] = label.index
    return images, labels
