"""A tiny vision transformer (ViT): an image read as a sequence of patch tokens.

    image (H, W, C) -> patches (N, P·P·C), N = HW/P²     (as tfviz.vision.patchify)
    x_p  = patches E + b_E                   E ∈ R^{(P²·C)×D}             -> hook_embed
    x_0  = [class token; x_p] + E_pos        E_pos ∈ R^{(N+1)×D}          -> hook_pos_embed
    blocks: the text models' Block code, bidirectional (no mask), pre-LN with GELU by default
    logits = head(LN(x_L[class token]))      one score per shape class    -> hook_cls, logits

The config is its own small frozen dataclass, not a ModelConfig: an image model has no
vocabulary, tokenizer or context length, and has an image size, a patch size, channels and
classes. Its blocks are built from the ModelConfig that :attr:`ViTConfig.block_config` gives,
so the attention, LayerNorm and MLP code (and their hooks) are exactly the text models'.

>>> import numpy as np
>>> from tfviz.trace import trace_image
>>> model = VisionTransformer(VIT_PRESETS["vit-tiny"])
>>> tr = trace_image(model, np.zeros((16, 16, 3), np.float32))
>>> tr["pattern", 0].shape, tr.logits.shape      # (heads, 1 + 16 patches, 1 + 16), (classes,)
((4, 17, 17), (3,))
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.attention import AttnContext
from tfviz.model.block import Block, BlockContext
from tfviz.model.hooks import HookPoint, name_hook_points
from tfviz.model.norm import LayerNorm
from tfviz.model.seeded import seeded

CLASS_TOKEN = "[CLS]"


@dataclass(frozen=True)
class ViTConfig:
    name: str = "vit-tiny"
    # 16×16 RGB cut into 4×4 patches: 16 patch tokens of 48 numbers, few enough to show each one.
    image_size: int = 16
    patch: int = 4
    channels: int = 3
    classes: tuple[str, ...] = ("circle", "square", "triangle")  # as tfviz.vision.SHAPES
    # 32 wide, 4 heads of 8: the shapes are simple; this trains in well under a minute.
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    # pre-LN with a final LayerNorm, as in the ViT paper
    norm: str = "pre"
    activation: str = "gelu"
    ln_eps: float = 1e-5
    init_seed: int = 0

    def __post_init__(self) -> None:
        if self.patch < 1 or self.image_size % self.patch:
            raise ValueError(f"ViTConfig({self.name}): a {self.image_size}×{self.image_size} image "
                             f"does not cut into {self.patch}×{self.patch} patches")
        if len(self.classes) < 2:
            raise ValueError(f"ViTConfig({self.name}): a classifier needs at least two classes")
        self.block_config  # the blocks' checks (heads divide d_model, known norm and activation)

    arch = "vit"  # a class constant, not a field: lets code that branches on .arch tell it apart

    @property
    def n_patches(self) -> int:
        """N = HW / P²."""
        return (self.image_size // self.patch) ** 2

    @property
    def patch_dim(self) -> int:
        """P²·C: the numbers in one flattened patch (E's rows)."""
        return self.patch * self.patch * self.channels

    @property
    def seq_len(self) -> int:
        """N + 1: the patch tokens and the class token (E_pos's rows)."""
        return self.n_patches + 1

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def enc_layers(self) -> int:  # Trace.resolve asks for it; a ViT is one encoder stack
        return self.n_layers

    @property
    def block_config(self) -> ModelConfig:
        """The ModelConfig the encoder blocks are built from: bidirectional, no positions of
        its own (E_pos is added before the first block), nothing tied."""
        return ModelConfig(name=self.name, arch="encoder", vocab_size=1, d_model=self.d_model,
                           n_heads=self.n_heads, n_layers=self.n_layers, d_ff=self.d_ff,
                           max_seq_len=self.seq_len, positional="none", norm=self.norm,
                           final_norm=self.norm == "pre", ln_eps=self.ln_eps,
                           activation=self.activation, tie_embeddings=False, init_seed=self.init_seed)

    def replace(self, **changes) -> "ViTConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"arch": self.arch, "classes": list(self.classes)}

    @classmethod
    def from_dict(cls, data: dict) -> "ViTConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "classes" in values:
            values["classes"] = tuple(values["classes"])
        return cls(**values)


# Kept apart from tfviz.config's presets: the sidebar lists text models only.
VIT_PRESETS: dict[str, ViTConfig] = {"vit-tiny": ViTConfig()}


def patches_of(images: Tensor, patch: int) -> Tensor:
    """(B, H, W, C) -> (B, N, P·P·C): tfviz.vision.patchify for a batch of torch images."""
    B, H, W, C = images.shape
    x = images.reshape(B, H // patch, patch, W // patch, patch, C)  # (B, H/P, P, W/P, P, C)
    x = x.permute(0, 1, 3, 2, 4, 5)  # (B, H/P, W/P, P, P, C): patch grid first, row-major
    return x.reshape(B, (H // patch) * (W // patch), patch * patch * C)  # (B, N, P·P·C)


class VisionTransformer(nn.Module):
    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        with seeded(cfg.init_seed):  # the same weights for a seed, whatever else is running
            self._build(cfg)
        name_hook_points(self)

    def _build(self, cfg: ViTConfig) -> None:
        self.cfg = cfg
        d, block_cfg = cfg.d_model, cfg.block_config
        self.hook_patches = HookPoint()  # (B, N, P·P·C): the flattened patches
        self.patch_embed = nn.Linear(cfg.patch_dim, d)  # E (stored as torch's (D, P²·C)) and b_E
        self.hook_embed = HookPoint()  # (B, N, D): patches E + b_E
        self.cls_token = nn.Parameter(torch.randn(d) * d**-0.5)  # (D,): learned, the same for every image
        self.pos_embed = nn.Parameter(torch.randn(cfg.seq_len, d) * d**-0.5)  # E_pos (N+1, D)
        self.hook_pos_embed = HookPoint()  # (B, N+1, D)
        self.blocks = nn.ModuleList(Block(block_cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(d, cfg.ln_eps) if block_cfg.final_norm else None
        self.hook_cls = HookPoint()  # (B, D): the class token's vector after the last block
        self.head = nn.Linear(d, cfg.n_classes)  # (classes, D)

    def embed(self, images: Tensor) -> Tensor:
        """(B, H, W, C) images -> x_0 (B, N+1, D): class token and patch tokens, plus E_pos."""
        B = images.shape[0]
        patches = self.hook_patches(patches_of(images, self.cfg.patch))  # (B, N, P·P·C)
        x = self.hook_embed(self.patch_embed(patches))  # (B, N, D)
        cls = self.cls_token[None, None].expand(B, 1, -1)  # (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, N+1, D): the class token is position 0
        return x + self.hook_pos_embed(self.pos_embed[None].expand(B, -1, -1))  # (B, N+1, D)

    def forward(self, images: Tensor) -> Tensor:
        """images: (B, H, W, C) floats in [0, 1] -> class logits (B, classes)."""
        cfg = self.cfg
        if tuple(images.shape[1:]) != (cfg.image_size, cfg.image_size, cfg.channels):
            raise ValueError(f"{cfg.name} reads {cfg.image_size}×{cfg.image_size}×{cfg.channels} "
                             f"images, got {tuple(images.shape[1:])}")
        x = self.embed(images)  # (B, N+1, D)
        ctx = BlockContext(AttnContext(allowed=None, scale=True))  # every token sees every token
        for block in self.blocks:
            x = block(x, ctx).x  # (B, N+1, D)
        if self.ln_final is not None:
            x = self.ln_final(x)
        return self.head(self.hook_cls(x[:, 0]))  # (B, classes)


def patch_labels(cfg: ViTConfig) -> tuple[str, ...]:
    """The tokens' names, in sequence order: ("[CLS]", "p0", "p1", …)."""
    return (CLASS_TOKEN, *(f"p{i}" for i in range(cfg.n_patches)))

