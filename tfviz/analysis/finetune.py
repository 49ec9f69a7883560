"""What fine-tuning trains, counted: everything, a low-rank update, a prefix, or a prompt.

Full fine-tuning trains every parameter (``tfviz.params.count_parameters``).
A low-rank update (LoRA) freezes a weight matrix W (d_in × d_out) and trains two thin ones
beside it, A (d_in × r) and B (r × d_out), so the layer computes x (W + A B) for a row
vector x; the update A B has rank at most r:

    trainable per matrix = d_in·r + r·d_out = r (d_in + d_out)      (2dr for a d × d matrix)

The LoRA paper (Hu et al. 2021) writes the same thing for column vectors, h = W0 x + B A x,
with A of shape r × d_in and B of shape d_out × r. The roles are the same: A is the one that
meets the input first and B starts at zero, so training starts from the pretrained model.
Its A and B are ours transposed, because x A B = (Bᵀ Aᵀ xᵀ)ᵀ. Worked for BERT-base
(d = 768, 12 layers), rank 8 on W_Q and W_V: 8 · (768 + 768) · 2 · 12 = 294,912:

>>> from tfviz.params import BERT_BASE
>>> lora_params(BERT_BASE, rank=8, matrices=("W_Q", "W_V")).total
294912

Prefix tuning trains, in every layer, p key vectors and p value vectors that every query
may attend to (2·p·d per layer); prompt tuning trains only p input vectors (p·d), read
like p extra tokens before the text:

>>> prefix_params(BERT_BASE, 20), prompt_params(BERT_BASE, 20)
(368640, 15360)
"""
from __future__ import annotations

from dataclasses import dataclass

from tfviz.params import ParamSpec, spec_of

MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_in", "W_out")  # what a low-rank update may target


def matrix_shapes(spec: ParamSpec) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each matrix a low-rank update may target, in one attention layer and
    one feed-forward layer (of one expert, for a mixture of experts).

    >>> matrix_shapes(ParamSpec(64, 4, 256, 2, 600))["W_in"]
    (64, 256)
    """
    d, q, kv = spec.d_model, spec.n_heads * spec.d_head, spec.kv_heads * spec.d_head
    return {"W_Q": (d, q), "W_K": (d, kv), "W_V": (d, kv), "W_O": (q, d),
            "W_in": (d, spec.d_ff), "W_out": (spec.d_ff, d)}


def _copies(spec: ParamSpec, matrix: str) -> int:
    """How many such matrices the model holds: one per attention layer (self and cross), or
    one per feed-forward layer and expert."""
    stacks = ([spec.enc_layers, spec.n_layers] if spec.arch == "encoder-decoder" else [spec.n_layers])
    if matrix in ("W_in", "W_out"):
        return sum(stacks) * max(1, spec.n_experts)
    cross = spec.n_layers if spec.arch == "encoder-decoder" else 0
    return sum(stacks) + cross


@dataclass(frozen=True)
class LoraCount:
    rank: int
    per_matrix: dict[str, int]  # trainable numbers in one A and one B of this matrix
    copies: dict[str, int]  # how many matrices of this kind get a pair

    @property
    def parts(self) -> dict[str, int]:
        return {m: self.per_matrix[m] * self.copies[m] for m in self.per_matrix}

    @property
    def total(self) -> int:
        return sum(self.parts.values())


def lora_params(config, rank: int, matrices=("W_Q", "W_V")) -> LoraCount:
    """Trainable numbers of a rank-``rank`` update A·B on every ``matrices`` of ``config``
    (a ParamSpec or a tfviz ModelConfig).

    >>> c = lora_params(ParamSpec(64, 4, 256, 2, 600, arch="encoder"), rank=4)
    >>> c.per_matrix, c.total     # 4 · (64 + 64) per matrix, two kinds in each of 2 layers
    ({'W_Q': 512, 'W_V': 512}, 2048)
    """
    spec, _ = spec_of(config)
    if rank < 1:
        raise ValueError("the rank must be at least 1")
    unknown = set(matrices) - set(MATRICES)
    if unknown:
        raise ValueError(f"unknown matrices {sorted(unknown)}; choose from {MATRICES}")
    shapes = matrix_shapes(spec)
    chosen = [m for m in MATRICES if m in matrices]
    return LoraCount(rank, {m: rank * sum(shapes[m]) for m in chosen},
                     {m: _copies(spec, m) for m in chosen})


def prefix_params(config, prefix: int) -> int:
    """Prefix tuning: ``prefix`` trained key and value vectors (d wide) in every attention
    layer, self and cross. (Its authors train them through a small network that is dropped
    afterwards; what is kept and used is this.)

    >>> prefix_params(ParamSpec(64, 4, 256, 2, 600, arch="encoder"), 5)    # 2 layers · 2 · 5 · 64
    1280
    """
    spec, _ = spec_of(config)
    return _copies(spec, "W_Q") * 2 * prefix * spec.kv_heads * spec.d_head


def prompt_params(config, prompt: int) -> int:
    """Prompt tuning: ``prompt`` trained input vectors, d wide, placed before the text.

    >>> prompt_params(ParamSpec(64, 4, 256, 2, 600), 5)
    320
    """
    spec, _ = spec_of(config)
    return prompt * spec.d_model


def share(part: int, whole: int) -> float:
    """``part`` as a fraction of ``whole``: share(294_912, 109_482_240) ≈ 0.0027 (0.27%)."""
    return part / whole
