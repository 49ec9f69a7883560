"""Lesson 16's numbers: greedy generation with and without the KV cache, side by side.

At every step a decoder needs the new token's query and the keys and values of *every* token so
far. Without a cache it runs the whole sequence again (t tokens in, a t × t score matrix per
head); with one it runs only the newest token, appends its key and value to the stored ones and
scores one 1 × t row per head. Both give the same next token (up to float rounding in the last
bits of the logits).

    side_by_side(bundle, prompt_ids, 20)   -> per step: time with / without, cache shape,
                                              the new query's 1 × t row in every layer and head
    cost_over_lengths(model, [16, 32, 64])  -> one step's time at each length, with the
                                              multiply-adds the formula predicts
    step_macs(cfg, t, cached)              -> that formula

Timings are wall-clock measurements on whatever CPU runs this: they move with the machine's
load. Shapes, rows and counts are exact. This module runs the model (the timings *are* runs),
so it lives with the other what-ifs; it only reads the shared model, and ``stretched`` returns
a copy when a longer context is asked for.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from tfviz.decoding.memory import PUBLISHED_MODELS, human_bytes, kv_cache_bytes
from tfviz.model.hooks import recording
from tfviz.model.positional import alibi_bias, sinusoidal_table


@dataclass(frozen=True)
class CacheStep:
    """One generation step: the model reads token ``read`` (position t - 1) and writes ``wrote``.

    Step 0 reads the whole prompt in both runs (the cache starts empty); from step 1 on, the
    cached run reads one token and the uncached run reads all t again.
    """

    index: int
    t: int  # tokens the cache holds after this step (= keys the new query scores)
    read: int  # id of the token whose query makes the row below (the last one read)
    wrote: int  # id chosen greedily with the cache
    wrote_uncached: int  # id chosen greedily by re-reading everything
    ms_cached: float
    ms_uncached: float
    tokens_in_cached: int  # tokens fed to the model this step: the prompt at step 0, then 1
    tokens_in_uncached: int  # t: the whole sequence every time
    cache_shape: tuple[int, int, int, int, int]  # (layers, 2, K/V heads, t, d_head)
    cache_bytes: int  # what the cache's tensors hold, counted from the tensors themselves
    logit_gap: float  # max |cached - uncached| over the vocabulary, last position
    row_gap: float  # max |cached row - uncached pattern's last row| over layers and heads


@dataclass(frozen=True)
class SideBySide:
    prompt_ids: tuple[int, ...]
    cached_ids: tuple[int, ...]  # the new ids, with the cache
    uncached_ids: tuple[int, ...]  # the new ids, re-reading every step
    steps: tuple[CacheStep, ...]
    rows: tuple[np.ndarray, ...]  # per step: (layers, heads, t) attention weights of the new query
    scores: tuple[np.ndarray, ...]  # per step: (layers, heads, t) scaled scores q·k/√d_head
    stop_reason: str  # "eos", "length" or "context"

    @property
    def identical(self) -> bool:
        """The two runs chose the same tokens at every step."""
        return self.cached_ids == self.uncached_ids

    @property
    def first_difference(self) -> int | None:
        """Index of the first new token where the runs differ (or where one stopped); None if
        they are identical."""
        if self.identical:
            return None
        pairs = zip(self.cached_ids, self.uncached_ids)
        return next((i for i, (a, b) in enumerate(pairs) if a != b),
                    min(len(self.cached_ids), len(self.uncached_ids)))


def new_query_rows(cfg, queries: list[torch.Tensor], cache, *, allowed: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The last query's 1 × t row in every layer and head, from the cache's keys.

    ``queries[l]`` is layer l's q of this step, (1, T_new, H, d_head) (rotated for RoPE);
    ``cache.layers[l][0]`` holds the keys of all t tokens, (1, t, K/V heads, d_head). Returns
    (scaled scores, softmax weights), each (layers, heads, t):

        score_j = q · k_j / √d_head (+ ALiBi bias),   weights = softmax(scores)

    Every key is at or before the newest token, so a causal mask removes nothing from this row;
    a sparse pattern (``allowed``, the model's (max_len, max_len) mask) can.
    """
    t = cache.length
    scores, weights = [], []
    for q_all, (k, _) in zip(queries, cache.layers):
        q = q_all[0, -1].double()  # (H, dh): the newest token's query
        k = k[0].double()  # (t, Hkv, dh): every key so far, from the cache
        H, dh = q.shape
        k = k.repeat_interleave(H // k.shape[1], dim=1)  # (t, H, dh): a K/V head per query head
        s = torch.einsum("hd,thd->ht", q, k)  # (H, t): one score per key
        if cfg.scale_attn:
            s = s / math.sqrt(dh)
        if cfg.positional == "alibi":
            s = s + alibi_bias(cfg.n_heads, torch.arange(t - 1, t), torch.arange(t))[:, 0].double()
        if allowed is not None:
            s = s.masked_fill(~torch.from_numpy(np.asarray(allowed[t - 1, :t])), float("-inf"))
        scores.append(s.numpy())
        weights.append(torch.softmax(s, dim=-1).numpy())
    return np.stack(scores), np.stack(weights)


def _query_name(cfg) -> str:
    return "attn.hook_rot_q" if cfg.positional == "rope" else "attn.hook_q"


def _cache_shape_and_bytes(cache) -> tuple[tuple[int, int, int, int, int], int]:
    k = cache.layers[0][0]  # (1, t, Hkv, dh)
    shape = (len(cache.layers), 2, int(k.shape[2]), int(k.shape[1]), int(k.shape[3]))
    held = sum(x.numel() * x.element_size() for layer in cache.layers for x in layer)
    return shape, int(held)


def side_by_side(bundle, prompt_ids, new_tokens: int, repeats: int = 5) -> SideBySide:
    """Greedy generation of up to ``new_tokens`` after ``prompt_ids``, once with the KV cache and
    once re-reading the sequence, step by step, and the two timed in turns so that the
    machine's load falls on both alike. Each run chooses its own tokens; both stop at ``<eos>`` or a full context.
    Each step is timed again in ``repeats`` rounds over the whole generation and its best time
    kept: a server shared by a class stalls now and then, and a stall says nothing about the
    cache.

    Step s of the cached run feeds only the newest token; its query (recorded through the
    model's ``hook_q``) meets the cache's t keys in :func:`new_query_rows`. The uncached run's
    own attention pattern (``hook_pattern``) gives the same row as its last one: ``row_gap``.
    """
    model, cfg = bundle.model, bundle.config
    if cfg.arch != "decoder":
        raise ValueError(f"the KV-cache lesson needs a decoder-only model; {bundle.name} is an "
                         f"{cfg.arch} model")
    prompt = [int(i) for i in prompt_ids]
    if not prompt:
        raise ValueError("the prompt is empty: type at least one word for the model to continue")
    context, eos = cfg.max_seq_len, bundle.tokenizer.eos_id
    if len(prompt) > context:
        raise ValueError(f"the prompt is {len(prompt)} tokens; this model reads at most {context}")
    qname = _query_name(cfg)
    allowed = model.pattern_allowed.numpy() if cfg.attn_pattern != "full" else None
    ids_c, ids_u = list(prompt), list(prompt)
    unread, cache = list(prompt), None
    steps, works, rows, scores, reason = [], [], [], [], "length"
    with torch.no_grad():
        model.step(torch.tensor([prompt]))  # untimed: the first call of a process pays for
        model(torch.tensor([prompt]))  # memory and kernels that the timed ones then reuse
        for s in range(new_tokens):
            if len(ids_c) >= context or len(ids_u) >= context:
                reason = "context"
                break
            work = (torch.tensor([unread]), cache, torch.tensor([ids_u]))  # to time below
            with recording(lambda n: n.endswith(qname)) as seen:
                logits_c, cache = model.step(work[0], work[1])  # (1, len(unread), V)
            with recording(lambda n: n.endswith("attn.hook_pattern")) as full:
                logits_u = model(work[2])  # (1, t, V): everything again
            queries = [seen[f"blocks.{i}.{qname}"] for i in range(cfg.n_layers)]
            sc, w = new_query_rows(cfg, queries, cache, allowed=allowed)
            last_rows = np.stack([full[f"blocks.{i}.attn.hook_pattern"][0, :, -1].double().numpy()
                                  for i in range(cfg.n_layers)])  # (layers, H, t)
            same_length = last_rows.shape == w.shape
            row_gap = float(np.max(np.abs(last_rows - w))) if same_length else float("nan")
            zc, zu = logits_c[0, -1], logits_u[0, -1]  # (V,)
            chosen_c, chosen_u = int(torch.argmax(zc)), int(torch.argmax(zu))
            shape, held = _cache_shape_and_bytes(cache)
            steps.append(dict(index=s, t=cache.length, read=ids_c[-1], wrote=chosen_c,
                              wrote_uncached=chosen_u, tokens_in_cached=len(unread),
                              tokens_in_uncached=len(ids_u), cache_shape=shape, cache_bytes=held,
                              logit_gap=float((zc - zu).abs().max()), row_gap=row_gap))
            works.append(work)
            rows.append(w)
            scores.append(sc)
            ids_c.append(chosen_c)
            ids_u.append(chosen_u)
            unread = [chosen_c]
            if chosen_c == eos or chosen_u == eos:
                reason = "eos"
                break
        # Timing, in rounds over all steps (each round runs every step once, with and without
        # the cache; the cache passed in is never changed): a stall of the shared machine hits
        # one round, and the best of the rounds leaves it out.
        best = [[float("inf"), float("inf")] for _ in works]
        for _ in range(repeats):
            for b, (new, past, whole) in zip(best, works):
                t0 = time.perf_counter()
                model.step(new, past)
                t1 = time.perf_counter()
                model(whole)
                t2 = time.perf_counter()
                b[0], b[1] = min(b[0], (t1 - t0) * 1e3), min(b[1], (t2 - t1) * 1e3)
    steps = [CacheStep(ms_cached=b[0], ms_uncached=b[1], **st) for st, b in zip(steps, best)]
    n = len(prompt)
    return SideBySide(tuple(prompt), tuple(ids_c[n:]), tuple(ids_u[n:]), tuple(steps),
                      tuple(rows), tuple(scores), reason)


# --- cost over lengths -------------------------------------------------------------------------


def step_macs(cfg, t: int, cached: bool) -> dict[str, int]:
    """Multiply-adds of the matrix products in one generation step at length t (the step that
    writes token t + 1): ``{"attention": …, "rest": …}``.

    With the cache the model reads 1 token whose query meets t keys; without it, it reads all t
    tokens and every query meets every key (the causal mask only hides scores after they are
    computed). Per layer, for n tokens read and t keys (d = d_model, H heads of d_head, H_kv
    K/V heads, d_ff, E experts of which k are used, V the vocabulary):

        projections  n·d·(H + 2·H_kv)·d_head  +  n·H·d_head·d      (W_q, W_k, W_v, W_o)
        attention    2 · n·t·H·d_head                              (q·kᵀ and weights·v)
        feed-forward 2 · n·d·d_ff  (dense);  n·d·E + E · 2·n·d·d_ff (our MoE runs every expert)
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
    if cfg.n_experts:
        ffn = n * d * cfg.n_experts + cfg.n_experts * 2 * n * d * cfg.d_ff
    else:
        ffn = 2 * n * d * cfg.d_ff
    return {"attention": cfg.n_layers * attn, "rest": cfg.n_layers * (proj + ffn) + n * d * cfg.vocab_size}


def score_cells(cfg, t: int, cached: bool) -> int:
    """Attention scores computed in one step at length t: 1 × t per head and layer with the
    cache, t × t without.

    >>> from tfviz.config import preset
    >>> score_cells(preset("gpt-tiny"), 10, True), score_cells(preset("gpt-tiny"), 10, False)
    (120, 1200)
    """
    return cfg.n_layers * cfg.n_heads * t * (1 if cached else t)


def can_stretch(cfg) -> bool:
    """Whether :func:`stretched` can give this model a longer context (not learned positions,
    nor a sparse pattern built for its own length)."""
    return cfg.positional != "learned" and cfg.attn_pattern == "full"


def stretched(model, max_len: int):
    """``model`` itself if it reads ``max_len`` tokens, else a copy whose context is ``max_len``
    (a longer sinusoidal table; RoPE, ALiBi and no positions need none). Only for timing: the
    copy was never trained on positions past its model's context. Learned positions cannot be
    stretched (ValueError). The shared model is never changed."""
    cfg = model.cfg
    if max_len <= cfg.max_seq_len:
        return model
    if not can_stretch(cfg):
        raise ValueError(f"{cfg.name} cannot read more than its {cfg.max_seq_len} tokens")
    new = copy.deepcopy(model)
    new.cfg = dataclasses.replace(cfg, max_seq_len=max_len)
    if cfg.positional == "sinusoidal":
        new.register_buffer("pos_table", sinusoidal_table(max_len, cfg.d_model, cfg.pos_base),
                            persistent=False)
    return new


@dataclass(frozen=True)
class LengthCost:
    t: int  # tokens read so far (the keys of this step)
    ms_cached: float  # best of the repeats: one token in, t keys from the cache
    ms_uncached: float  # best of the repeats: all t tokens in again
    macs_cached: int  # step_macs, both parts
    macs_uncached: int
    attn_macs_cached: int  # the attention part alone
    attn_macs_uncached: int
    cells_cached: int  # score_cells
    cells_uncached: int


def fill_ids(prompt_ids, t: int) -> list[int]:
    """``prompt_ids`` repeated (and cut) to exactly t ids: something to time at length t. The
    time of a step does not depend on which tokens they are.

    >>> fill_ids([5, 6, 7], 7)
    [5, 6, 7, 5, 6, 7, 5]
    """
    ids = [int(i) for i in prompt_ids] or [0]
    return (ids * (t // len(ids) + 1))[:t]


def cost_over_lengths(model, prompt_ids, lengths, repeats: int = 5) -> list[LengthCost]:
    """For each length t: the wall time of one step with the cache (its t - 1 earlier keys and
    values already stored, the newest token in) and without (all t tokens in), next to
    :func:`step_macs` and :func:`score_cells`. Every length is timed once per round, for
    ``repeats`` rounds after an untimed one, and keeps its best time: a stall of a shared
    machine hits one round, not the result. ``model`` must read max(lengths) tokens (see
    :func:`stretched`)."""
    cfg = model.cfg
    work = []
    with torch.no_grad():
        for t in lengths:
            ids = torch.tensor([fill_ids(prompt_ids, int(t))])  # (1, t)
            cache = model.step(ids[:, :-1])[1] if t > 1 else None  # the t - 1 earlier tokens
            work.append((ids, cache))
        best = [[float("inf"), float("inf")] for _ in work]
        for round_ in range(repeats + 1):  # round 0 is untimed: first calls pay for memory
            for b, (ids, cache) in zip(best, work):
                t0 = time.perf_counter()
                model.step(ids[:, -1:], cache)  # (1, 1, V): the cache is not grown in place
                t1 = time.perf_counter()
                model(ids)  # (1, t, V)
                t2 = time.perf_counter()
                if round_:
                    b[0], b[1] = min(b[0], t1 - t0), min(b[1], t2 - t1)
    out = []
    for t, (best_c, best_u) in zip(lengths, best):
        mc, mu = step_macs(cfg, int(t), True), step_macs(cfg, int(t), False)
        out.append(LengthCost(int(t), best_c * 1e3, best_u * 1e3, sum(mc.values()),
                              sum(mu.values()), mc["attention"], mu["attention"],
                              score_cells(cfg, int(t), True), score_cells(cfg, int(t), False)))
    return out


def lengths_up_to(top: int) -> list[int]:
    """Six lengths up to ``top``: 1/8, 1/4, 3/8, 1/2, 3/4 and all of it (at least 2 tokens).

    >>> lengths_up_to(128), lengths_up_to(1024)[-3:]
    ([16, 32, 48, 64, 96, 128], [512, 768, 1024])
    """
    return sorted({max(2, top * a // b) for a, b in ((1, 8), (1, 4), (3, 8), (1, 2), (3, 4), (1, 1))})


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
    and at the model's full context, for ``batch`` sequences of ``bytes_per_value`` numbers."""
    rows = []
    for m in PUBLISHED_MODELS:
        per_token = kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_head, 1, batch, bytes_per_value)
        full = kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_head, m.context, batch, bytes_per_value)
        rows.append({"model": m.name, "layers": m.n_layers, "query heads": m.n_heads,
                     "K/V heads": m.n_kv_heads, "d_head": m.d_head, "context": m.context,
                     "per token": human_bytes(per_token), "bytes per token": per_token,
                     "at full context": human_bytes(full), "bytes at full context": full,
                     "source": m.source})
    return rows
