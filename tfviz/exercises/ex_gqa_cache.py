"""Exercise "GQA cache bytes": how much memory a grouped-query model's KV cache takes.

Every layer keeps, for every token, a key and a value for each of its K/V heads, and only
those: with grouped-query attention several query heads read one K/V head.

    bytes = layers × 2 (K and V) × kv_heads × d_head × tokens × bytes per number

Our standard example is SmolLM2-135M's shape: 30 layers, 9 query heads over 3 K/V heads of
d_head = 64, in bfloat16 (16 bits, 2 bytes a number), for a 2,048-token conversation:

    one token:  30 × 2 × 3 × 64 × 2 = 23,040 bytes
    2,048 tokens: 23,040 × 2,048 = 47,185,920 bytes = 45 MiB   (135 MiB with 9 K/V heads)

>>> [f.answer_text for f in SPEC.make(None).answer_fields]
['23040', '47185920']
"""
from __future__ import annotations

import numpy as np

from tfviz.decoding.memory import human_bytes, kv_cache_bytes
from tfviz.exercises.core import ExerciseSpec, Instance, Step, answer_field, draw_clean

ID = "gqa-cache"
TITLE = "The KV cache of a grouped-query model"
SOURCE = dict(layers=30, q_heads=9, kv_heads=3, d_head=64, tokens=2048, bits=16)
DTYPES = {32: "float32", 16: "bfloat16", 8: "int8"}

MESSAGES = {
    "query_heads": ("You counted the query heads. The cache holds keys and values only, one per "
                    "K/V head: under grouped-query attention there are fewer of those."),
    "no_kv_factor": ("That counts one of the two tensors. Each K/V head keeps a key and a value "
                     "for every token: multiply by 2."),
    "no_layers": "That is one layer's cache. Every layer keeps its own: multiply by the layers.",
    "bits": ("That counts bits, not bytes: a byte is 8 bits, so a 16-bit number takes 2 bytes "
             "(a 32-bit one 4, an 8-bit one 1)."),
}


def slipped_bytes(layers: int, q_heads: int, kv_heads: int, d_head: int, tokens: int,
                  bits: int) -> dict[str, int]:
    """What each slip gives for ``tokens`` tokens, by name (whole numbers, as bytes are).

    >>> slipped_bytes(2, 4, 1, 8, 1, 16)["query_heads"]   # 2 · 2 · 4 · 8 · 2
    256
    """
    per = bits // 8
    return {"query_heads": kv_cache_bytes(layers, q_heads, d_head, tokens, bytes_per_value=per),
            "no_kv_factor": kv_cache_bytes(layers, kv_heads, d_head, tokens,
                                           bytes_per_value=per) // 2,
            "no_layers": kv_cache_bytes(1, kv_heads, d_head, tokens, bytes_per_value=per),
            "bits": kv_cache_bytes(layers, kv_heads, d_head, tokens, bytes_per_value=bits)}


def _n(x: int) -> str:
    return f"{x:,}"


def build(layers: int, q_heads: int, kv_heads: int, d_head: int, tokens: int, bits: int,
          seed: int | None) -> Instance:
    per_value = bits // 8
    one = kv_cache_bytes(layers, kv_heads, d_head, 1, bytes_per_value=per_value)
    total = kv_cache_bytes(layers, kv_heads, d_head, tokens, bytes_per_value=per_value)
    mha = kv_cache_bytes(layers, q_heads, d_head, tokens, bytes_per_value=per_value)
    slips_one = slipped_bytes(layers, q_heads, kv_heads, d_head, 1, bits)
    slips_all = slipped_bytes(layers, q_heads, kv_heads, d_head, tokens, bits)
    fields = (
        answer_field("per_token", "bytes one token adds to the cache (all layers)", one,
                     {k: (v, MESSAGES[k]) for k, v in slips_one.items()}, tol=0),
        answer_field("total", f"bytes of the cache for {_n(tokens)} tokens", total,
                     {k: (v, MESSAGES[k]) for k, v in slips_all.items()}, tol=0),
    )
    group = q_heads // kv_heads
    shared = ("one K/V head, shared by all of them (multi-query attention)" if kv_heads == 1
              else f"{kv_heads} K/V heads, each shared by a group of {group}")
    prompt = (
        f"A decoder has {layers} layers. Each layer's attention has {q_heads} query heads and "
        f"{shared}; every head is d_head = {d_head} numbers wide. The cache stores its numbers "
        f"as {DTYPES[bits]} ({bits}-bit numbers).\n\n"
        f"How many bytes does one token add to the KV cache, over all layers? And how many "
        f"bytes does the cache hold after {_n(tokens)} tokens (one conversation, batch 1)? "
        "Give exact whole numbers.")
    per_layer = 2 * kv_heads * d_head
    heads = "its one K/V head" if kv_heads == 1 else f"each of its {kv_heads} K/V heads"
    steps = (
        Step("One layer, one token", r"2 \cdot n_{kv} \cdot d_{head}",
             f"The layer keeps a key and a value for {heads}, "
             f"{d_head} numbers each: 2 × {kv_heads} × {d_head} = {_n(per_layer)} numbers. The "
             f"token's {q_heads} queries are used once, for its own scores, and never stored.",
             {"numbers_per_layer": per_layer}),
        Step("Every layer", r"L \cdot 2 \cdot n_{kv} \cdot d_{head}",
             f"Each of the {layers} layers keeps its own: {layers} × {_n(per_layer)} = "
             f"{_n(layers * per_layer)} numbers per token.",
             {"numbers_per_token": layers * per_layer}),
        Step("Bytes per token", r"L \cdot 2 \cdot n_{kv} \cdot d_{head} \cdot \text{bits} / 8",
             f"{bits} bits are {per_value} byte{'s' if per_value > 1 else ''}: "
             f"{_n(layers * per_layer)} × {per_value} = "
             f"{_n(one)} bytes per token.", {"per_token": one}),
        Step("The whole cache",
             r"L \cdot 2 \cdot n_{kv} \cdot d_{head} \cdot T \cdot \text{bits} / 8",
             f"{_n(one)} × {_n(tokens)} tokens = {_n(total)} bytes, {human_bytes(total)}. With "
             f"one K/V head per query head (plain multi-head attention) it would be "
             f"{q_heads} / {kv_heads} = {group} times as much: {_n(mha)} bytes, "
             f"{human_bytes(mha)}.", {"total": total}),
    )
    data = {"layers": layers, "q_heads": q_heads, "kv_heads": kv_heads, "d_head": d_head,
            "tokens": tokens, "bits": bits}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    q_heads = int(rng.choice([4, 6, 8, 12, 16, 32]))
    kv_heads = int(rng.choice([g for g in range(1, q_heads) if q_heads % g == 0]))
    return build(layers=int(rng.choice([4, 6, 12, 16, 24, 28, 32])), q_heads=q_heads,
                 kv_heads=kv_heads, d_head=int(rng.choice([32, 64, 128])),
                 tokens=int(rng.choice([256, 500, 1000, 1024, 2048, 4096])),
                 bits=int(rng.choice(list(DTYPES))), seed=seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(**SOURCE, seed=None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 18, "Layers × 2 × K/V heads × d_head × bytes, then × tokens.",
                    _make, has_source=False)
