"""The numbers of lesson 19 (vision transformer), in numpy from an image and exported weights.

    N = HW / P²                                   patch_grid
    patches (N, P²·C) = patchify(image, P)        tfviz.vision.patchify
    x_p = patches E + b_E          (N, D)         embedding_steps
    x_0 = [class token; x_p] + E_pos   (N+1, D)
    the class token's attention row in each layer and head: pattern[l, h, 0, 1:]   cls_attention
    its blocks beside a text model's, setting by setting         block_comparison

Nothing here runs a model or imports torch: the steps are recomputed from ``VisionBundle.weights()``
and checked against the model's own trace in tests/test_vit.py.

>>> grid = patch_grid(16, 16, 3, 4)
>>> grid.n, grid.patch_dim, grid.rows, grid.cols
(16, 48, 4, 4)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.labels import hex_colour
from tfviz.reference import softmax
from tfviz.vision import ShapeLabel, patchify


@dataclass(frozen=True)
class PatchGrid:
    height: int
    width: int
    channels: int
    patch: int
    fits: bool  # both sides are multiples of the patch size
    rows: int  # patches down: H / P (0 when it does not fit)
    cols: int  # patches across: W / P
    n: int  # N = HW / P²
    patch_dim: int  # P²·C numbers per flattened patch

    def place(self, k: int) -> tuple[int, int]:
        """Patch ``k``'s (row, column) in the grid, numbered row by row.

        >>> patch_grid(16, 24, 3, 8).place(4)  # 3 patches a row: the second row, second column
        (1, 1)
        """
        return divmod(k, self.cols)


def patch_grid(height: int, width: int, channels: int, patch: int) -> PatchGrid:
    """How an H×W×C image cuts into P×P patches: N = HW/P² of P²·C numbers each.

    >>> patch_grid(16, 16, 3, 8).n, patch_grid(16, 16, 3, 8).patch_dim   # 4 patches of 192
    (4, 192)
    >>> patch_grid(16, 16, 3, 3).fits
    False
    """
    fits = patch >= 1 and height % patch == 0 and width % patch == 0
    rows, cols = (height // patch, width // patch) if fits else (0, 0)
    return PatchGrid(height, width, channels, patch, fits, rows, cols, rows * cols,
                     patch * patch * channels)


def patch_size_table(height: int, width: int, channels: int, sizes: Sequence[int]) -> list[dict]:
    """One row per patch size P: the sequence length N, the numbers per patch, and that every
    number of the image lands in exactly one patch (N · P²·C = H·W·C).

    >>> [(r["P"], r["N"], r["P²·C"]) for r in patch_size_table(16, 16, 3, [2, 4, 8])]
    [(2, 64, 12), (4, 16, 48), (8, 4, 192)]
    """
    rows = []
    for p in sizes:
        g = patch_grid(height, width, channels, p)
        rows.append({"P": p, "N": g.n, "P²·C": g.patch_dim, "N·P²·C": g.n * g.patch_dim,
                     "attention scores per head": (g.n + 1) ** 2})
    return rows


@dataclass(frozen=True)
class EmbeddingSteps:
    patches: np.ndarray  # (N, P²·C): the flattened patches
    projected: np.ndarray  # (N, D): patches E + b_E
    tokens: np.ndarray  # (N+1, D): the class token, then the projected patches
    positions: np.ndarray  # (N+1, D): E_pos
    x0: np.ndarray  # (N+1, D): tokens + E_pos, what the first block reads


def patch_table(patches: np.ndarray, patch: int, channels: int, cols: int, index: int) -> dict:
    """Patch ``index`` unfolded, one line per pixel in the order its row of ``patches`` reads
    them: the pixel's (row, column) in the image, its channel values, and which numbers of the
    row they are. ``cols`` is the number of patches across the image.

    >>> rows = np.arange(2 * 12).reshape(2, 12) / 100  # two 2×2 patches of 3 channels, side by side
    >>> t = patch_table(rows, 2, 3, 2, 1)
    >>> t["pixel (row, column)"], t["positions in the row"][:2], t["R"].tolist()
    (['(0, 2)', '(0, 3)', '(1, 2)', '(1, 3)'], ['0–2', '3–5'], [0.12, 0.15, 0.18, 0.21])
    """
    r0, c0 = divmod(index, cols)
    block = patches[index].reshape(patch * patch, channels)  # (P², C): the row, pixel by pixel
    return {"pixel (row, column)": [f"({r0 * patch + i // patch}, {c0 * patch + i % patch})"
                                    for i in range(patch * patch)],
            **{name: np.round(block[:, ch], 4) for ch, name in enumerate("RGB"[:channels])},
            "positions in the row": [f"{channels * i}–{channels * i + channels - 1}"
                                     for i in range(patch * patch)]}


def embedding_steps(image: np.ndarray, weights: Mapping[str, np.ndarray], patch: int) -> EmbeddingSteps:
    """From pixels to the first block's input, in float64 from the exported weights."""
    patches = patchify(np.asarray(image, dtype=np.float64), patch)  # (N, P²·C)
    E, b = np.asarray(weights["E"], np.float64), np.asarray(weights["b_E"], np.float64)
    if patches.shape[1] != E.shape[0]:
        raise ValueError(f"E takes patches of {E.shape[0]} numbers, got {patches.shape[1]}")
    projected = patches @ E + b  # (N, D)
    tokens = np.vstack([np.asarray(weights["class_token"], np.float64)[None], projected])  # (N+1, D)
    positions = np.asarray(weights["E_pos"], np.float64)  # (N+1, D)
    return EmbeddingSteps(patches, projected, tokens, positions, tokens + positions)


def cls_attention(patterns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """From each layer's (heads, N+1, N+1) attention: what the class token (row 0) gives every
    patch, (layers, heads, N), and keeps for itself, (layers, heads). Each row sums to 1."""
    rows = np.stack([np.asarray(p)[:, 0, :] for p in patterns])  # (L, H, N+1)
    return rows[..., 1:], rows[..., 0]


def parameter_counts(weights: Mapping[str, np.ndarray]) -> dict[str, int]:
    """Parameters by part: patch projection, class token, positions, blocks, head."""
    parts = {"patch projection E, b_E": ("E", "b_E"), "class token": ("class_token",),
             "position embeddings E_pos": ("E_pos",), "classifier head": ("W_head", "b_head")}
    out = {part: int(sum(weights[k].size for k in keys)) for part, keys in parts.items()}
    named = {k for keys in parts.values() for k in keys}
    out["encoder blocks and final LayerNorm"] = int(sum(v.size for k, v in weights.items() if k not in named))
    return out


def position_similarity(E_pos: np.ndarray, patch: int, rows: int, cols: int) -> np.ndarray:
    """Cosine similarity of patch ``patch``'s position vector with every patch's, laid out on
    the (rows, cols) patch grid. E_pos row 0 is the class token's, so patch p is row p + 1."""
    pos = np.asarray(E_pos, dtype=np.float64)[1:]  # (N, D): the patches' rows
    unit = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    return (unit @ unit[patch]).reshape(rows, cols)  # (rows, cols)


def label_settings(label: ShapeLabel, step: float = 0.5) -> dict:
    """What the lesson's controls show for a drawn ``label``: the kind, the centre's row and
    column and the radius on the sliders' grid of ``step`` pixels, the colour as "#rrggbb".

    >>> label_settings(ShapeLabel("circle", (3.3, 7.8), 2.2, (1.0, 0.0, 0.2)))
    {'kind': 'circle', 'row': 3.5, 'col': 8.0, 'radius': 2.0, 'colour': '#ff0033'}
    """
    def on_grid(x: float) -> float:
        return round(x / step) * step

    return {"kind": label.kind, "row": on_grid(label.centre[0]), "col": on_grid(label.centre[1]),
            "radius": on_grid(label.radius), "colour": hex_colour(label.colour)}


def prediction(logits: np.ndarray, classes: Sequence[str]) -> tuple[np.ndarray, str]:
    """The class probabilities (softmax of the logits) and the most probable class.

    >>> probs, guess = prediction(np.array([0.0, 2.0, 0.0]), ["circle", "square", "triangle"])
    >>> guess, round(float(probs[1]), 3)
    ('square', 0.787)
    """
    probs = softmax(logits)
    return probs, classes[int(np.argmax(probs))]


def shape_table(cfg) -> list[dict]:
    """Every array from pixels to class scores, with its shape, for a ViTConfig."""
    S, P, C, D, N = cfg.image_size, cfg.patch, cfg.channels, cfg.d_model, cfg.n_patches
    K = cfg.n_classes
    return [
        {"step": "image", "formula": "H × W × C", "shape": f"{S} × {S} × {C}"},
        {"step": "patches", "formula": "N × P²·C, N = HW/P²", "shape": f"{N} × {P * P * C}"},
        {"step": "projection E", "formula": "P²·C × D", "shape": f"{P * P * C} × {D}"},
        {"step": "patch tokens", "formula": "patches · E + b_E", "shape": f"{N} × {D}"},
        {"step": "class token", "formula": "1 × D", "shape": f"1 × {D}"},
        {"step": "positions E_pos", "formula": "(N+1) × D", "shape": f"{N + 1} × {D}"},
        {"step": "x₀ (first block's input)", "formula": "[class; tokens] + E_pos", "shape": f"{N + 1} × {D}"},
        {"step": f"attention per head ({cfg.n_heads} heads, {cfg.n_layers} layers)",
         "formula": "(N+1) × (N+1)", "shape": f"{N + 1} × {N + 1}"},
        {"step": "class token after the last block", "formula": "D", "shape": f"{D}"},
        {"step": "classifier head", "formula": "D × classes", "shape": f"{D} × {K}"},
        {"step": "class scores (logits)", "formula": "classes", "shape": f"{K}"},
    ]


@dataclass(frozen=True)
class BlockRow:
    part: str
    vit: str  # what the vision model's blocks do
    text: str  # what the text model's blocks do

    @property
    def same(self) -> bool:
        return self.vit == self.text


def _block_settings(cfg) -> dict[str, str]:
    """What one block of a ModelConfig does, part by part, in words."""
    return {
        "layout": "self-attention, then a feed-forward network, each added to the residual",
        "attention heads per layer": str(cfg.n_heads),
        "scores": "scaled by 1/√d_head" if cfg.scale_attn else "not scaled",
        "mask": ("causal: each token sees itself and earlier tokens" if cfg.arch == "decoder"
                 else "none: every token sees every token"),
        "LayerNorm": ("pre-LN: before each sublayer, inside the residual branch" if cfg.norm == "pre"
                      else "post-LN: after each sublayer's residual sum"),
        "LayerNorm after the last block": "yes" if cfg.final_norm else "no",
        "feed-forward activation": {"relu": "ReLU", "gelu": "GELU"}[cfg.activation],
        "biases in the linear layers": "yes" if cfg.bias else "no",
        "sizes": f"d = {cfg.d_model}, d_head = {cfg.d_head}, d_ff = {cfg.d_ff}, {cfg.n_layers} layers",
    }


def block_comparison(vit_cfg, text_cfg) -> list[BlockRow]:
    """The blocks of a ViTConfig beside a text ModelConfig's, read from the two configs (the
    blocks of both are built by the same ``Block`` code, from these settings).

    >>> from tfviz.config import preset
    >>> from tfviz.model.vit import ViTConfig
    >>> rows = {r.part: r for r in block_comparison(ViTConfig(), preset("gpt-tiny"))}
    >>> rows["LayerNorm"].vit[:6], rows["LayerNorm"].text[:7], rows["layout"].same
    ('pre-LN', 'post-LN', True)
    >>> rows["feed-forward activation"].vit, rows["feed-forward activation"].text
    ('GELU', 'ReLU')
    """
    vit, text = _block_settings(vit_cfg.block_config), _block_settings(text_cfg)
    return [BlockRow(part, vit[part], text[part]) for part in vit]
