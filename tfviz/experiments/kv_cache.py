"""Lesson 16's numbers: greedy generation with and without the KV cache, side by side.

At every step a decoder needs the new token's query and the keys and values of *every* token so
far. Without a cache it runs the whole sequence again (t tokens in, a t × t score matrix per
head); with one it runs only the newest token, appends its key and value to the stored ones and
scores one 1 × t row per head. Both give the same next token (up to float rounding in the last
bits of the logits).

    side_by_side(bundle, prompt_ids, 20)   -> per step: time with / without, cache shape,
                                              the new query's 1 × t row in every layer and head
    new_query_rows(cfg, queries, cache)    -> that row, from the cache's keys

Timings are wall-clock measurements on whatever CPU runs this: they move with the machine's
load. Shapes, rows and counts are exact. This module runs the model (the timings *are* runs),
so it lives with the other what-ifs; it only reads the shared model. One step timed at growing
lengths is :mod:`tfviz.experiments.kv_cache_lengths`; the formulas for its multiply-adds and for
the cache's memory are :mod:`tfviz.analysis.kv_cache_cost`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from tfviz.model.hooks import recording
from tfviz.model.positional import (alibi_bias, relative_distance, shaw_index,
                                    t5_bucket)
from tfviz.tokenizer.base import end_ids


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

    @property
    def logit_gap(self) -> float:
        """The largest gap between the two runs' logits at any step."""
        return max(s.logit_gap for s in self.steps)

    @property
    def row_gap(self) -> float:
        """The largest gap between the cached query's row and the full run's last row."""
        return max(s.row_gap for s in self.steps)

    @property
    def ms_cached(self) -> float:
        """Milliseconds of every step together, with the cache."""
        return sum(s.ms_cached for s in self.steps)

    @property
    def ms_uncached(self) -> float:
        """Milliseconds of every step together, re-reading everything."""
        return sum(s.ms_uncached for s in self.steps)

    @property
    def slowdown(self) -> float | None:
        """How many times longer re-reading took (None when the cached run took no time)."""
        return self.ms_uncached / self.ms_cached if self.ms_cached > 0 else None

    def table(self, token_strings) -> list[dict]:
        """The lesson's table, a row a step: what it read and wrote (``token_strings`` turns ids
        into the model's token strings), the tokens each run fed, their times to the
        microsecond, the cache's shape and bytes, and the logits' gap to two digits."""
        labels = token_strings(list(self.prompt_ids + self.cached_ids))
        wrote = token_strings([s.wrote for s in self.steps])
        return [{"step": s.index, "reads": labels[s.t - 1], "writes": w, "t": s.t,
                 "tokens fed (cache)": s.tokens_in_cached,
                 "tokens fed (no cache)": s.tokens_in_uncached,
                 "ms (cache)": round(s.ms_cached, 3), "ms (no cache)": round(s.ms_uncached, 3),
                 "cache shape (layers × 2 × K/V heads × t × d_head)": " × ".join(map(str, s.cache_shape)),
                 "cache bytes (fp32)": s.cache_bytes, "max |logit gap|": float(f"{s.logit_gap:.2g}")}
                for s, w in zip(self.steps, wrote)]


def new_query_rows(cfg, queries: list[torch.Tensor], cache, *, allowed: np.ndarray | None = None,
                   model=None) -> tuple[np.ndarray, np.ndarray]:
    """The last query's 1 × t row in every layer and head, from the cache's keys.

    ``queries[l]`` is layer l's q of this step, (1, T_new, H, d_head) (rotated for RoPE);
    ``cache.layers[l][0]`` holds the keys of all t tokens, (1, t, K/V heads, d_head). Returns
    (scaled scores, softmax weights), each (layers, heads, t):

        score_j = q · k_j / √d_head (+ ALiBi bias),   weights = softmax(scores)

(a Granite multiplies q · k_j by its attention_multiplier instead of dividing by √d_head).

    Shaw et al.'s relative positions add the newest token's row of a^K to the keys,
    q · (k_j + a^K_{t−1,j}), and T5 adds its bias b_h(bucket(j − (t − 1))) after the scale;
    both read their tables from ``model`` (a Transformer of ``cfg``), which they need.

    Every key is at or before the newest token, so a causal mask removes nothing from this row;
    a sparse pattern (``allowed``, the model's (max_len, max_len) mask) can.
    """
    t = cache.length
    if cfg.positional in ("relative", "t5_bias") and model is None:
        raise ValueError(f"{cfg.positional!r} positions keep learned tables in the model: pass "
                         "model= to rebuild the newest query's row")
    here, keys = torch.arange(t - 1, t), torch.arange(t)  # the newest position, and every key's
    scores, weights = [], []
    for layer, (q_all, (k, _)) in enumerate(zip(queries, cache.layers)):
        q = q_all[0, -1].double()  # (H, dh): the newest token's query
        k = k[0].double()  # (t, Hkv, dh): every key so far, from the cache
        H, dh = q.shape
        k = k.repeat_interleave(H // k.shape[1], dim=1)  # (t, H, dh): a K/V head per query head
        if cfg.positional == "relative":  # Shaw: the newest row's a^K added to every key
            a_k = model.blocks[layer].attn.rel_k.weight[shaw_index(here, keys, cfg.rel_clip)[0]]  # (t, dh)
            k = k + a_k.detach().double()[:, None, :]  # (t, H, dh)
        s = torch.einsum("hd,thd->ht", q, k)  # (H, t): one score per key
        if cfg.scale_attn:  # ÷ √d_head, or Granite's attention_multiplier in its place
            s = s * cfg.score_scale
        if cfg.positional == "alibi":
            s = s + alibi_bias(cfg.n_heads, here, keys)[:, 0].double()
        if cfg.positional == "t5_bias":  # one table for every layer, in the first one
            buckets = t5_bucket(relative_distance(here, keys), bidirectional=False,
                                n_buckets=cfg.rel_buckets, max_distance=cfg.rel_max_distance)  # (1, t)
            s = s + model.blocks[0].attn.position_bias(buckets)[0, :, 0].detach().double()  # (H, t)
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
    context, ends = cfg.max_seq_len, end_ids(bundle.tokenizer)
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
            sc, w = new_query_rows(cfg, queries, cache, allowed=allowed, model=model)
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
            if chosen_c in ends or chosen_u in ends:  # any end token (Llama 3 Instruct has three)
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
