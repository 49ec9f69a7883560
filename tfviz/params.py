"""Count a transformer's parameters part by part, under stated conventions.

Published counts differ mostly in what they include (biases, the LayerNorm γ and β,
position tables, a separate output matrix, BERT's segment table and pooler). Each of those
is a keyword here, so one function reproduces several well-known numbers exactly:

>>> count_parameters(GPT2_SMALL, positions="learned", norm_place="pre").total
124439808
>>> count_parameters(BERT_BASE, **BERT_CONVENTIONS).total
109482240

Per self-attention layer with H query heads, Hkv key/value heads of size dh:
    W_q: d×(H·dh)   W_k, W_v: d×(Hkv·dh)   W_o: (H·dh)×d     (+ one bias per output)
A dense feed-forward layer: d×d_ff + d_ff×d (+ d_ff + d biases); a gated one (SwiGLU) has a
third d×d_ff matrix (+ d_ff). A MoE layer: a router d×E (no bias) and E such feed-forward
layers. A LayerNorm: γ and β, 2·d; an RMSNorm γ only, d. QK-norm adds 2·d_head a layer.
Positions: a learned table max_positions×d; Shaw et al.'s relative positions 2·(2k+1)·d_head a
self-attention layer (a key and a value vector per clipped distance, shared by the heads);
T5's bias buckets×H per stack (one table, in its first layer).

Given a tfviz ModelConfig, the conventions default to what the engine builds, so
``count_parameters(cfg).total`` equals the number of weights in ``Transformer(cfg)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tfviz.config import ARCHS, Arch, DerivedSizes, Norm, Positional

NormKind = Literal["layernorm", "rmsnorm", "none"]
#: position schemes a count can assume: the engine's (T5's buckets are "t5_bias")
CountedPositions = Positional


@dataclass(frozen=True)
class ParamSpec(DerivedSizes):
    """Sizes of a model, without any counting convention (those are keywords of the counter)."""

    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int  # blocks of the stack that makes the output (the decoder of an enc-dec)
    vocab_size: int
    arch: Arch = "decoder"
    max_positions: int = 0  # rows of a learned position table
    n_enc_layers: int | None = None  # encoder blocks of an enc-dec (None: same as n_layers)
    head_dim: int | None = None  # None: d_model // n_heads
    n_kv_heads: int | None = None  # None: one per query head
    n_experts: int = 0  # 0: dense feed-forward layers
    name: str = "custom"

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}")
        if min(self.d_model, self.n_heads, self.d_ff, self.n_layers, self.vocab_size) < 1:
            raise ValueError("sizes must be positive")


@dataclass(frozen=True)
class ParamCount:
    """``parts`` maps a part's name to its count, in the order a model uses them."""

    parts: dict[str, int] = field(default_factory=dict)
    conventions: dict[str, object] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def __getitem__(self, part: str) -> int:
        return self.parts[part]


def spec_of(config) -> tuple[ParamSpec, dict]:
    """A ParamSpec plus the engine's conventions when ``config`` is a tfviz ModelConfig."""
    if isinstance(config, ParamSpec):
        return config, {}
    spec = ParamSpec(d_model=config.d_model, n_heads=config.n_heads, d_ff=config.d_ff,
                     n_layers=config.n_layers, vocab_size=config.vocab_size, arch=config.arch,
                     max_positions=config.max_seq_len, n_enc_layers=config.enc_layers,
                     head_dim=config.d_head, n_kv_heads=config.kv_heads,
                     n_experts=config.n_experts, name=config.name)
    engine = dict(bias=config.bias, tied=config.tie_embeddings, final_norm=config.final_norm,
                  norm=config.norm_type, gated=config.gated, qkv_bias=config.has_qkv_bias,
                  qk_norm=config.qk_norm,
                  positions=(config.positional if config.positional in ("learned", "relative", "t5_bias")
                             else "none"),
                  relative_clip=config.rel_clip, relative_buckets=config.rel_buckets,
                  # what a BERT checkpoint adds (tfviz.hf.bert); off for our own models
                  segments=config.n_token_types, embedding_norm=config.embed_norm,
                  mlm_transform=config.mlm_transform, output_bias=config.unembed_bias,
                  head=config.lm_head)
    return spec, engine


def attention_params(s: ParamSpec, bias: bool = True, w_o: bool = True,
                     qkv_bias: bool | None = None) -> int:
    """One attention layer: d=4, one head of 2, with biases -> 3·(4·2+2) + (2·4+4) = 42.
    ``qkv_bias`` (None: as ``bias``) says whether W_q, W_k, W_v have theirs (Qwen2: only they do).

    >>> attention_params(ParamSpec(4, 1, 8, 1, 10, head_dim=2))
    42
    """
    q, kv = s.n_heads * s.d_head, s.kv_heads * s.d_head
    weights = s.d_model * q + 2 * s.d_model * kv + (q * s.d_model if w_o else 0)
    qkv_bias = bias if qkv_bias is None else qkv_bias
    return weights + ((q + 2 * kv) if qkv_bias else 0) + ((s.d_model if w_o else 0) if bias else 0)


def ffn_params(s: ParamSpec, bias: bool = True, gated: bool = False) -> int:
    """A dense feed-forward layer, or a MoE layer's router plus its experts; ``gated`` (SwiGLU)
    adds the gate's d×d_ff (+ d_ff).

    >>> ffn_params(ParamSpec(4, 1, 8, 1, 10)), ffn_params(ParamSpec(4, 1, 8, 1, 10), gated=True)
    (76, 116)
    """
    dense = 2 * s.d_model * s.d_ff + ((s.d_ff + s.d_model) if bias else 0)
    if gated:
        dense += s.d_model * s.d_ff + (s.d_ff if bias else 0)
    if s.n_experts:
        return s.d_model * s.n_experts + s.n_experts * dense
    return dense


def count_parameters(config, *, bias: bool | None = None, norm: NormKind | None = None,
                     attn_output: bool = True, positions: CountedPositions | None = None,
                     tied: bool | None = None, final_norm: bool | None = None,
                     norm_place: Norm = "post", embedding_norm: bool | None = None,
                     segments: int | None = None, pooler: bool = False,
                     relative_buckets: int | None = None, relative_clip: int | None = None,
                     arch: Arch | None = None, mlm_transform: bool | None = None,
                     output_bias: bool | None = None, head: bool | None = None,
                     gated: bool | None = None, qkv_bias: bool | None = None,
                     qk_norm: bool | None = None) -> ParamCount:
    """Parameters of ``config`` (a ParamSpec or a tfviz ModelConfig), by part, with ``total``.

    bias:        linear layers carry biases (default True; a ModelConfig's own ``bias``)
    norm:        "layernorm" (γ, β: 2·d), "rmsnorm" (γ only: d) or "none" (forgot them);
                 default a ModelConfig's own norm_type, else "layernorm"
    attn_output: count W^O (turning it off reproduces a common slip)
    positions:   "learned" (max_positions × d), "relative" (Shaw: 2·(2k+1)·d_head per
                 self-attention layer, k = ``relative_clip``), "t5_bias" (buckets × heads per
                 stack, ``relative_buckets``), or "sinusoidal" / "rope" / "alibi" / "none" (no
                 parameters); the sizes default to a ModelConfig's own, else 16 and 32
    tied:        the output layer reuses the token embedding (else a d×vocab matrix, no bias)
    final_norm:  one norm after each stack (default: True for pre-LN, else False)
    norm_place:  "post" or "pre"; only used for the default of final_norm
    embedding_norm: a norm right after the embeddings (BERT)
    segments:    rows of a segment (token type) table (BERT: 2)
    pooler:      BERT's d×d + d pooler on the first token
    arch:        override the config's encoder / decoder / encoder-decoder
    mlm_transform: BERT's masked-LM transform before the output layer (d×d + d, and a norm)
    output_bias: a bias per vocabulary entry on the logits (BERT's decoder bias)
    head:        False: no output layer at all (a BERT saved as BertModel)
    gated:       a gated feed-forward (SwiGLU, GeGLU): a third d×d_ff matrix
    qkv_bias:    biases on W_q, W_k, W_v (None: as ``bias``); Qwen2 has only these
    qk_norm:     a norm of each head's q and k (Qwen3): 2 norms of d_head a layer
    (embedding_norm, segments, mlm_transform, output_bias, head, gated, qkv_bias and qk_norm
    default to a ModelConfig's own, else to a plain model's: none of them, and a head.)
    """
    spec, engine = spec_of(config)
    embedding_norm = engine.get("embedding_norm", False) if embedding_norm is None else embedding_norm
    segments = engine.get("segments", 0) if segments is None else segments
    mlm_transform = engine.get("mlm_transform", False) if mlm_transform is None else mlm_transform
    output_bias = engine.get("output_bias", False) if output_bias is None else output_bias
    head = engine.get("head", True) if head is None else head
    bias = engine.get("bias", True) if bias is None else bias
    norm = engine.get("norm", "layernorm") if norm is None else norm
    gated = engine.get("gated", False) if gated is None else gated
    qkv_bias = engine.get("qkv_bias", bias) if qkv_bias is None else qkv_bias
    qk_norm = engine.get("qk_norm", False) if qk_norm is None else qk_norm
    relative_buckets = engine.get("relative_buckets", 32) if relative_buckets is None else relative_buckets
    relative_clip = engine.get("relative_clip", 16) if relative_clip is None else relative_clip
    tied = engine.get("tied", True) if tied is None else tied
    if positions is None:
        positions = engine.get("positions", "learned" if spec.max_positions else "none")
    if final_norm is None:
        final_norm = engine.get("final_norm", norm_place == "pre")
    arch = spec.arch if arch is None else arch
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}")
    per_entry = {"layernorm": 2, "rmsnorm": 1, "none": 0}[norm]
    ln = per_entry * spec.d_model
    d, ffn = spec.d_model, ffn_params(spec, bias, gated)
    attn = attention_params(spec, bias, attn_output, qkv_bias)
    attn += 2 * per_entry * spec.d_head if qk_norm else 0
    stacks = {"encoder": [("encoder", spec.n_layers, False)],
              "decoder": [("decoder", spec.n_layers, False)],
              "encoder-decoder": [("encoder", spec.enc_layers, False),
                                  ("decoder", spec.n_layers, True)]}[arch]

    parts: dict[str, int] = {"token embedding": spec.vocab_size * d}
    if positions == "learned":
        parts["position embedding"] = spec.max_positions * d
    if segments:
        parts["segment embedding"] = segments * d
    if embedding_norm:
        parts["embedding norm"] = ln
    for name, layers, cross in stacks:
        parts[f"{name} self-attention"] = layers * attn
        if cross:
            parts[f"{name} cross-attention"] = layers * attn
        parts[f"{name} feed-forward"] = layers * ffn
        parts[f"{name} norms"] = layers * (3 if cross else 2) * ln + (ln if final_norm else 0)
        if positions == "relative":  # a^K and a^V, (2k + 1) x d_head each, in every layer
            parts[f"{name} relative positions"] = layers * 2 * (2 * relative_clip + 1) * spec.d_head
        if positions == "t5_bias":  # one buckets x heads table per stack
            parts[f"{name} relative positions"] = relative_buckets * spec.n_heads
    if pooler:
        parts["pooler"] = d * d + (d if bias else 0)
    if head and mlm_transform:
        parts["MLM transform"] = d * d + (d if bias else 0) + ln
    if head:
        parts["output layer"] = ((0 if tied else d * spec.vocab_size)
                                 + (spec.vocab_size if output_bias else 0))
    conventions = dict(bias=bias, norm=norm, attn_output=attn_output, positions=positions,
                       tied=tied, final_norm=final_norm, embedding_norm=embedding_norm,
                       segments=segments, pooler=pooler, arch=arch, mlm_transform=mlm_transform,
                       output_bias=output_bias, head=head, gated=gated, qkv_bias=qkv_bias,
                       qk_norm=qk_norm)
    return ParamCount(parts, conventions)


#: BERT-base (uncased): 109,482,240 with BERT_CONVENTIONS.
BERT_BASE = ParamSpec(768, 12, 3072, 12, 30522, arch="encoder", max_positions=512, name="BERT-base")
#: BERT-large: 335,141,888 with BERT_CONVENTIONS.
BERT_LARGE = ParamSpec(1024, 16, 4096, 24, 30522, arch="encoder", max_positions=512,
                       name="BERT-large")
BERT_CONVENTIONS = dict(positions="learned", segments=2, embedding_norm=True, pooler=True)
#: GPT-2 small: 124,439,808 (learned positions, tied output, pre-LN with a final LayerNorm).
GPT2_SMALL = ParamSpec(768, 12, 3072, 12, 50257, max_positions=1024, name="GPT-2 small")
#: GPT-2 medium: 354,823,168 under the same conventions as GPT-2 small.
GPT2_MEDIUM = ParamSpec(1024, 16, 4096, 24, 50257, max_positions=1024, name="GPT-2 medium")
#: T5-small: 60,506,624 (no biases, RMSNorm, relative positions, one final norm per stack).
T5_SMALL = ParamSpec(512, 8, 2048, 6, 32128, arch="encoder-decoder", name="T5-small")
T5_CONVENTIONS = dict(bias=False, norm="rmsnorm", positions="t5_bias", final_norm=True)
#: The original base Transformer (shared 37k vocabulary); the paper says about 65 million,
#: a rounded figure, so no exact count is claimed for it.
TRANSFORMER_BASE = ParamSpec(512, 8, 2048, 6, 37000, arch="encoder-decoder",
                             name="Transformer base")
