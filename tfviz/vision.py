"""Images as sequences of patches, and the tiny shape images the vision lesson uses.

A vision transformer cuts an H×W×C image into P×P patches, N = HW/P² of them, flattens each
to P·P·C numbers and from then on treats them as tokens. ``patchify`` does the cutting (and
``unpatchify`` undoes it); ``shapes_image`` draws one picture of a circle, square or triangle
from a seed, with numpy only, so nothing is downloaded.

>>> image, label = shapes_image(0, kind="square", noise=0.0)
>>> image.shape, patchify(image, 8).shape  # 16 patches of 8·8·3 = 192 numbers
((32, 32, 3), (16, 192))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES = ("circle", "square", "triangle")  # the classes, in label order


def _grid(height: int, width: int, patch: int) -> tuple[int, int]:
    """Patches down and across; a clear error when the image does not cut into whole patches."""
    if patch < 1:
        raise ValueError(f"the patch size must be at least 1, got {patch}")
    if height % patch or width % patch:
        raise ValueError(f"a {height}×{width} image does not cut into {patch}×{patch} patches: "
                         f"height and width must both be multiples of {patch}")
    return height // patch, width // patch


def patchify(image: np.ndarray, patch: int) -> np.ndarray:
    """(H, W, C) image -> (N, P·P·C): patches in row-major order, each flattened row-major.

    Patch n is the block at grid row n // (W/P), column n % (W/P); inside it the numbers run
    over (row, column, channel), channel fastest. A 4×4 one-channel image, P = 2:

    >>> image = np.arange(16).reshape(4, 4, 1)  # rows 0 1 2 3 / 4 5 6 7 / 8 9 10 11 / 12 13 14 15
    >>> patchify(image, 2)  # top-left, top-right, bottom-left, bottom-right
    array([[ 0,  1,  4,  5],
           [ 2,  3,  6,  7],
           [ 8,  9, 12, 13],
           [10, 11, 14, 15]])
    """
    if image.ndim != 3:
        raise ValueError(f"patchify takes an (H, W, C) image, got shape {image.shape}")
    H, W, C = image.shape
    rows, cols = _grid(H, W, patch)
    blocks = image.reshape(rows, patch, cols, patch, C)  # (H/P, P, W/P, P, C)
    blocks = blocks.transpose(0, 2, 1, 3, 4)  # (H/P, W/P, P, P, C): patch grid first
    return blocks.reshape(rows * cols, patch * patch * C)  # (N, P·P·C)


def unpatchify(patches: np.ndarray, image_shape: tuple[int, int, int], patch: int) -> np.ndarray:
    """(N, P·P·C) -> the (H, W, C) image it came from: ``patchify`` undone.

    >>> patches = np.array([[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]])
    >>> unpatchify(patches, (4, 4, 1), 2)[..., 0]
    array([[ 0,  1,  2,  3],
           [ 4,  5,  6,  7],
           [ 8,  9, 10, 11],
           [12, 13, 14, 15]])
    """
    H, W, C = image_shape
    rows, cols = _grid(H, W, patch)
    if patches.shape != (rows * cols, patch * patch * C):
        raise ValueError(f"a {H}×{W}×{C} image has {rows * cols} patches of {patch * patch * C} "
                         f"numbers, got an array of shape {patches.shape}")
    blocks = patches.reshape(rows, cols, patch, patch, C)  # (H/P, W/P, P, P, C)
    blocks = blocks.transpose(0, 2, 1, 3, 4)  # (H/P, P, W/P, P, C): pixel rows back together
    return blocks.reshape(H, W, C)  # (H, W, C)


@dataclass(frozen=True)
class ShapeLabel:
    """What ``shapes_image`` drew, in pixel units: row and column grow down and right.

    circle:   the pixels whose centre lies within ``radius`` of ``centre``.
    square:   sides 2·radius, axis-aligned, centred on ``centre``.
    triangle: apex ``radius`` above the centre, base ``radius`` below it, 2·radius wide.
    """
    kind: str  # one of SHAPES
    centre: tuple[float, float]  # (row, column)
    radius: float
    colour: tuple[float, float, float]  # RGB in [0, 1]

    @property
    def index(self) -> int:
        """The class number a classifier predicts: SHAPES.index(kind)."""
        return SHAPES.index(self.kind)


def shape_mask(label: ShapeLabel, size: int) -> np.ndarray:
    """(size, size) bool: the pixels the shape covers, judged at each pixel's centre.

    >>> shape_mask(ShapeLabel("square", (2.0, 2.0), 1.0, (1, 1, 1)), 4).astype(int)
    array([[0, 0, 0, 0],
           [0, 1, 1, 0],
           [0, 1, 1, 0],
           [0, 0, 0, 0]])
    """
    y = np.arange(size)[:, None] + 0.5  # (size, 1): pixel centres, down
    x = np.arange(size)[None, :] + 0.5  # (1, size): pixel centres, across
    cy, cx = label.centre
    r = label.radius
    if label.kind == "circle":
        return (y - cy) ** 2 + (x - cx) ** 2 <= r**2
    if label.kind == "square":
        return (np.abs(y - cy) <= r) & (np.abs(x - cx) <= r)
    if label.kind == "triangle":
        down = y - (cy - r)  # (size, 1): how far below the apex
        return (down >= 0) & (y <= cy + r) & (np.abs(x - cx) <= down / 2)
    raise ValueError(f"unknown shape {label.kind!r}; choose one of {SHAPES}")


MIN_CHANNEL = 0.35  # a drawn colour's every channel is at least this bright


def radius_range(size: int) -> tuple[float, float]:
    """The radii the generator draws from on a size×size canvas: size/8 to size/4."""
    return size / 8, size / 4


def shapes_image(seed: int, size: int = 32, *, kind: str | None = None,
                 centre: tuple[float, float] | None = None, radius: float | None = None,
                 colour: tuple[float, float, float] | None = None,
                 noise: float = 0.05) -> tuple[np.ndarray, ShapeLabel]:
    """One shape on a black canvas: a (size, size, 3) float32 image in [0, 1] and its label.

    The seed draws whatever is not given: the kind, a radius between size/8 and size/4, a
    centre that keeps the shape inside the canvas, a colour bright enough to see (each channel
    0.35–1), then Gaussian pixel noise of standard deviation ``noise``. Everything is drawn in
    that order every time, so fixing the kind, the colour or the noise leaves the rest as it was
    (the centre is drawn for the radius in use, so it moves with a fixed radius).

    >>> image, label = shapes_image(7, size=8, kind="square", centre=(4, 4), radius=2,
    ...                             colour=(1, 0, 0), noise=0.0)
    >>> image[..., 0].astype(int)  # red channel: the 4×4 square in the middle
    array([[0, 0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0],
           [0, 0, 1, 1, 1, 1, 0, 0],
           [0, 0, 1, 1, 1, 1, 0, 0],
           [0, 0, 1, 1, 1, 1, 0, 0],
           [0, 0, 1, 1, 1, 1, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0]])
    >>> label.kind, label.index
    ('square', 1)
    """
    if size < 4:
        raise ValueError(f"a shapes image needs at least 4×4 pixels, got {size}")
    if noise < 0:
        raise ValueError(f"noise is a standard deviation, so at least 0; got {noise}")
    if radius is not None and not 0 < radius <= size / 2:
        raise ValueError(f"the radius must be above 0 and at most {size / 2}, got {radius}")
    rng = np.random.default_rng(seed)
    drawn_kind = SHAPES[int(rng.integers(len(SHAPES)))]
    drawn_radius = float(rng.uniform(*radius_range(size)))
    r = drawn_radius if radius is None else float(radius)
    drawn_centre = tuple(float(c) for c in rng.uniform(r, size - r, 2))
    drawn_colour = tuple(float(c) for c in rng.uniform(MIN_CHANNEL, 1.0, 3))
    label = ShapeLabel(kind=drawn_kind if kind is None else kind,
                       centre=drawn_centre if centre is None else tuple(map(float, centre)),
                       radius=r,
                       colour=drawn_colour if colour is None else tuple(map(float, colour)))
    mask = shape_mask(label, size)  # (size, size)
    image = mask[..., None] * np.array(label.colour, dtype=np.float32)  # (size, size, 3)
    image = image + rng.normal(0.0, 1.0, image.shape).astype(np.float32) * np.float32(noise)
    return np.clip(image, 0.0, 1.0).astype(np.float32), label  # (size, size, 3)
