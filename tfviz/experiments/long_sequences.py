"""Lesson 17's numbers: what full attention costs as n grows, sparse patterns run on a trained
model as a what-if, and Linformer's low-rank projection of keys and values.

Nothing here changes a shared model: :func:`with_pattern` returns a copy.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from tfviz.model.masks import receptive_field, reach_by_layer, sparse_pattern

PATTERNS = ("full", "sliding", "dilated", "global", "bigbird", "strided")


def causal_pattern(kind: str, n: int, **pattern: int) -> np.ndarray:
    """(n, n) bool: the pattern with the causal triangle applied, as a decoder uses it."""
    return sparse_pattern(kind, n, **pattern) & np.tri(n, dtype=bool)


def with_pattern(model, kind: str, **pattern: int):
    """A copy of ``model`` whose self-attention uses ``kind`` (sparse_pattern's keywords).
    The shared model is never touched; the copy is small (the lesson's models are tiny)."""
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
        new.register_buffer("pattern_allowed", torch.from_numpy(allowed), persistent=False)
    return new


def next_token_loss(logits: np.ndarray, ids) -> float:
    """Mean cross-entropy of predicting ids[1:] from logits[:-1] (nats); nan for one token."""
    ids = np.asarray(ids)
    if len(ids) < 2:
        return float("nan")
    lg = torch.as_tensor(np.asarray(logits)[:-1], dtype=torch.float64)  # (n-1, V)
    return float(F.cross_entropy(lg, torch.as_tensor(ids[1:])))


class Reach(NamedTuple):
    layers: np.ndarray  # (L,) 1..L
    composed: np.ndarray  # (L,) distance reached by composing masks
    lw: np.ndarray  # (L,) L·w
    ldw: np.ndarray  # (L,) L·d·w


def reach_table(kind: str, n: int, n_layers: int, window: int, dilation: int = 1,
                **pattern: int) -> Reach:
    """Receptive field of the last of n tokens after 1..n_layers layers, by composing masks,
    next to the rules of thumb L·w and L·d·w."""
    layers = np.arange(1, n_layers + 1)
    got = np.array([receptive_field(kind, L, window, dilation, n=n, **pattern) for L in layers])
    return Reach(layers, got, layers * window, layers * dilation * window)


def reach_rows(kind: str, n: int, n_layers: int, **pattern: int) -> np.ndarray:
    """(L, n) bool: which positions the last token reaches after 1..L layers."""
    return reach_by_layer(kind, n, n_layers, **pattern)


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


class Cost(NamedTuple):
    n: int
    full_ms: float
    window_ms: float
    full_cells: int  # scores held at once: n²
    window_cells: int  # n·(w+1)


def attention_cost(ns, window: int = 16, d: int = 32, repeats: int = 3, seed: int = 0) -> list[Cost]:
    """Best-of-``repeats`` wall time (ms) of full and sliding-window attention on random q, k, v
    for each n, with the number of score cells each holds. Timings depend on the machine."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in ns:
        q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
        times = []
        for fn in (lambda: full_attention(q, k, v), lambda: window_attention(q, k, v, window)):
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            times.append(best * 1e3)
        out.append(Cost(n, times[0], times[1], n * n, n * (window + 1)))
    return out


# --- Linformer --------------------------------------------------------------------------------


def projection(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """(k, n) fixed random projection with N(0, 1/k) entries (Linformer's E and F, untrained)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(k, n, generator=g) / math.sqrt(k)


class Linformer(NamedTuple):
    maps: np.ndarray  # (H, n, k): each query's weights over k projected rows
    error: float  # ||out_approx - out_exact|| / ||out_exact||, all heads


def linformer(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: int, seed: int = 0) -> Linformer:
    """Bidirectional attention of one layer (q, k, v as (n, H, dh)) against its Linformer
    approximation: K and V projected from n to ``rows`` rows by fixed seeded matrices E, F.
    Exact: softmax(QKᵀ/√d) V. Approximate: softmax(Q(EK)ᵀ/√d) (FV). The model was not trained
    for this, so the error is what the projection alone costs."""
    q, k, v = (torch.as_tensor(np.asarray(a), dtype=torch.float64).transpose(0, 1)
               for a in (q, k, v))  # (H, n, dh)
    if k.shape[0] != q.shape[0]:  # grouped keys: repeat for the query heads they serve
        rep = q.shape[0] // k.shape[0]
        k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    n, dh = q.shape[1], q.shape[2]
    E = projection(n, rows, seed).double()  # (rows, n)
    Fm = projection(n, rows, seed + 1).double()
    exact = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), -1) @ v  # (H, n, dh)
    maps = torch.softmax(q @ (E @ k).transpose(1, 2) / math.sqrt(dh), -1)  # (H, n, rows)
    approx = maps @ (Fm @ v)
    err = float((approx - exact).norm() / exact.norm().clamp_min(1e-12))
    return Linformer(maps.numpy(), err)
