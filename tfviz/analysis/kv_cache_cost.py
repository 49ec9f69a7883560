"""Lesson 16's formulas: what one generation step computes, and what the KV cache holds.

Arithmetic on a config or on published model sizes, with no model run:

    step_macs(cfg, t, cached)        -> multiply-adds of one step at length t, attention and the rest
    score_cells(cfg, t, cached)      -> attention scores computed in that step (1 × t or t × t)
    cache_memory(layers, …, tokens)  -> the cache's bytes, with the factors of the formula
    published_table()                -> the cache per token and at full context of published models

The timings these formulas stand beside are measured in :mod:`tfviz.experiments.kv_cache_lengths`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tfviz.decoding.memory import PUBLISHED_MODELS, human_bytes, kv_cache_bytes


def step_macs(cfg, t: int, cached: bool) -> dict[str, int]:
    """Multiply-adds of the matrix products in one generation step at length t (the step that
    writes token t + 1): ``{"attention": …, "rest": …}``.

    With the cache the model reads 1 token whose query meets t keys; without it, it reads all t
    tokens and every query meets every key (the causal mask only hides scores after they are
    computed). Per layer, for n tokens read and t keys (d = d_model, H heads of d_head, H_kv
    K/V heads, d_ff, E experts of which k are used, V the vocabulary):

        projections  n·d·(H + 2·H_kv)·d_head  +  n·H·d_head·d      (W_q, W_k, W_v, W_o)
        attention    2 · n·t·H·d_head                              (q·kᵀ and weights·v)
        feed-forward 2 · n·d·d_ff  (dense);  n·d·E + E · 2·n·d·d_ff (our MoE runs every expert);
                     3 in place of 2 for a gated block or expert (SwiGLU: W_gate, W_in, W_out)
    plus the LM head n·d·V. So the attention term is t·H·d_head per layer with the cache
    (grows as t) and t²·H·d_head without (grows as t²); the rest is constant and grows as t.

    >>> from tfviz.config import preset
    >>> step_macs(preset("gpt-tiny"), 10, cached=True)
    {'attention': 3840, 'rest': 185856}
    """
    n = 1 if cached else t
    d, H, Hkv, dh = cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_head
    proj = n * d * (H + 2 * Hkv) * dh + n * H * dh * d
    attn = 2 * n * t * H * dh
    matrices = 3 if cfg.gated else 2
    if cfg.n_experts:
        ffn = n * d * cfg.n_experts + cfg.n_experts * matrices * n * d * cfg.d_ff
    else:
        ffn = matrices * n * d * cfg.d_ff
    return {"attention": cfg.n_layers * attn, "rest": cfg.n_layers * (proj + ffn) + n * d * cfg.vocab_size}


def score_cells(cfg, t: int, cached: bool) -> int:
    """Attention scores computed in one step at length t: 1 × t per head and layer with the
    cache, t × t without.

    >>> from tfviz.config import preset
    >>> score_cells(preset("gpt-tiny"), 10, True), score_cells(preset("gpt-tiny"), 10, False)
    (120, 1200)
    """
    return cfg.n_layers * cfg.n_heads * t * (1 if cached else t)


# --- memory ------------------------------------------------------------------------------------

BYTES_PER_VALUE = {"fp32 (4 bytes)": 4, "fp16 / bf16 (2 bytes)": 2, "int8 (1 byte)": 1}


@dataclass(frozen=True)
class Memory:
    factors: tuple[tuple[str, int], ...]  # ("layers", 32), ("K and V", 2), … in formula order
    total: int  # bytes

    @property
    def product(self) -> str:
        """The formula with its numbers: "2 × 32 × 32 × 128 × 4096 × 1 × 2"."""
        return " × ".join(f"{v:,}" for _, v in self.factors)


def cache_memory(n_layers: int, n_kv_heads: int, d_head: int, n_tokens: int, batch: int = 1,
                 bytes_per_value: int = 2) -> Memory:
    """``kv_cache_bytes`` with the factors it multiplies, for the calculator to show.

    >>> m = cache_memory(32, 32, 128, 4096)     # Llama-2-7B, one 4096-token sequence, fp16
    >>> m.product, human_bytes(m.total)
    ('2 × 32 × 32 × 128 × 4,096 × 1 × 2', '2.00 GiB')
    """
    total = kv_cache_bytes(n_layers, n_kv_heads, d_head, n_tokens, batch, bytes_per_value)
    return Memory((("K and V", 2), ("layers", n_layers), ("K/V heads", n_kv_heads),
                   ("d_head", d_head), ("tokens", n_tokens), ("batch", batch),
                   ("bytes per value", bytes_per_value)), total)


def published_table(batch: int = 1, bytes_per_value: int = 2) -> list[dict]:
    """One row per model of ``PUBLISHED_MODELS`` (sizes from their papers): the cache per token
    and at the model's full context, for ``batch`` sequences of ``bytes_per_value`` numbers.
    A model with a sliding window (Mistral-7B) caches only the window's tokens at full context
    (a rolling cache), and its row says so in "tokens cached".

    >>> row = published_table()[-1]
    >>> row["model"], row["context"], row["tokens cached"], row["at full context"]
    ('Mistral-7B (GQA)', 8192, 4096, '512 MiB')
    """
    rows = []
    for m in PUBLISHED_MODELS:
        per_token = kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_head, 1, batch, bytes_per_value)
        full = kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_head, m.cached_tokens, batch,
                              bytes_per_value)
        rows.append({"model": m.name, "layers": m.n_layers, "query heads": m.n_heads,
                     "K/V heads": m.n_kv_heads, "d_head": m.d_head, "context": m.context,
                     "tokens cached": m.cached_tokens,
                     "per token": human_bytes(per_token), "bytes per token": per_token,
                     "at full context": human_bytes(full), "bytes at full context": full,
                     "source": m.source})
    return rows
