"""Lesson 18: multi-query and grouped-query attention, measured on our own models.

MHA gives every query head its own key and value head. GQA lets ``group = n_heads / kv_heads``
query heads share one K/V head (query head h reads K/V head h // group); MQA is one K/V head
for all. Only the K/V heads go into the KV cache, so the cache shrinks by ``group`` while the
query heads, and so the number of attention maps, stay the same.
"""
from __future__ import annotations

from dataclasses import dataclass

from tfviz.analysis.forward import model_param_count
from tfviz.decoding.memory import config_kv_cache_bytes

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
    loss = bundle.manifest.get("eval", {}).get("val_loss") if bundle.trained else None
    return TradeOff(variant, bundle.name, cfg.kv_heads, config_kv_cache_bytes(cfg, 1),
                    None if loss is None else float(loss),
                    model_param_count(bundle.weights()))

