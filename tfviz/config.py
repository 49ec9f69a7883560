"""One frozen dataclass describes every model tfviz can build.

A config is a value: pages and tests may share it freely because nobody can change it.
A "what if" (scale off, causal on, another top-k) is expressed with :class:`RunOptions`
passed to one forward call, never by editing a shared model or config.

>>> cfg = preset("gpt-tiny")
>>> cfg.d_head, cfg.causal
(16, True)
>>> cfg.replace(n_layers=1).n_layers
1
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, get_args

# Each choice is written once, as a Literal; the tuples that checks and pickers need follow from it.
Arch = Literal["decoder", "encoder", "encoder-decoder"]
# Where position enters: added to the embeddings (sinusoidal, learned) or inside attention:
# "relative" is Shaw et al. (2018): a learned key and value vector per clipped distance j - i,
# added to k_j and v_j; "t5_bias" is T5 (Raffel et al. 2020): a learned number per head and
# log-spaced distance bucket, added to the scores; RoPE turns q and k; ALiBi subtracts a slope.
Positional = Literal["sinusoidal", "learned", "relative", "t5_bias", "rope", "alibi", "none"]
Pattern = Literal["full", "sliding", "dilated", "global", "bigbird", "strided", "block"]
Norm = Literal["post", "pre"]  # where LayerNorm sits: after the residual add, or before the sublayer
# Which norm: LayerNorm (x - mean) / std * gamma + beta, or RMSNorm x / rms * gamma (Llama, Qwen,
# Mistral: no mean is taken away and there is no beta).
NormType = Literal["layernorm", "rmsnorm"]
# "gelu" is the exact x * Phi(x); "gelu_tanh" the tanh approximation GPT-2 was trained with
# (transformers' "gelu_new"): the two differ by up to 5e-4, enough to move a real model's logits.
# "swiglu" and "geglu" are gated: FFN(x) = (act(x W_gate) * (x W_in)) W_out with act = SiLU
# (Llama, Mistral, Qwen) or the exact GELU; a third matrix, W_gate, decides how much of each
# hidden unit passes.
Activation = Literal["relu", "gelu", "gelu_tanh", "swiglu", "geglu"]
GATED_ACTIVATIONS = ("swiglu", "geglu")
# How RoPE pairs a head's dimensions to turn them: "adjacent" turns (x0, x1), (x2, x3), ... (the
# RoFormer paper, our own models); "halves" turns (x_i, x_{i+n/2}), the "rotate_half" layout of
# GPT-NeoX, Llama, Mistral and Qwen. The two are the same maths on permuted dimensions, but a
# checkpoint's q and k weights are laid out for one of them.
RopePairs = Literal["adjacent", "halves"]
RopeScalingKind = Literal["linear", "llama3"]
# How a mixture-of-experts router turns its logits h into the chosen experts and their weights.
# "softmax_topk": p = softmax(h) over every expert, then the k largest p (Switch, Mixtral; with
# moe_renormalize the k weights are divided by their sum). "topk_softmax": the k largest logits,
# then a softmax over those k alone (Granite). Both choose the same experts (softmax keeps the
# order), and in exact arithmetic topk_softmax's weights are softmax_topk's renormalised ones:
# e^h_i / sum over the chosen of e^h_j. Each model is computed in its own order, to its bits.
MoERouter = Literal["softmax_topk", "topk_softmax"]

ARCHS: tuple[Arch, ...] = get_args(Arch)
POSITIONALS: tuple[Positional, ...] = get_args(Positional)
PATTERNS: tuple[Pattern, ...] = get_args(Pattern)
NORMS: tuple[Norm, ...] = get_args(Norm)
ACTIVATIONS: tuple[Activation, ...] = get_args(Activation)
NORM_TYPES: tuple[NormType, ...] = get_args(NormType)
ROPE_PAIRS: tuple[RopePairs, ...] = get_args(RopePairs)
ROPE_SCALING_KINDS: tuple[RopeScalingKind, ...] = get_args(RopeScalingKind)
MOE_ROUTERS: tuple[MoERouter, ...] = get_args(MoERouter)


class DerivedSizes:
    """Sizes that follow from a config's fields; shared by ModelConfig and exercises' ParamSpec."""

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def enc_layers(self) -> int:
        return self.n_layers if self.n_enc_layers is None else self.n_enc_layers


@dataclass(frozen=True)
class RopeScaling:
    """How a model stretches RoPE's frequencies to read longer texts than it was trained on.

    linear (position interpolation): every frequency divided by ``factor``.
    llama3 (Llama 3.1): wavelengths shorter than original_max / high_freq_factor are kept,
    those longer than original_max / low_freq_factor are divided by ``factor``, and the ones
    between are blended smoothly (``tfviz.reference.rope_inv_freq`` writes the formula out).

    >>> RopeScaling("llama3", 8.0).original_max_position_embeddings
    8192
    """

    kind: RopeScalingKind
    factor: float
    # llama3 only; the defaults are Llama 3.1's own.
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self) -> None:
        if self.kind not in ROPE_SCALING_KINDS:
            raise ValueError(f"rope scaling must be one of {ROPE_SCALING_KINDS}, not {self.kind!r}")
        if not self.factor > 0:
            raise ValueError("the rope scaling factor must be positive")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError("llama3 rope scaling needs high_freq_factor > low_freq_factor > 0")


@dataclass(frozen=True)
class ModelConfig(DerivedSizes):
    name: str = "custom"
    # decoder = causal LM (GPT), encoder = bidirectional (BERT), encoder-decoder = seq2seq.
    arch: Arch = "decoder"
    vocab_size: int = 512
    # 64 wide, 4 heads of 16: big enough to learn our corpora, small enough to read every number.
    d_model: int = 64
    n_heads: int = 4
    # Size of one head's q/k/v; None means d_model // n_heads (the usual choice). Exercises
    # set it explicitly, e.g. d_model=6 with one head of size 2 in "flying arrows".
    head_dim: int | None = None
    # None means one key/value head per query head (plain multi-head); 1 is multi-query.
    n_kv_heads: int | None = None
    # Blocks in the stack that makes the logits (the decoder in encoder-decoder models).
    n_layers: int = 2
    # Encoder blocks of an encoder-decoder model; None means the same as n_layers.
    n_enc_layers: int | None = None
    # 4 x d_model, the ratio of the original paper.
    d_ff: int = 256
    max_seq_len: int = 128
    positional: Positional = "sinusoidal"
    # The "n" of PE(k, 2i) = sin(k / n^(2i/d)); 10000 in the original paper. Also RoPE's base
    # (transformers' rope_theta: 10000 for Llama 2, 500000 for Llama 3, 1e6 for Qwen2.5).
    pos_base: float = 10000.0
    # RoPE only. Which dimensions form a turning pair: "adjacent" as in the RoFormer paper (our
    # own models), "halves" as in Llama's rotate_half; see RopePairs. "halves" also computes the
    # frequencies in transformers' float32 order (tfviz.model.positional.rope_inv_freq), so a
    # checkpoint's angles are its own to the bit.
    rope_pairs: RopePairs = "adjacent"
    # RoPE only: how many of a head's dimensions turn (the first ones); the rest pass unturned
    # (GPT-NeoX's partial rotary). None: the whole head.
    rotary_dim: int | None = None
    # RoPE only: stretched frequencies (a RopeScaling); None: plain RoPE.
    rope_scaling: RopeScaling | None = None
    # "relative" only: Shaw et al.'s clipping distance k. Every distance j - i past k reads the
    # vector of k (or of -k), so each layer learns 2k + 1 key vectors and 2k + 1 value vectors
    # (shared by its heads, as in the paper) and any length can be read. 16 covers every distance
    # in our story sentences (at most 21 tokens) but the longest ones.
    rel_clip: int = 16
    # "t5_bias" only: T5's buckets and the distance where the last bucket starts (T5's own 32
    # and 128). Half the buckets (a decoder's: all of one direction's) are single distances,
    # the rest grow logarithmically up to max_distance; an encoder splits them between the two
    # directions. One table of n_buckets x n_heads numbers per stack, learned in its first layer
    # and added by every layer, as T5 does.
    rel_buckets: int = 32
    rel_max_distance: int = 128
    # "post": z = LN(x + SelfAttn(x)) as in the original paper; "pre": z = x + SelfAttn(LN(x)).
    norm: Norm = "post"
    # A LayerNorm after the last block; pre-LN models need it, post-LN ones already end in one.
    final_norm: bool = False
    # LayerNorm, as in the original paper, BERT and GPT-2; "rmsnorm" for Llama-shaped models.
    norm_type: NormType = "layernorm"
    ln_eps: float = 1e-5
    activation: Activation = "relu"
    # Linear layers carry biases (LayerNorm always has gamma and beta, RMSNorm only gamma).
    bias: bool = True
    # Whether the query, key and value projections carry biases; None: as ``bias``. Qwen2 has
    # them and no other bias (bias=False, qkv_bias=True).
    qkv_bias: bool | None = None
    # An RMSNorm over each head's query and key before RoPE (Qwen3), with its own gamma of
    # d_head entries for q and for k; it keeps the scores' size in check.
    qk_norm: bool = False
    # Mixture of experts: 0 means a dense feed-forward block.
    n_experts: int = 0
    moe_top_k: int = 1
    # Divide the chosen gates by their sum so they add up to 1 (top-1 then gives weight 1).
    moe_renormalize: bool = False
    # Softmax over every expert, then top-k (ours, Mixtral), or top-k logits, then a softmax
    # over those k (Granite, whose weights always add up to 1: moe_renormalize must say so).
    moe_router: MoERouter = "softmax_topk"
    # Capacity: after t tokens of a sentence an expert may have served ceil(factor * t * k /
    # n_experts) of them (tfviz/model/moe.py); None means no limit, nothing dropped.
    moe_capacity_factor: float | None = None
    moe_aux_loss_coef: float = 0.01
    # Sparse attention for long sequences (sliding window, Longformer, BigBird, Sparse
    # Transformer; see tfviz/model/masks.py); "full" is plain attention.
    attn_pattern: Pattern = "full"
    # One-sided reach of a window: token i sees j with |i - j| <= window (times dilation).
    window: int = 3
    dilation: int = 2
    n_global: int = 1
    n_random: int = 2
    stride: int = 4
    pattern_seed: int = 0
    # The 1/sqrt(d_k) factor; turning it off is a lesson-6 experiment.
    scale_attn: bool = True
    # Granite's four multipliers (its muP-style training needs them at inference too); the
    # defaults are the plain transformer's, and leave every other model's numbers as they were.
    # The token embeddings are multiplied by embedding_multiplier before the first block.
    embedding_multiplier: float = 1.0
    # What the scores q.k are multiplied by in place of 1/sqrt(d_head); None: 1/sqrt(d_head).
    attention_multiplier: float | None = None
    # Each sublayer's output is multiplied by this before it is added to the residual stream.
    residual_multiplier: float = 1.0
    # False removes the skip path: each sublayer's output replaces its input instead of being
    # added to it (the training lab's residual on/off comparison; every real model has it).
    residual: bool = True
    # False: attention-only blocks, with no feed-forward sublayer (and no LN2): the residual
    # stream is only the embeddings plus what heads wrote, the smallest model that grows an
    # induction head (the training lab's induction task). Every real model has a feed-forward.
    ffn: bool = True
    # The logits are divided by this.
    logits_scaling: float = 1.0
    tie_embeddings: bool = True
    # What BERT adds around the blocks (tfviz.hf.bert); off for our own models. Rows of the
    # token-type ("segment") table, whose row 0 is added to every token (one sentence, segment
    # A); 0 means no table.
    n_token_types: int = 0
    # A LayerNorm on the embedding sum, before the first block (BERT's embedding LayerNorm).
    embed_norm: bool = False
    # The masked-LM head's transform before the unembedding: dense d -> d, the activation, LayerNorm.
    mlm_transform: bool = False
    # A bias per vocabulary entry added to the logits (BERT's decoder bias).
    unembed_bias: bool = False
    # False: the model ends at its last block and computes no logits (a BERT saved as BertModel,
    # without its masked-LM head); its trace has every activation but "logits".
    lm_head: bool = True
    dropout: float = 0.0
    pad_id: int = 0
    init_seed: int = 0

    def __post_init__(self) -> None:
        checks = [
            (self.arch in ARCHS, f"arch must be one of {ARCHS}"),
            (self.positional in POSITIONALS, f"positional must be one of {POSITIONALS}"),
            (self.attn_pattern in PATTERNS, f"attn_pattern must be one of {PATTERNS}"),
            (self.norm in NORMS, "norm must be 'post' or 'pre'"),
            (self.activation in ACTIVATIONS, f"activation must be one of {ACTIVATIONS}"),
            (self.norm_type in NORM_TYPES, f"norm_type must be one of {NORM_TYPES}"),
            (self.rope_pairs in ROPE_PAIRS, f"rope_pairs must be one of {ROPE_PAIRS}"),
            (self.d_model > 0 and self.n_heads > 0, "d_model and n_heads must be positive"),
            (self.head_dim is not None or self.d_model % self.n_heads == 0,
             "d_model must be divisible by n_heads (or set head_dim)"),
            (self.n_heads % self.kv_heads == 0, "n_heads must be a multiple of n_kv_heads"),
            (self.positional != "rope" or self.d_head % 2 == 0, "RoPE needs an even head size"),
            (self.rotary_dim is None or (0 < self.rotary_dim <= self.d_head and self.rotary_dim % 2 == 0),
             "rotary_dim must be even and between 2 and d_head"),
            (self.positional == "rope" or (self.rotary_dim is None and self.rope_scaling is None),
             "rotary_dim and rope_scaling are for RoPE models"),
            (self.rope_scaling is None or isinstance(self.rope_scaling, RopeScaling),
             "rope_scaling must be a RopeScaling"),
            (self.rel_clip >= 1, "rel_clip (Shaw's clipping distance) must be at least 1"),
            # an encoder halves the buckets per direction, and half of those are single distances
            (self.rel_buckets >= 4 and self.rel_buckets % 2 == 0, "rel_buckets must be even and at least 4"),
            (self.rel_max_distance > self.rel_buckets // 2,
             "rel_max_distance must be past the exact buckets (more than rel_buckets / 2)"),
            (self.moe_router in MOE_ROUTERS, f"moe_router must be one of {MOE_ROUTERS}"),
            (self.moe_router != "topk_softmax" or self.moe_renormalize,
             "top-k-then-softmax weights always add up to 1; set moe_renormalize=True to say so"),
            (self.embedding_multiplier > 0 and self.residual_multiplier > 0 and self.logits_scaling > 0
             and (self.attention_multiplier is None or self.attention_multiplier > 0),
             "the multipliers and logits_scaling must be positive"),
            (self.n_layers >= 1 and self.vocab_size >= 1, "need at least one layer and token"),
            (isinstance(self.residual, bool), "residual is on (True) or off (False)"),
            (isinstance(self.ffn, bool) and (self.ffn or not self.is_moe),
             "ffn is on (True) or off (False), and a mixture of experts is a feed-forward"),
            (self.n_experts == 0 or 1 <= self.moe_top_k <= self.n_experts,
             "moe_top_k must be between 1 and n_experts"),
            (self.window >= 0 and self.dilation >= 1 and self.stride >= 1, "bad pattern sizes"),
            (self.arch != "encoder-decoder" or not (self.n_token_types or self.embed_norm),
             "token types and an embedding LayerNorm are for one stack, not an encoder-decoder"),
            (self.lm_head or not (self.mlm_transform or self.unembed_bias),
             "a model without an LM head has no MLM transform or unembedding bias"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"ModelConfig({self.name}): {message}")

    @property
    def causal(self) -> bool:
        """Whether the main stack's self-attention is masked to the past."""
        return self.arch != "encoder"

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def gated(self) -> bool:
        """Whether the feed-forward block is gated (SwiGLU, GeGLU): three matrices, not two."""
        return self.activation in GATED_ACTIVATIONS

    @property
    def has_qkv_bias(self) -> bool:
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def rope_dim(self) -> int:
        """How many dimensions of each head RoPE turns (all of them unless ``rotary_dim``)."""
        return self.d_head if self.rotary_dim is None else self.rotary_dim

    @property
    def score_scale(self) -> float:
        """What each score q . k is multiplied by before the softmax: 1/sqrt(d_head), or
        Granite's ``attention_multiplier`` in its place (the model divides by sqrt(d_head))."""
        if self.attention_multiplier is not None:
            return self.attention_multiplier
        return 1.0 / self.d_head ** 0.5

    def replace(self, **changes) -> "ModelConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        """The config ``to_dict`` gave (a config.json of ours); keys it does not know are left out,
        and a field this version added and the file lacks takes its default."""
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in known}
        if isinstance(fields.get("rope_scaling"), dict):
            fields["rope_scaling"] = RopeScaling(**fields["rope_scaling"])
        return cls(**fields)


@dataclass(frozen=True)
class RunOptions:
    """Per-call "what if" switches. They change one forward pass, never the model.

    scale: override the 1/sqrt(d_k) factor (None keeps the config's choice).
    causal: override causal masking of the main stack's self-attention.
    temperature: softmax(scores / temperature) inside attention.
    ablate_heads: (layer, head) pairs whose output z is set to zero.
    moe_top_k: override how many experts each token is sent to.
    """

    scale: bool | None = None
    causal: bool | None = None
    temperature: float = 1.0
    ablate_heads: frozenset = field(default_factory=frozenset)
    moe_top_k: int | None = None

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError("temperature must be positive")

    def canonical(self, cfg: ModelConfig) -> RunOptions:
        """The same what-if with every switch that only repeats ``cfg``'s own choice left
        unset, so runs that compute the same thing compare (and cache) equal.

        >>> cfg = preset("gpt-tiny")  # scaled, causal, top-1 (no experts)
        >>> RunOptions(scale=True, causal=False).canonical(cfg) == RunOptions(causal=False)
        True
        """
        return dataclasses.replace(
            self, scale=None if self.scale == cfg.scale_attn else self.scale,
            causal=None if self.causal == cfg.causal else self.causal,
            temperature=float(self.temperature), ablate_heads=frozenset(self.ablate_heads),
            moe_top_k=None if self.moe_top_k == cfg.moe_top_k else self.moe_top_k)

    def resolved(self, cfg: ModelConfig) -> RunOptions:
        """The same what-if with every unset switch filled in from ``cfg``: the option where
        one is given, else the config's own choice. The model and the lessons' maths read
        ``scale``, ``causal`` and ``moe_top_k`` from here, so that rule is written once.

        >>> cfg = preset("gpt-tiny")  # scaled, causal, top-1
        >>> o = RunOptions(causal=False).resolved(cfg)
        >>> o.scale, o.causal, o.moe_top_k
        (True, False, 1)
        """
        return dataclasses.replace(
            self, scale=cfg.scale_attn if self.scale is None else self.scale,
            causal=cfg.causal if self.causal is None else self.causal,
            moe_top_k=cfg.moe_top_k if self.moe_top_k is None else self.moe_top_k)


_PRESETS: dict[str, ModelConfig] = {
    # init_seed=1: with seed 0 the coreference job ends up split over two heads (see
    # tfviz/training/recipes.py); with 1 a single head does it, which is what lesson 7 shows.
    "gpt-tiny": ModelConfig(name="gpt-tiny", arch="decoder", n_layers=3, vocab_size=600, init_seed=1),
    "moe-tiny": ModelConfig(name="moe-tiny", arch="decoder", n_layers=2, vocab_size=600,
                            n_experts=4, moe_top_k=1, d_ff=128, moe_capacity_factor=3.0,
                            # 3.0, not 2.0: counted per prefix, 2.0 dropped 19% of slots and
                            # the "it" probe fell to chance (0.56); 3.0 drops 6-8%, probe 1.0.
                            # 0.05, not 0.01: with 0.01 one expert per layer starved (<4% load).
                            moe_aux_loss_coef=0.05),
    "bert-tiny": ModelConfig(name="bert-tiny", arch="encoder", n_layers=2, vocab_size=600,
                             activation="gelu"),
    "reverse-encdec": ModelConfig(name="reverse-encdec", arch="encoder-decoder", n_layers=2,
                                  vocab_size=20, max_seq_len=32, d_ff=128),
}

PRESET_NAMES = tuple(_PRESETS)

# Lesson 18's comparison models: gpt-tiny's shape with fewer K/V heads (GQA: 2 shared by the 4
# query heads; MQA: 1). They are not in PRESET_NAMES, so the sidebar's model list and the tests
# that run every page on every model stay as they were: only /gqa reads them (their manifests).
_KV_PRESETS: dict[str, ModelConfig] = {
    "gqa-tiny": ModelConfig(name="gqa-tiny", arch="decoder", n_layers=3, vocab_size=600, init_seed=1,
                            n_kv_heads=2),
    "mqa-tiny": ModelConfig(name="mqa-tiny", arch="decoder", n_layers=3, vocab_size=600, init_seed=1,
                            n_kv_heads=1),
}
KV_PRESET_NAMES = tuple(_KV_PRESETS)

# Lesson 3's position models: gpt-tiny's shape, corpus and recipe with another way of giving
# positions (gpt-tiny itself adds the sine table). Kept out of PRESET_NAMES like _KV_PRESETS:
# only /embeddings reads them, for the learned table, Shaw's distance vectors, T5's bucket
# biases and RoPE on real trained q and k.
_POS_PRESETS: dict[str, ModelConfig] = {
    f"gpt-tiny-{short}": ModelConfig(name=f"gpt-tiny-{short}", arch="decoder", n_layers=3, vocab_size=600,
                                     init_seed=1, positional=kind)
    for short, kind in (("learned", "learned"), ("rope", "rope"), ("relative", "relative"),
                        ("t5", "t5_bias"))
}
POS_PRESET_NAMES = tuple(_POS_PRESETS)

# The modern decoder block at gpt-tiny's size, trained on the same stories: what a Llama,
# Mistral or Qwen computes, small enough to read every number. RoPE in Llama's rotate_half
# layout, grouped-query attention (2 K/V heads for 4 query heads), RMSNorm before each sublayer
# and after the last block, SwiGLU with d_ff = 176 (about 2/3 of gpt-tiny's 256, so its three
# matrices hold about what gpt-tiny's two do, as Llama sizes it), no biases, its own unembedding.
# Not in PRESET_NAMES, whose tests and generators take the 2017 block for granted (LayerNorm,
# sinusoidal positions, a tied unembedding); the sidebar lists it after them once its trained
# files are in assets/ (tfviz.ui.cache.shipped_model_names), and a live class may choose it.
_MODERN_PRESETS: dict[str, ModelConfig] = {
    "llama-tiny": ModelConfig(name="llama-tiny", arch="decoder", n_layers=3, vocab_size=600,
                              init_seed=1, n_kv_heads=2, positional="rope", rope_pairs="halves",
                              norm="pre", final_norm=True, norm_type="rmsnorm", activation="swiglu",
                              d_ff=176, bias=False, tie_embeddings=False),
    # Mixtral's block at moe-tiny's size, trained on the same stories with moe-tiny's recipe:
    # llama-tiny's block (RoPE in halves, GQA 4/2, RMSNorm, no biases, its own unembedding) with
    # 4 SwiGLU experts in each feed-forward block, each token sent to its 2 best by Mixtral's
    # rule (a softmax over every expert, the top 2, renormalised), and no capacity: Mixtral has
    # none. d_ff = 88 an expert, about 2/3 of moe-tiny's 128, so its three matrices hold about
    # what moe-tiny's two do. Lesson 11 sets its routing beside moe-tiny's (Switch: top-1, the
    # softmax probability as the weight, a capacity). moe_aux_loss_coef 0.05 as moe-tiny's.
    "mixtral-tiny": ModelConfig(name="mixtral-tiny", arch="decoder", n_layers=2, vocab_size=600,
                                n_kv_heads=2, positional="rope", rope_pairs="halves", norm="pre",
                                final_norm=True, norm_type="rmsnorm", activation="swiglu", d_ff=88,
                                bias=False, tie_embeddings=False, n_experts=4, moe_top_k=2,
                                moe_renormalize=True, moe_aux_loss_coef=0.05),
}
MODERN_PRESET_NAMES = tuple(_MODERN_PRESETS)
#: The vision presets' names (``tfviz.model.vit.VIT_PRESETS``, which imports torch), for the
#: names a model folder may not take; tests/test_tour_numbers.py checks they are the same.
VIT_PRESET_NAMES = ("vit-tiny",)


def preset(name: str) -> ModelConfig:
    """The named preset's config (a frozen value, safe to share)."""
    for table in (_PRESETS, _KV_PRESETS, _POS_PRESETS, _MODERN_PRESETS):
        if name in table:
            return table[name]
    raise KeyError(f"unknown preset {name!r}; choose one of "
                   f"{', '.join((*_PRESETS, *_KV_PRESETS, *_POS_PRESETS, *_MODERN_PRESETS))}")
