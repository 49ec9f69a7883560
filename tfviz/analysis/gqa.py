"""Lesson 18: multi-query and grouped-query attention, measured on our own models.

MHA gives every query head its own key and value head. GQA lets ``group = n_heads / kv_heads``
query heads share one K/V head (query head h reads K/V head h // group); MQA is one K/V head
for all. Only the K/V heads go into the KV cache, so the cache shrinks by ``group`` while the
query heads, and so the number of attention maps, stay the same.

The cache grows with every token kept; the weights do not. ``llama_crossing`` and
``config_crossing`` find the number of cached tokens at which the two weigh the same.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tfviz.analysis.forward import model_param_count
from tfviz.decoding.memory import config_kv_cache_bytes, human_bytes, kv_cache_bytes
from tfviz.params import count_parameters

#: The three variants compared, as bundles: same data, seeds and steps; only kv_heads differs.
VARIANTS = (("MHA", "gpt-tiny"), ("GQA", "gqa-tiny"), ("MQA", "mqa-tiny"))


def kv_head_of(head: int, n_heads: int, kv_heads: int) -> int:
    """The K/V head that query head ``head`` reads (the repeat_interleave order of the model).

    >>> [kv_head_of(h, 4, 2) for h in range(4)]
    [0, 0, 1, 1]
    """
    if not 0 <= head < n_heads or kv_heads < 1 or n_heads % kv_heads:
        raise ValueError(f"head {head} of {n_heads} with {kv_heads} K/V heads is not a valid group")
    return head // (n_heads // kv_heads)


def kv_groups(n_heads: int, kv_heads: int) -> list[list[int]]:
    """The query heads that read each K/V head, K/V head by K/V head.

    >>> kv_groups(9, 3)
    [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """
    return [[h for h in range(n_heads) if kv_head_of(h, n_heads, kv_heads) == g] for g in range(kv_heads)]


def sharing_sentence(n_heads: int, kv_heads: int) -> str:
    """Who reads which K/V head, in words (from a model's facts: n_heads, kv_heads).

    >>> sharing_sentence(4, 2)
    '4 query heads share 2 key/value heads: heads 0–1 read K/V head 0, heads 2–3 read K/V head 1.'
    >>> sharing_sentence(4, 1)
    'All 4 query heads share one key/value head (multi-query attention): heads 0–3 read K/V head 0.'
    >>> sharing_sentence(4, 4)
    'Each of the 4 query heads has a key/value head of its own: head h reads K/V head h.'
    """
    if kv_heads == n_heads:
        return (f"Each of the {n_heads} query heads has a key/value head of its own: head h reads "
                "K/V head h.")
    reads = ", ".join(f"heads {g[0]}–{g[-1]} read K/V head {i}" if len(g) > 1 else f"head {g[0]} reads K/V head {i}"
                      for i, g in enumerate(kv_groups(n_heads, kv_heads)))
    if kv_heads == 1:
        return f"All {n_heads} query heads share one key/value head (multi-query attention): {reads}."
    return f"{n_heads} query heads share {kv_heads} key/value heads: {reads}."


def head_names(cfg) -> list[list[str]]:
    """A label per (layer, query head) naming its K/V head: the titles of the lesson's maps."""
    return [[f"K/V head {kv_head_of(h, cfg.n_heads, cfg.kv_heads)}" for h in range(cfg.n_heads)]
            for _ in range(cfg.n_layers)]


@dataclass(frozen=True)
class Shapes:
    variant: str
    q: tuple[int, int, int]  # (heads, tokens, d_head) of one layer's queries
    kv: tuple[int, int, int]  # (kv_heads, tokens, d_head) of its keys, and of its values
    group: int  # query heads per K/V head
    cache_bytes_per_token: int  # fp32, every layer, K and V


def kv_shapes(variant: str, cfg, n_tokens: int) -> Shapes:
    """Query and K/V shapes of one layer for ``n_tokens`` tokens, and the cache per token.

    >>> from tfviz.config import preset
    >>> kv_shapes("GQA", preset("gqa-tiny"), 5)
    Shapes(variant='GQA', q=(4, 5, 16), kv=(2, 5, 16), group=2, cache_bytes_per_token=768)
    """
    return Shapes(variant, (cfg.n_heads, n_tokens, cfg.d_head), (cfg.kv_heads, n_tokens, cfg.d_head),
                  cfg.n_heads // cfg.kv_heads, config_kv_cache_bytes(cfg, 1))


@dataclass(frozen=True)
class TradeOff:
    variant: str
    model: str
    kv_heads: int
    cache_bytes_per_token: int
    val_loss: float | None  # None: the bundle is not trained (no manifest)
    parameters: int


def trade_off(variant: str, bundle) -> TradeOff:
    """One row of the lesson's table: cache bytes per token (from the config), validation loss
    (the manifest's, measured by ``python -m tfviz.train`` on the same validation sentences for
    all three) and parameters (the sizes of the exported numpy weights added up)."""
    cfg = bundle.config
    loss = bundle.evaluation.val_loss if bundle.trained else None
    return TradeOff(variant, bundle.name, cfg.kv_heads, config_kv_cache_bytes(cfg, 1),
                    None if loss is None else float(loss),
                    model_param_count(bundle.weights()))


def loss_spread(rows: Sequence[TradeOff]) -> float | None:
    """How far apart the variants' validation losses lie (largest minus smallest), or None
    unless every one was measured.

    >>> loss_spread([TradeOff("MHA", "a", 4, 1, 2.5, 9), TradeOff("MQA", "b", 1, 1, 2.25, 8)])
    0.25
    >>> loss_spread([TradeOff("MHA", "a", 4, 1, 2.5, 9), TradeOff("MQA", "b", 1, 1, None, 8)])
    """
    losses = [r.val_loss for r in rows]
    if not losses or None in losses:
        return None
    return max(losses) - min(losses)


# --- the sidebar's own grouped model ------------------------------------------------------------


@dataclass(frozen=True)
class ModelCache:
    """A decoder's KV cache from its config, beside what full multi-head attention would keep
    (a K/V head for every query head). SmolLM2-135M: 30 layers, 9 query heads over 3 K/V heads
    of 64 values, a context of 8,192 tokens:

    >>> c = ModelCache("SmolLM2-135M", 30, 9, 3, 64, 8192)
    >>> c.per_token(4), c.per_token_mha(4), c.per_token(2), c.group
    (46080, 138240, 23040, 3)
    >>> human_bytes(c.per_token(4) * c.context), human_bytes(c.per_token_mha(4) * c.context)
    ('360 MiB', '1.05 GiB')
    """

    model: str
    n_layers: int
    n_heads: int
    kv_heads: int
    d_head: int
    context: int

    @property
    def group(self) -> int:
        return self.n_heads // self.kv_heads

    @property
    def values_per_token(self) -> int:
        """2 (K and V) · layers · K/V heads · d_head numbers a token adds to the cache."""
        return 2 * self.n_layers * self.kv_heads * self.d_head

    def per_token(self, bytes_per_value: int = 4) -> int:
        return kv_cache_bytes(self.n_layers, self.kv_heads, self.d_head, 1, 1, bytes_per_value)

    def per_token_mha(self, bytes_per_value: int = 4) -> int:
        return kv_cache_bytes(self.n_layers, self.n_heads, self.d_head, 1, 1, bytes_per_value)


def model_cache(name: str, cfg) -> ModelCache:
    """The cache of a decoder config (its decoder layers, its context)."""
    return ModelCache(name, cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.max_seq_len)


#: How the cache's values are stored: as tfviz runs every model, and as checkpoints are usually
#: stored and GPUs run them.
STORAGE = ((4, "float32, as tfviz runs it"), (2, "16-bit (bfloat16, float16), as a GPU usually runs it"))


def model_cache_rows(c: ModelCache) -> list[dict]:
    """The lesson's table: per token and at the full context, the model's own cache and full
    multi-head attention's, in 4-byte and 2-byte values."""
    return [{"values stored as": words,
             "per token": human_bytes(c.per_token(b)),
             f"per token with {c.n_heads} K/V heads (MHA)": human_bytes(c.per_token_mha(b)),
             f"full context, {c.context:,} tokens": human_bytes(c.per_token(b) * c.context),
             f"full context with {c.n_heads} K/V heads": human_bytes(c.per_token_mha(b) * c.context)}
            for b, words in STORAGE]


# --- where the cache outgrows the weights --------------------------------------------------------


@dataclass(frozen=True)
class LlamaSizes:
    """A Llama-style decoder as its paper gives it: RMSNorm, a SwiGLU feed-forward block (three
    d × d_ff matrices), no biases, rotary positions (no table), separate output matrix."""

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab_size: int
    context: int
    source: str

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


#: Llama 2 (Touvron et al. 2023): 7B has one K/V head per query head, 70B shares 8 among 64.
LLAMA_2 = (LlamaSizes("Llama-2-7B", 4096, 32, 32, 32, 11008, 32000, 4096, "Touvron et al. 2023"),
           LlamaSizes("Llama-2-70B", 8192, 80, 64, 8, 28672, 32000, 4096, "Touvron et al. 2023"))


def llama_params(s: LlamaSizes) -> int:
    """Parameters of a Llama-style decoder, from its sizes:

        embedding and output: 2 · vocab · d
        per layer: W_Q, W_O (d · d each), W_K, W_V (d · kv_heads · d_head each),
                   SwiGLU 3 · d · d_ff, two RMSNorm γ (2 · d);  plus one final RMSNorm (d)

    >>> f"{llama_params(LLAMA_2[0]):,}"     # Llama-2-7B: the "7B" is 6.74 billion
    '6,738,415,616'
    """
    d, kv = s.d_model, s.n_kv_heads * s.d_head
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * s.d_ff + 2 * d
    return 2 * s.vocab_size * d + s.n_layers * per_layer + d


@dataclass(frozen=True)
class Crossing:
    """Where a model's KV cache grows as large as its weights."""

    model: str
    kv_heads: int
    weight_bytes: int
    cache_bytes_per_token: int  # every layer, K and V, at the same bytes per value as the weights
    context: int  # the most tokens one sequence may hold

    @property
    def tokens(self) -> float:
        """Tokens held in the cache, summed over every sequence of the batch, at which the
        cache's bytes equal the weights'. One long sequence or many short ones: the same sum."""
        return self.weight_bytes / self.cache_bytes_per_token

    @property
    def full_context_bytes(self) -> int:
        """The cache of one sequence filled to the model's whole context."""
        return self.cache_bytes_per_token * self.context

    @property
    def full_sequences(self) -> float:
        """The same point in sequences filled to the model's whole context."""
        return self.tokens / self.context

    def row(self) -> dict:
        """The lesson's table row: sizes in words, the crossing in whole tokens and in
        sequences to one decimal."""
        name = asdict(self)["model"]  # a name; analysis reads no torch model (test_layers)
        return {"model": name, "K/V heads": self.kv_heads,
                "weights": human_bytes(self.weight_bytes),
                "KV cache per token": human_bytes(self.cache_bytes_per_token),
                "cache = weights at (tokens)": round(self.tokens),
                "= sequences at full context": round(self.full_sequences, 1)}


def llama_crossing(s: LlamaSizes, bytes_per_value: int = 2) -> Crossing:
    """The crossing point of a published Llama-style model, weights and cache both in fp16.

    Llama-2-7B: 13.5 GB of weights against 0.5 MiB of cache per token. At its full context of
    4,096 tokens the cache is 2 GiB, so it takes about 25,700 tokens (over six full sequences
    in one batch) before the cache weighs as much as the weights:

    >>> c = llama_crossing(LLAMA_2[0])
    >>> c.weight_bytes, c.cache_bytes_per_token, round(c.tokens), round(c.full_sequences, 1)
    (13476831232, 524288, 25705, 6.3)
    """
    return Crossing(s.name, s.n_kv_heads, llama_params(s) * bytes_per_value,
                    kv_cache_bytes(s.n_layers, s.n_kv_heads, s.d_head, 1, 1, bytes_per_value),
                    s.context)


def config_crossing(cfg) -> Crossing:
    """The crossing point of one of our models, weights and cache both in fp32 (as they run).
    Its parameters are counted from the config's sizes (``count_parameters``), as the engine
    builds them.

    >>> from tfviz.config import preset
    >>> c = config_crossing(preset("gpt-tiny"))
    >>> c.weight_bytes, c.cache_bytes_per_token, c.tokens
    (753408, 1536, 490.5)
    """
    return Crossing(cfg.name, cfg.kv_heads, count_parameters(cfg).total * 4,
                    config_kv_cache_bytes(cfg, 1), cfg.max_seq_len)


# --- decode time, measured (tfviz.experiments.gqa_decode) ----------------------------------------

#: Slowest within this factor of the fastest: "about the same" on a machine others share too.
ABOUT_THE_SAME = 1.15


def decode_reading(timing) -> list[str]:
    """What a measured ``DecodeTiming`` (``tfviz.experiments.gqa_decode.decode_times``) shows, in
    two sentences written from its numbers: whether fewer K/V heads decoded faster after the
    longest prompt, and how much a step grew between the shortest and the longest prompt.

    Read duck-typed (``rows`` with variant, kv_heads, cache_bytes_per_token, ms_per_token;
    ``contexts``), so this stays free of torch. With made-up numbers:

    >>> from types import SimpleNamespace as R
    >>> rows = [R(variant=v, kv_heads=h, cache_bytes_per_token=384 * h, ms_per_token=ms)
    ...         for v, h, ms in (("MHA", 4, (1.00, 1.10)), ("GQA", 2, (1.01, 1.08)), ("MQA", 1, (0.99, 1.07)))]
    >>> decode_reading(R(rows=rows, contexts=(8, 96)))[0]
    "After 96 tokens MQA caches 384 bytes per token against MHA's 1536, yet all three take about the same time per new token: the slowest is 3% slower than the fastest."
    """
    rows = sorted(timing.rows, key=lambda r: -r.kv_heads)  # most K/V heads (MHA) first
    everyone = {2: "both", 3: "all three"}.get(len(rows), f"all {len(rows)}")
    short, long = timing.contexts[0], timing.contexts[-1]
    most, fewest = rows[0], rows[-1]
    fewer = most.cache_bytes_per_token / fewest.cache_bytes_per_token
    at_long = [r.ms_per_token[-1] for r in rows]
    spread = max(at_long) / min(at_long)
    if spread < ABOUT_THE_SAME:
        first = (f"After {long} tokens {fewest.variant} caches {fewest.cache_bytes_per_token} bytes per "
                 f"token against {most.variant}'s {most.cache_bytes_per_token}, yet {everyone} take "
                 f"about the same time per new token: the slowest is {spread - 1:.0%} slower than "
                 "the fastest.")
    elif at_long == sorted(at_long, reverse=True):  # fewer K/V heads, never slower
        first = (f"After {long} tokens fewer K/V heads decoded faster here: {most.variant} took "
                 f"{at_long[0] / at_long[-1]:.2f}× as long per new token as {fewest.variant}, "
                 f"for {fewer:g}× the cache bytes.")
    else:
        fast = min(rows, key=lambda r: r.ms_per_token[-1])
        slow = max(rows, key=lambda r: r.ms_per_token[-1])
        first = (f"After {long} tokens {fast.variant} was fastest and {slow.variant} slowest, "
                 f"{spread - 1:.0%} apart: an order that does not follow the cache bytes "
                 f"({most.variant} keeps {fewer:g}× {fewest.variant}'s).")
    growth = [r.ms_per_token[-1] / r.ms_per_token[0] for r in rows]
    held = f"{long / short:g}× as many tokens"
    if max(growth) < 1.5:
        second = (f"A step after {long} tokens took {min(growth):.2f}–{max(growth):.2f}× as long as "
                  f"one after {short}, though its cache held {held}: most of a step is work that "
                  "does not grow with the cache.")
    else:
        second = (f"A step after {long} tokens took {min(growth):.1f}–{max(growth):.1f}× as long as "
                  f"one after {short}, its cache holding {held}: here the tokens held do show in "
                  "the time.")
    return [first, second]
