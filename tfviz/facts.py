"""What a model is, in one place: the facts a lesson sentence may state about "the model".

A lesson never types "our tokenizer works on bytes" or "post-LN" for one model: it reads
:class:`ModelFacts`, computed from the model's config, its tokenizer and its manifest, so a
sentence stays true when the learner opens GPT-2, a BERT folder or a lab run instead of
gpt-tiny. ``bundle.facts`` holds them (:mod:`tfviz.bundle`).

>>> import tfviz
>>> f = tfviz.load("gpt-tiny").facts
>>> f.origin, f.norm, f.tokenizer, f.unknown, f.cased
('bundled', 'post', 'byte-level BPE', 'never', False)
>>> f.specials.eos, f.eos_ends, f.timing_repeats
('<eos>', 'sentence', 5)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from tfviz.config import ModelConfig

Origin = Literal["bundled", "fresh", "lab", "folder"]
TokenizerKind = Literal["byte-level BPE", "WordPiece", "SentencePiece BPE", "SentencePiece Unigram",
                        "bytes", "letters", "task symbols", "BPE"]
# What a tokenizer does with a character it has no piece for: "never" meets one (every byte is in
# the vocabulary), "unk-token" writes its unknown token, "skipped" leaves it out and says so.
Unknown = Literal["never", "unk-token", "skipped"]
# What the end-of-sequence token closed in training: one sentence (our story bundles), one task
# row (a lab run, reverse-encdec), or a whole document (GPT-2's <|endoftext|>); None: no such token
# is produced (an encoder).
EosEnds = Literal["sentence", "row", "document"]

#: Parameters past which one timed step takes long enough on a shared 2-core server that a
#: lesson times it once instead of keeping the best of several rounds.
BIG_MODEL = 10_000_000
SMALL_REPEATS = 5  # timed rounds for a model below BIG_MODEL (the best is kept)

ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh approximation)",
                    "swiglu": "SwiGLU", "geglu": "GeGLU"}
POSITION_NAMES = {"sinusoidal": "sinusoidal position vectors added to the embeddings",
                  "learned": "a learned position table added to the embeddings",
                  "relative": "Shaw et al.'s relative position vectors inside attention",
                  "t5_bias": "T5's bucketed relative position bias on the attention scores",
                  "rope": "rotary position embedding (RoPE) inside attention",
                  "alibi": "ALiBi distance penalties on the attention scores",
                  "none": "no position information at all"}
#: The same, in a word or two: for a label, or a sentence that already says where they act.
POSITION_SHORT = {"sinusoidal": "sine table", "learned": "learned table",
                  "relative": "Shaw's relative vectors", "t5_bias": "T5's bucket bias", "rope": "RoPE",
                  "alibi": "ALiBi", "none": "no positions"}


def scaled_tex(scores: str, attention_multiplier: float | None) -> str:
    r"""LaTeX of ``scores`` as a model scales them before the softmax: divided by √d_k, or
    multiplied by a Granite's attention_multiplier (left as they are where that is 1).

    >>> print(scaled_tex("s", None), scaled_tex("s", 0.125), scaled_tex("s", 1.0))
    \frac{s}{\sqrt{d_k}} 0.125\,s s
    """
    if attention_multiplier is None:
        return rf"\frac{{{scores}}}{{\sqrt{{d_k}}}}"
    return scores if attention_multiplier == 1.0 else rf"{attention_multiplier:g}\,{scores}"


def timing_repeats(n_params: int) -> int:
    """Timed rounds of one step: the best of 5 for a small model, whose steps take
    milliseconds and where one stall of a shared machine would spoil a round; 1 past
    :data:`BIG_MODEL` parameters (GPT-2's 124M), whose repeated generations took minutes.

    >>> timing_repeats(188_352), timing_repeats(124_000_000)
    (5, 1)
    """
    return 1 if n_params > BIG_MODEL else SMALL_REPEATS


@dataclass(frozen=True)
class Specials:
    """The real names of a tokenizer's special tokens by role; None where it has none.
    ``ends``: every token that ends a generated text, ``eos`` first (a Llama 3 Instruct's
    generation_config.json names three; ours have one)."""

    bos: str | None = None
    eos: str | None = None
    ends: tuple[str, ...] = ()
    pad: str | None = None
    unk: str | None = None
    mask: str | None = None
    cls: str | None = None
    sep: str | None = None


@dataclass(frozen=True)
class Parts:
    """Which pretraining parts the model's file holds, and which of those the model computes.
    ``set_aside``: tensors the file holds that the loader did not read (BERT's pooler and
    next-sentence head: tfviz computes neither)."""

    segment_table: bool = False
    pooler: bool = False
    next_sentence_head: bool = False
    mlm_head: bool = False
    set_aside: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelFacts:
    name: str
    origin: Origin
    family: str  # "GPT-2", "BERT" for a checkpoint folder; "tfviz" for ours
    arch: str  # decoder, encoder, encoder-decoder
    norm: str  # "pre" or "post": where the norm sits around each sublayer
    norm_kind: str  # "layernorm" or "rmsnorm" (Llama-shaped models)
    final_norm: bool
    activation: str  # the config's name: relu, gelu, gelu_tanh, swiglu, geglu
    positions: str  # the config's positional scheme
    context: int  # tokens the model reads at most
    n_heads: int  # query heads per layer
    d_head: int  # the width d_k of each head's queries and keys
    kv_heads: int  # key/value heads per layer: fewer than n_heads is grouped-query attention
    rope_base: float | None  # RoPE's base (rope_theta) where positions are rotary
    rope_scaling: str | None  # "linear" or "llama3" where RoPE's frequencies are stretched
    # Which dimensions RoPE turns together: "adjacent" (2i, 2i+1), as the RoFormer paper and our
    # gpt-tiny-rope; "halves" (i, i + d/2), Llama's rotate_half. None without RoPE.
    rope_pairs: str | None
    # Shaw et al.'s clipping distance k where positions are "relative": 2k + 1 key and value
    # vectors per layer, shared by its heads. None for every other scheme.
    rel_clip: int | None
    # T5's bias where positions are "t5_bias": how many buckets, where the last one starts, and
    # whether the main stack's split between the two directions (an encoder's) or all look back
    # (a decoder's; an encoder-decoder's encoder reads both ways). None for every other scheme.
    t5_buckets: int | None
    t5_max_distance: int | None
    t5_bidirectional: bool | None
    qk_norm: bool  # a norm on each head's q and k (Qwen3)
    biases: str  # "all" (GPT-2, BERT, ours), "qkv only" (Qwen2) or "none" (Llama)
    tied: bool  # the unembedding is the embedding matrix itself
    # Mixture of experts: experts per layer (0: a dense feed-forward block) and per token; how
    # the router weighs the chosen ones ("softmax_topk": a softmax over every expert, then the
    # top k, as Switch and Mixtral; "topk_softmax": the top k logits, then a softmax over those
    # k, as Granite; None when dense); whether the chosen weights are divided by their sum; and
    # the capacity factor (None: no limit, no token is ever dropped).
    n_experts: int
    moe_top_k: int
    moe_router: str | None
    moe_renormalized: bool
    moe_capacity: float | None
    # Granite's multipliers (tfviz.config.ModelConfig): 1.0 for every other model, and None for
    # the attention's, whose scale is then 1/sqrt(d_head).
    embedding_multiplier: float
    attention_multiplier: float | None
    residual_multiplier: float
    logits_scaling: float
    cased: bool
    tokenizer: TokenizerKind
    unknown: Unknown
    specials: Specials
    # The tokenizer puts its beginning-of-text token (specials.bos) in front of every text, as
    # a Llama's does (the model was trained so: its first position is always that token).
    adds_bos: bool
    eos_ends: EosEnds | None
    n_params: int
    timing_repeats: int
    parts: Parts

    @property
    def pre_ln(self) -> bool:
        return self.norm == "pre"

    @property
    def gated(self) -> bool:
        """A gated feed-forward (SwiGLU, GeGLU): act(x W_gate) ⊙ (x W_in), then W_out."""
        return self.activation in ("swiglu", "geglu")

    @property
    def grouped(self) -> bool:
        """Grouped-query (or multi-query) attention: query heads share key/value heads."""
        return self.kv_heads < self.n_heads

    @property
    def is_moe(self) -> bool:
        """The feed-forward block is a mixture of experts."""
        return self.n_experts > 0

    @property
    def routing(self) -> str | None:
        """How each token's experts and their weights are chosen, in words; None when dense.
        Mixtral: "a softmax over all 8 experts, then the 2 most probable, their weights divided
        by their sum so they add up to 1"; Granite: "the 8 highest of the router's 32 logits,
        then a softmax over those 8"."""
        if not self.is_moe:
            return None
        k, E = self.moe_top_k, self.n_experts
        if self.moe_router == "topk_softmax":
            if k == 1:
                return f"the highest of the router's {E} logits, with weight 1 (a softmax over one)"
            return f"the {k} highest of the router's {E} logits, then a softmax over those {k}"
        best = "the most probable" if k == 1 else f"the {k} most probable"
        if not self.moe_renormalized:
            return f"a softmax over all {E} experts, then {best}, weighted by its softmax probability"
        if k == 1:
            return f"a softmax over all {E} experts, then the most probable, with weight 1 (renormalised)"
        return (f"a softmax over all {E} experts, then {best}, their weights divided by their sum "
                "so they add up to 1")

    @property
    def multiplied(self) -> bool:
        """Granite's multipliers are in use: some are not the plain transformer's."""
        return (self.embedding_multiplier, self.attention_multiplier, self.residual_multiplier,
                self.logits_scaling) != (1.0, None, 1.0, 1.0)

    @property
    def score_divisor(self) -> float:
        """What every score q · k is divided by before the softmax: √d_k, or for a Granite the
        inverse of its ``attention_multiplier`` m, by which it multiplies instead (m = 1/64 on
        heads of d_k = 64 divides by 64, not by √64 = 8; m = 1 leaves the scores as they are).
        The same number as ``tfviz.analysis.attention.score_divisor`` of the model's config."""
        if self.attention_multiplier is None:
            return self.d_head ** 0.5
        return 1.0 / self.attention_multiplier

    @property
    def score_scale(self) -> str:
        """What the model does to each score q · k before the softmax, in words, with its numbers:
        "divides every score by √d_k = √16 = 4", or for a Granite "multiplies every score by its
        attention_multiplier 0.125 instead of dividing by √d_k = √8 ≈ 2.83: a division by 8, d_k
        itself"."""
        dk = self.d_head
        root = f"√d_k = √{dk} {'=' if float(dk ** 0.5).is_integer() else '≈'} {dk ** 0.5:.3g}"
        m = self.attention_multiplier
        if m is None:
            return f"divides every score by {root}"
        if m == 1.0:
            return (f"leaves every score as it is: its attention_multiplier is 1, so it does not "
                    f"divide by {root} at all")
        divisor = 1.0 / m
        which = (", d_k itself" if abs(divisor - dk) < 1e-9 * dk else
                 ", the same as √d_k" if abs(divisor - dk ** 0.5) < 1e-9 * dk else "")
        return (f"multiplies every score by its attention_multiplier {m:g} instead of dividing by "
                f"{root}: a division by {divisor:.4g}{which}")

    def scaled_tex(self, scores: str = r"QK^\top") -> str:
        """LaTeX of ``scores`` as the model scales them before the softmax (:func:`scaled_tex`)."""
        return scaled_tex(scores, self.attention_multiplier)

    @property
    def norm_name(self) -> str:
        return "RMSNorm" if self.norm_kind == "rmsnorm" else "LayerNorm"

    @property
    def activation_name(self) -> str:
        return ACTIVATION_NAMES.get(self.activation, self.activation)

    @property
    def positions_name(self) -> str:
        return POSITION_NAMES.get(self.positions, self.positions)

    @property
    def adds_positions(self) -> bool:
        """Position vectors are added to the token embeddings (sinusoidal, learned); every
        other scheme brings position in inside attention, or not at all."""
        return self.positions in ("sinusoidal", "learned")

    @property
    def relative(self) -> bool:
        """The scores see only how far apart two tokens are (Shaw, T5, RoPE, ALiBi)."""
        return self.positions in ("relative", "t5_bias", "rope", "alibi")

    @property
    def ours(self) -> bool:
        """A model tfviz trained or built (bundled, fresh or a lab run), not a downloaded one."""
        return self.origin != "folder"

    @property
    def size_class(self) -> str:
        """"tiny" (under a million parameters: every number readable), "small" (under
        :data:`BIG_MODEL`), or "large" (GPT-2 small and up)."""
        return "tiny" if self.n_params < 1_000_000 else "small" if self.n_params <= BIG_MODEL else "large"

    @property
    def timing(self) -> str:
        """How a time on the page was taken: "the best of 5 runs" or "a single run"."""
        return (f"the best of {self.timing_repeats} runs" if self.timing_repeats > 1
                else "a single run (the model is too large to time repeatedly here)")

    @property
    def eos_meaning(self) -> str | None:
        """What writing the end token means, in words, or None when the model has none to write."""
        if self.specials.eos is None or self.eos_ends is None:
            return None
        return {"sentence": "the end of the sentence", "row": "the end of the task's answer",
                "document": "the end of a whole document (a boundary between texts)"}[self.eos_ends]


def _tokenizer_kind(tok) -> tuple[TokenizerKind, Unknown]:
    hf = getattr(tok, "hf", None)
    if hf is not None:  # a tokenizers.Tokenizer: ours (served) or a checkpoint's own file
        model = type(hf.model).__name__
        pre, dec = repr(hf.pre_tokenizer), repr(hf.decoder)
        if model == "WordPiece":
            return "WordPiece", "unk-token"
        if model == "Unigram":
            return "SentencePiece Unigram", "unk-token"
        if "ByteLevel" in pre:
            return "byte-level BPE", "never"
        fallback = bool(getattr(hf.model, "byte_fallback", False))
        if "Metaspace" in pre or "Metaspace" in dec or fallback:
            return "SentencePiece BPE", "never" if fallback else "unk-token"
        return "BPE", "unk-token" if getattr(hf.model, "unk_token", None) else "skipped"
    if hasattr(tok, "unknown"):  # the task vocabularies skip what they lack, and name it
        return ("task symbols" if hasattr(tok, "task") else "letters"), "skipped"
    return "bytes", "never"


def _specials(tok) -> Specials:
    def name(role: str) -> str | None:
        i = getattr(tok, f"{role}_id", None)
        return None if i is None else tok.id_to_token(int(i))

    hf = getattr(tok, "hf", None)
    unk = name("unk")
    if unk is None and hf is not None and getattr(hf.model, "unk_token", None):
        unk = hf.model.unk_token
    # BERT's [CLS] ... [SEP]: every text is wrapped in two different tokens (a Llama tokenizer
    # adds its BOS only, so its <s> and </s> are no [CLS] and [SEP])
    try:
        ids = list(tok.encode("a")) if getattr(tok, "add_special_tokens", False) else []
    except (ValueError, KeyError, IndexError):
        ids = []
    bos, eos = getattr(tok, "bos_id", None), getattr(tok, "eos_id", None)
    wraps = len(ids) >= 2 and bos != eos and ids[0] == bos and ids[-1] == eos
    ends = (() if eos is None else  # every end token, eos first (a checkpoint's eos_ids)
            tuple(tok.id_to_token(int(i)) for i in getattr(tok, "eos_ids", None) or (eos,)))
    return Specials(bos=name("bos"), eos=name("eos"), ends=ends, pad=name("pad"), unk=unk, mask=name("mask"),
                    cls=name("cls") or (name("bos") if wraps else None),
                    sep=name("sep") or (name("eos") if wraps else None))


def _adds_bos(tok) -> bool:
    """Whether encoding a plain word puts the tokenizer's beginning-of-text token first."""
    bos = getattr(tok, "bos_id", None)
    if bos is None:
        return False
    try:
        ids = list(tok.encode("the"))
    except (ValueError, KeyError, IndexError):  # a few-symbol vocabulary without "the"
        return False
    return bool(ids) and int(ids[0]) == int(bos)


def _cased(tok) -> bool:
    """Whether capitals change what the model reads. A tokenizer of a few symbols may refuse
    words it lacks (a test's letters-only vocabulary): then its normaliser says, or it is cased."""
    try:
        return list(tok.encode("The Cat")) != list(tok.encode("the cat"))
    except (ValueError, KeyError, IndexError):
        try:
            return tok.normalize("A") != "a"
        except (ValueError, KeyError, IndexError, AttributeError):
            return True


def _origin(manifest: Mapping, trained: bool) -> Origin:
    if "lab" in manifest:
        return "lab"
    if "source" in manifest and "family" in manifest:
        return "folder"
    return "bundled" if trained else "fresh"


def _eos_ends(origin: Origin, cfg: ModelConfig, manifest: Mapping) -> EosEnds | None:
    if cfg.arch == "encoder":
        return None
    if origin == "folder":
        return "document"  # GPT-2's <|endoftext|> sits between whole documents of its web text
    row = str((manifest.get("data") or {}).get("row", ""))
    if origin == "lab" or cfg.arch == "encoder-decoder":
        return "row"
    return "sentence" if "sentence" in row or origin == "fresh" else "row"


def _biases(cfg: ModelConfig) -> str:
    qkv = cfg.bias if cfg.qkv_bias is None else cfg.qkv_bias
    return "all" if cfg.bias else "qkv only" if qkv else "none"


def _parts(cfg: ModelConfig, manifest: Mapping, param_names) -> Parts:
    aside = tuple(sorted(manifest.get("set_aside", ())))
    names = [n.lower() for n in (*param_names, *aside)]

    def has(*words: str) -> bool:
        return any(w in n for n in names for w in words)

    return Parts(segment_table=cfg.n_token_types > 0, pooler=has("pooler"),
                 next_sentence_head=has("seq_relationship", "next_sentence", "nsp"),
                 mlm_head=cfg.lm_head, set_aside=aside)


def model_facts(name: str, cfg: ModelConfig, tokenizer, manifest: Mapping, trained: bool,
                param_counts: Mapping[str, int]) -> ModelFacts:
    """The facts of one model. ``param_counts``: each parameter's name -> its number of
    values (the model's own state, so a loader's conversions are what is counted)."""
    origin = _origin(manifest, trained)
    family = str(manifest.get("family", "tfviz")) if origin == "folder" else "tfviz"
    kind, unknown = _tokenizer_kind(tokenizer)
    cased = _cased(tokenizer)
    n_params = int(sum(param_counts.values()))
    t5 = cfg.positional == "t5_bias"
    return ModelFacts(
        name=name, origin=origin, family=family, arch=cfg.arch, norm=cfg.norm,
        norm_kind=cfg.norm_type, final_norm=cfg.final_norm,
        activation=cfg.activation, positions=cfg.positional, context=cfg.max_seq_len,
        n_heads=cfg.n_heads, d_head=cfg.d_head, kv_heads=cfg.kv_heads,
        rope_base=cfg.pos_base if cfg.positional == "rope" else None,
        rope_scaling=cfg.rope_scaling.kind if cfg.positional == "rope" and cfg.rope_scaling else None,
        rope_pairs=cfg.rope_pairs if cfg.positional == "rope" else None,
        rel_clip=cfg.rel_clip if cfg.positional == "relative" else None,
        t5_buckets=cfg.rel_buckets if t5 else None, t5_max_distance=cfg.rel_max_distance if t5 else None,
        t5_bidirectional=not cfg.causal if t5 else None,
        qk_norm=cfg.qk_norm, biases=_biases(cfg), tied=cfg.tie_embeddings, cased=cased,
        tokenizer=kind, unknown=unknown, specials=_specials(tokenizer), adds_bos=_adds_bos(tokenizer),
        n_experts=cfg.n_experts, moe_top_k=cfg.moe_top_k if cfg.is_moe else 0,
        moe_router=cfg.moe_router if cfg.is_moe else None,
        moe_renormalized=cfg.is_moe and cfg.moe_renormalize,
        moe_capacity=cfg.moe_capacity_factor if cfg.is_moe else None,
        embedding_multiplier=cfg.embedding_multiplier, attention_multiplier=cfg.attention_multiplier,
        residual_multiplier=cfg.residual_multiplier, logits_scaling=cfg.logits_scaling,
        eos_ends=_eos_ends(origin, cfg, manifest), n_params=n_params,
        timing_repeats=timing_repeats(n_params), parts=_parts(cfg, manifest, param_counts))
