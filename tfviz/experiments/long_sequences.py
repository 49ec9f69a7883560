"""Lesson 17's numbers: what full attention costs as n grows (time and measured memory),
what a sparse pattern lets tokens read over layers (as an encoder and as a decoder), sparse
patterns run on a trained model as a what-if, and Linformer's projection of keys and values
(mean-pooled, untrained) next to the best rank-k map.

Nothing here changes a shared model: :func:`with_pattern` returns a copy.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from tfviz.analysis.coref import SPACE_MARKERS, coref_spans
from tfviz.config import PATTERNS
from tfviz.model.masks import (causal_pattern, pattern_mask, reach_by_layer, reach_matrix,
                               sparse_pattern)
from tfviz.reference import causal_mask
from tfviz.trace import run_with_trace


def with_pattern(model, kind: str, n: int | None = None, **pattern: int):
    """A copy of ``model`` whose self-attention uses ``kind`` (sparse_pattern's keywords).
    The shared model is never touched; the copy is small (the lesson's models are tiny).

    With ``n``, the first n positions use exactly the mask the pattern explorer draws for n
    tokens: BigBird's random keys are drawn over the positions there are, so a pattern drawn
    for the whole context would pick other keys for a short text."""
    cfg = model.cfg
    keys = dict(window=cfg.window, dilation=cfg.dilation, n_global=cfg.n_global,
                n_random=cfg.n_random, stride=cfg.stride, seed=cfg.pattern_seed) | pattern
    new = copy.deepcopy(model)
    new.cfg = dataclasses.replace(cfg, attn_pattern=kind, window=keys["window"],
                                  dilation=keys["dilation"], n_global=keys["n_global"],
                                  n_random=keys["n_random"], stride=keys["stride"],
                                  pattern_seed=keys["seed"])
    if kind != "full":
        allowed = sparse_pattern(kind, cfg.max_seq_len, **keys)
        if n is not None:
            allowed[:n, :n] = sparse_pattern(kind, n, **keys)
        new.register_buffer("pattern_allowed", torch.from_numpy(allowed), persistent=False)
    return new


def next_token_loss(logits: np.ndarray, ids) -> float:
    """Mean cross-entropy of predicting ids[1:] from logits[:-1] (nats); nan for one token."""
    ids = np.asarray(ids)
    if len(ids) < 2:
        return float("nan")
    lg = torch.as_tensor(np.asarray(logits)[:-1], dtype=torch.float64)  # (n-1, V)
    return float(F.cross_entropy(lg, torch.as_tensor(ids[1:])))


_PROBE = re.compile(r"(?:^|\W)refers\s+to\s+the\s*$", re.IGNORECASE)


def asks_for_it(text: str, tokens) -> bool:
    """True if ``text`` ends with "refers to the" (any case) and its ``tokens`` hold an "it"
    with two nouns before it: then the model's next token is its answer to what "it" refers to.

    >>> toks = lambda t: ["␣" + w for w in t.replace(".", " .").split()]
    >>> probe = "the dog didn't cross the road because it was too wide. It refers to the "
    >>> asks_for_it(probe, toks(probe)), asks_for_it("it prefers to the", toks("it prefers to the"))
    (True, False)
    >>> asks_for_it("flying arrows. It refers to the", toks("flying arrows. It refers to the"))
    False
    """
    return bool(_PROBE.search(text)) and coref_spans(tokens) is not None


class WhatIf(NamedTuple):
    loss: float  # next-token loss on the text (nats); nan for one token
    answer: int  # the most probable next token after the last position
    prob: float  # its probability
    patterns: np.ndarray  # (layers, heads, n, n) attention weights


def pattern_whatifs(model, ids, kinds=PATTERNS, **pattern: int) -> dict[str, WhatIf]:
    """Run a copy of ``model`` under each pattern of ``kinds`` on ``ids``: its loss, its
    next-token answer at the last position and its attention maps. ``model`` is not changed."""
    out = {}
    for kind in kinds:
        trace = run_with_trace(with_pattern(model, kind, n=len(ids), **pattern).eval(), list(ids))
        probs = torch.softmax(torch.as_tensor(trace.logits[-1], dtype=torch.float64), -1)
        maps = trace.stack("pattern")  # (layers, heads, n, n)
        out[kind] = WhatIf(next_token_loss(trace.logits, ids), int(probs.argmax()),
                           float(probs.max()), maps)
    return out


def whatif_table(runs: Mapping[str, WhatIf], word: Callable[[int], str],
                 answers: bool) -> dict[str, list]:
    """The what-if's table, one row per pattern: loss, its change from full attention and,
    with ``answers``, the model's next word (``word(id)``, space markers dropped) and its
    probability."""
    full = runs["full"].loss

    def shown(x: float) -> float | None:  # one token: no loss (None, an empty cell)
        return None if math.isnan(x) else round(x, 3) + 0.0  # + 0.0: never "-0.0"

    table = {"pattern": list(runs), "next-token loss (nats)": [shown(r.loss) for r in runs.values()],
             "change vs full": [shown(r.loss - full) for r in runs.values()]}
    if answers:
        table['"it" refers to the …'] = [word(r.answer).lstrip("".join(SPACE_MARKERS))
                                         for r in runs.values()]
        table["probability"] = [round(r.prob, 3) for r in runs.values()]
    return table


class Reach(NamedTuple):
    layers: np.ndarray  # (L,) 1..L
    reached: np.ndarray  # (L,) positions the query has read (itself included), by composing masks
    farthest: np.ndarray  # (L,) distance to the farthest of them
    lw: np.ndarray  # (L,) L·w
    ldw: np.ndarray  # (L,) L·d·w


def reach_table(kind: str, n: int, n_layers: int, *, query: int | None = None,
                causal: bool = True, **pattern: int) -> Reach:
    """What token ``query`` (default: the last) of n has read after 1..n_layers layers, by
    composing masks: how many positions, and how far away the farthest is, next to the rules
    of thumb L·w and L·d·w (which are distances, not counts).

    >>> r = reach_table("dilated", 32, 3, window=2, dilation=2)
    >>> r.reached.tolist(), r.farthest.tolist(), r.ldw.tolist()  # 12 back, 7 positions read
    ([3, 5, 7], [4, 8, 12], [4, 8, 12])
    """
    query = n - 1 if query is None else query
    rows = reach_by_layer(kind, n, n_layers, query=query, causal=causal, **pattern)  # (L, n)
    away = np.abs(np.arange(n) - query)  # (n,)
    farthest = np.array([away[row].max() for row in rows], dtype=int)
    layers = np.arange(1, n_layers + 1)
    w, d = pattern.get("window", 3), pattern.get("dilation", 2)  # sparse_pattern's defaults
    return Reach(layers, rows.sum(1), farthest, layers * w, layers * d * w)


class Pairs(NamedTuple):
    layers: np.ndarray  # (L,) 1..L
    encoder: np.ndarray  # (L,) (query, key) pairs joined after l layers, read both ways
    decoder: np.ndarray  # (L,) the same, read causally
    all_encoder: int  # n²: every pair
    all_decoder: int  # n(n+1)/2: every pair with key <= query


def pairs_table(kind: str, n: int, n_layers: int, **pattern: int) -> Pairs:
    """For every query at once: how many (query, key) pairs are joined, directly or through
    other positions, after 1..n_layers layers, as an encoder and as a decoder read the pattern.

    >>> p = pairs_table("global", 32, 3, window=2)  # position 0 global
    >>> p.encoder.tolist(), p.all_encoder  # the global token joins everything in two layers
    ([212, 1024, 1024], 1024)
    """
    counts = {causal: reach_matrix(kind, n, n_layers, causal=causal, **pattern).sum((1, 2))
              for causal in (False, True)}
    return Pairs(np.arange(1, n_layers + 1), counts[False], counts[True], n * n, n * (n + 1) // 2)


def layers_to_join_all(pairs: Pairs, causal: bool) -> int | None:
    """The first number of layers after which every query has read every key it may (all n²
    pairs for an encoder, the n(n+1)/2 with key <= query for a decoder); None within the table."""
    got, every = ((pairs.decoder, pairs.all_decoder) if causal
                  else (pairs.encoder, pairs.all_encoder))
    full = np.flatnonzero(got == every)
    return int(pairs.layers[full[0]]) if len(full) else None


def pattern_sizes(n: int, kinds=PATTERNS, **pattern: int) -> dict[str, list]:
    """Per pattern: the (query, key) pairs one layer allows, as an encoder and as a decoder
    reads it, and the decoder's share of the encoder's.

    >>> pattern_sizes(4, kinds=("full", "sliding"), window=1)["pairs, encoder"]
    [16, 10]
    """
    enc = [int(pattern_mask(k, n, causal=False, **pattern).sum()) for k in kinds]
    dec = [int(pattern_mask(k, n, causal=True, **pattern).sum()) for k in kinds]
    return {"pattern": list(kinds), "pairs, encoder": enc, "pairs, decoder": dec,
            "kept by the decoder": [f"{d / e:.0%}" for d, e in zip(dec, enc)]}


def random_cells(n: int, **pattern: int) -> tuple[int, int]:
    """BigBird's random keys that add a pair the window and the global tokens do not already
    allow: how many an encoder reads, and how many of them survive the causal mask.

    >>> random_cells(32, window=2, n_global=1, n_random=2, seed=0)  # 64 drawn
    (50, 26)
    """
    extra = sparse_pattern("bigbird", n, **pattern) & ~sparse_pattern("global", n, **pattern)
    return int(extra.sum()), int((extra & causal_mask(n)).sum())


# --- cost -------------------------------------------------------------------------------------


def full_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q kᵀ/√d) v with the whole (n, n) score matrix: memory and time grow as n²."""
    s = q @ k.T / math.sqrt(q.shape[-1])  # (n, n)
    return torch.softmax(s, -1) @ v  # (n, d)


def window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: int) -> torch.Tensor:
    """Causal sliding-window attention that only builds (n, w+1) scores: each query reads
    keys i-w..i. Grows as n·w. Positions before 0 are padding with score −∞."""
    n, d = q.shape
    kp = torch.cat([k.new_zeros(w, d), k])  # (n+w, d)
    vp = torch.cat([v.new_zeros(w, d), v])
    kw = kp.unfold(0, w + 1, 1).transpose(1, 2)  # (n, w+1, d): keys i-w..i
    vw = vp.unfold(0, w + 1, 1).transpose(1, 2)
    s = (kw @ q[:, :, None])[..., 0] / math.sqrt(d)  # (n, w+1)
    pad = torch.arange(w + 1)[None, :] < (w - torch.arange(n))[:, None]  # before position 0
    s = s.masked_fill(pad, float("-inf"))
    return (torch.softmax(s, -1)[:, None, :] @ vw)[:, 0]  # (n, d)


def peak_bytes(calls: Mapping[str, Callable[[], object]]) -> dict[str, int]:
    """Measured peak memory of each call (bytes): the most it held at once beyond its inputs.

    PyTorch's profiler records every allocation and free of this thread (other threads, other
    learners' runs, are not seen). The calls run one after another, each after an empty
    labelled marker; the allocations and frees between one marker and the next are added up
    in time order and the largest running total is that call's peak. (A range wrapped around
    a call would swallow its frees, so the markers stay empty.)"""
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                  profile_memory=True)
    with prof:
        for label, fn in calls.items():
            with torch.profiler.record_function(label):
                pass
            fn()  # its result is freed here, before the next marker
    total, peak, current = {}, {}, None
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if e.name in calls:
            current = e.name
            total[current] = peak[current] = 0
        elif current is not None:  # + allocated by an op, − freed ([memory] events)
            total[current] += e.self_cpu_memory_usage
            peak[current] = max(peak[current], total[current])
    return {label: peak[label] for label in calls}


class Cost(NamedTuple):
    n: int
    full_ms: float
    window_ms: float
    full_cells: int  # scores held at once: n²
    window_cells: int  # n·(w+1)
    full_bytes: int  # measured peak memory (peak_bytes)
    window_bytes: int

    @property
    def full_mb(self) -> float:
        return self.full_bytes / 2**20

    @property
    def window_mb(self) -> float:
        return self.window_bytes / 2**20


def cost_table(costs: Sequence[Cost]) -> dict[str, list]:
    """Lesson 17's table of the measured costs: times (ms), peak memory (MB), scores held."""
    return {"n": [c.n for c in costs], "full (ms)": [round(c.full_ms, 2) for c in costs],
            "window (ms)": [round(c.window_ms, 2) for c in costs],
            "full memory (MB)": [round(c.full_mb, 3) for c in costs],
            "window memory (MB)": [round(c.window_mb, 3) for c in costs],
            "scores held, full (n²)": [c.full_cells for c in costs],
            "scores held, window (n·(w+1))": [c.window_cells for c in costs]}


def attention_cost(ns, window: int = 16, d: int = 32, repeats: int = 3, seed: int = 0) -> list[Cost]:
    """Best-of-``repeats`` wall time (ms) and measured peak memory (bytes, one profiled run) of
    full and sliding-window attention on random float32 q, k, v for each n, with the number of
    score cells each holds. Timings depend on the machine; memory barely does."""
    g = torch.Generator().manual_seed(seed)
    calls = {}
    for n in ns:
        q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
        calls[f"full n={n}"] = functools.partial(full_attention, q, k, v)
        calls[f"window n={n}"] = functools.partial(window_attention, q, k, v, window)
    ms = {}
    for label, fn in calls.items():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        ms[label] = best * 1e3
    mem = peak_bytes(calls)  # one profiled run of each, after the timings
    return [Cost(n, ms[f"full n={n}"], ms[f"window n={n}"], n * n, n * (window + 1),
                 mem[f"full n={n}"], mem[f"window n={n}"]) for n in ns]


# --- Linformer --------------------------------------------------------------------------------


def pooling(n: int, k: int) -> torch.Tensor:
    """(k, n) mean-pooling: row r averages the r-th of k runs of neighbouring positions, as
    even as they can be (runs of n // k or n // k + 1). Our untrained stand-in for Linformer's
    learned E and F: it is exact at k = n (the identity) and, at k = 1, gives every query the
    mean of all values. (A random N(0, 1/k) matrix, the other untrained choice, mixes every
    position into every row and lands farther off than an output of zeros.)

    >>> pooling(5, 2)
    tensor([[0.5000, 0.5000, 0.0000, 0.0000, 0.0000],
            [0.0000, 0.0000, 0.3333, 0.3333, 0.3333]], dtype=torch.float64)
    """
    if not 1 <= k <= n:
        raise ValueError(f"pooling {n} positions needs 1 to {n} rows, got {k}")
    edges = np.arange(k + 1) * n // k  # (k+1,) strictly increasing, since n / k >= 1
    P = torch.zeros(k, n, dtype=torch.float64)  # (k, n)
    for r in range(k):
        P[r, edges[r]:edges[r + 1]] = 1 / (edges[r + 1] - edges[r])
    return P


class Linformer(NamedTuple):
    maps: np.ndarray  # (H, n, k): each query's weights over k pooled rows
    error: float  # ||out_approx - out_exact|| / ||out_exact||, all heads


def _heads(q, k, v) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v of one layer ((n, H, dh) arrays) as float64 tensors (H, n, dh), grouped keys
    and values repeated for the query heads they serve."""
    q, k, v = (torch.as_tensor(np.asarray(a), dtype=torch.float64).transpose(0, 1)
               for a in (q, k, v))
    if k.shape[0] != q.shape[0]:
        rep = q.shape[0] // k.shape[0]
        k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    return q, k, v


def linformer(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: int,
              scale: float | None = None) -> Linformer:
    """Bidirectional attention of one layer (q, k, v as (n, H, dh)) against its Linformer-shaped
    approximation: K and V cut from n to ``rows`` rows by E = F = :func:`pooling`.
    Exact: softmax(QKᵀ/√d) V. Approximate: softmax(Q(EK)ᵀ/√d) (FV). ``scale``: what the model
    multiplies its scores by instead of 1/√d (a Granite's attention_multiplier). Nothing is
    trained (not the projections, not the model), so the error is what the projection alone costs."""
    q, k, v = _heads(q, k, v)
    n, dh = q.shape[1], q.shape[2]
    c = 1 / math.sqrt(dh) if scale is None else scale
    E = pooling(n, rows)  # (rows, n); F is the same matrix
    exact = torch.softmax(q @ k.transpose(1, 2) * c, -1) @ v  # (H, n, dh)
    maps = torch.softmax(q @ (E @ k).transpose(1, 2) * c, -1)  # (H, n, rows)
    approx = maps @ (E @ v)  # (H, n, dh)
    err = float((approx - exact).norm() / exact.norm().clamp_min(1e-12))
    return Linformer(maps.numpy(), err)


def best_rank_errors(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float | None = None) -> np.ndarray:
    """(n,) relative output error of the closest rank-r map, r = 1..n: each head's exact
    attention matrix A (bidirectional, as in :func:`linformer`) cut to its r largest singular
    values (truncated SVD, the closest rank-r matrix to A), output A_r V, error over all heads
    as in :func:`linformer`. A k-row method's map softmax(Q(EK)ᵀ/√d)·F has rank ≤ k, so this
    is a yardstick for what a well-chosen k-row map could reach (the closest map, though not
    always the closest output). 0 at r = n. ``scale`` as in :func:`linformer`."""
    q, k, v = _heads(q, k, v)
    c = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    A = torch.softmax(q @ k.transpose(1, 2) * c, -1)  # (H, n, n)
    U, S, Vh = torch.linalg.svd(A)
    # (A − A_r) V = Σ_{i>r} s_i u_i (v_iᵀ V); the u_i are orthonormal, so its squared size is
    # Σ_{i>r} s_i² |v_iᵀ V|², summed over heads
    parts = (S**2 * (Vh @ v).pow(2).sum(-1)).sum(0)  # (n,) one per singular value
    left = parts.flip(0).cumsum(0).flip(0)  # left[i] = Σ_{j≥i} parts[j]
    exact = (A @ v).norm().clamp_min(1e-12)
    return (torch.cat([left[1:], left.new_zeros(1)]).clamp_min(0).sqrt() / exact).numpy()


class LinformerLayers(NamedTuple):
    maps: np.ndarray  # (L, H, n, k): each layer's and head's weights over the k pooled rows
    pooled: np.ndarray  # (L, n): relative output error of mean-pooling to k = 1..n rows
    best: np.ndarray  # (L, n): that of the closest rank-k map (best_rank_errors)


def linformer_layers(qs: Sequence[np.ndarray], ks: Sequence[np.ndarray], vs: Sequence[np.ndarray],
                     rows: int, scale: float | None = None) -> LinformerLayers:
    """:func:`linformer` with ``rows`` pooled rows, and both error curves over k = 1..n, for
    every layer (q, k, v of layer l as (n, H, dh)): all a page needs to show any layer and
    head without running again. ``scale`` as in :func:`linformer`."""
    n = qs[0].shape[0]
    rows = max(1, min(rows, n))  # one token: k = 1, its only run
    maps, pooled, best = [], [], []
    for q, k, v in zip(qs, ks, vs):
        maps.append(linformer(q, k, v, rows, scale).maps)
        pooled.append([linformer(q, k, v, kk, scale).error for kk in range(1, n + 1)])
        best.append(best_rank_errors(q, k, v, scale))
    return LinformerLayers(np.stack(maps), np.asarray(pooled, dtype=float), np.stack(best))
