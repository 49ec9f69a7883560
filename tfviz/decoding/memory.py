"""How much memory a KV cache takes: every layer keeps a key and a value per K/V head and token.

    bytes = 2 (K and V) · layers · kv_heads · d_head · tokens · batch · bytes_per_value

Grouped-query attention (GQA) shares each K/V head between several query heads, so only
``kv_heads`` enter the formula: 8 K/V heads instead of 64 cut the cache by 8. Multi-query
attention (MQA) is the extreme, one K/V head.

>>> kv_cache_bytes(n_layers=32, n_kv_heads=32, d_head=128, n_tokens=4096) / 2**30   # Llama-2-7B
2.0
"""
from __future__ import annotations

from typing import NamedTuple


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, n_tokens: int, batch: int = 1,
                   bytes_per_value: int = 2) -> int:
    """Bytes held by the KV cache; ``bytes_per_value`` 2 for fp16/bf16, 4 for fp32, 1 for int8.

    gpt-tiny (3 layers, 4 heads of 16) at its full context of 128 tokens, in fp32:

    >>> kv_cache_bytes(3, 4, 16, 128, bytes_per_value=4)
    196608
    """
    sizes = dict(n_layers=n_layers, n_kv_heads=n_kv_heads, d_head=d_head, n_tokens=n_tokens,
                 batch=batch, bytes_per_value=bytes_per_value)
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0; got {value!r}")
    return 2 * n_layers * n_kv_heads * d_head * n_tokens * batch * bytes_per_value


def config_kv_cache_bytes(cfg, n_tokens: int, batch: int = 1, bytes_per_value: int = 4) -> int:
    """:func:`kv_cache_bytes` for one of our configs (fp32, as our models run), decoder layers.

    >>> from tfviz.config import preset
    >>> config_kv_cache_bytes(preset("gpt-tiny"), 1)                # per token: 2·3·4·16·4
    1536
    """
    return kv_cache_bytes(cfg.n_layers, cfg.kv_heads, cfg.d_head, n_tokens, batch, bytes_per_value)


class PublishedModel(NamedTuple):
    """The sizes a KV cache depends on, as the model's paper gives them."""

    name: str
    n_layers: int
    n_heads: int  # query heads
    n_kv_heads: int
    d_head: int
    context: int  # tokens
    source: str
    window: int | None = None  # sliding-window attention: each token reads at most this many

    @property
    def cached_tokens(self) -> int:
        """Tokens whose keys and values a cache must hold at full context. With a sliding
        window of w, a rolling cache keeps only the last w (older ones are never read again).

        >>> PUBLISHED_MODELS[-1].context, PUBLISHED_MODELS[-1].cached_tokens   # Mistral-7B
        (8192, 4096)
        """
        return self.context if self.window is None else min(self.context, self.window)


# Read-only reference numbers for a calculator: each from the paper named beside it.
PUBLISHED_MODELS: tuple[PublishedModel, ...] = (
    PublishedModel("GPT-2 small", 12, 12, 12, 64, 1024, "Radford et al. 2019"),
    PublishedModel("GPT-3 175B", 96, 96, 96, 128, 2048, "Brown et al. 2020, table 2.1"),
    PublishedModel("Llama-2-7B", 32, 32, 32, 128, 4096, "Touvron et al. 2023"),
    PublishedModel("Llama-2-70B (GQA)", 80, 64, 8, 128, 4096, "Touvron et al. 2023"),
    # Reads 8192 tokens, but attends within a sliding window of 4096 (both in its table 1).
    PublishedModel("Mistral-7B (GQA)", 32, 32, 8, 128, 8192, "Jiang et al. 2023, table 1", 4096),
)


def human_bytes(n: int) -> str:
    """Bytes in binary units, three significant figures.

    >>> human_bytes(2 * 2**30), human_bytes(36 * 2**10), human_bytes(512)
    ('2.00 GiB', '36.0 KiB', '512 bytes')
    """
    if n >= 1000 * 2**40:
        return f"{n / 2**40:,.0f} TiB"
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}" if n / size >= 100 else f"{n / size:#.3g} {unit}"
    return f"{n} bytes"
