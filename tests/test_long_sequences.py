"""Lesson 17's engine against independent references: receptive fields by breadth-first search
and by integer matrix powers, window attention by masked full attention, Linformer by numpy,
the patterned what-if by a model built with that pattern."""
from collections import deque

import numpy as np
import pytest
import torch

import tfviz
from tfviz.experiments import long_sequences as ls
from tfviz.config import ModelConfig
from tfviz.model.masks import receptive_field, sparse_pattern
from tfviz.model.transformer import Transformer
from tfviz.trace import run_with_trace


def _bfs_reach(allowed: np.ndarray, start: int, layers: int) -> int:
    """Farthest key reached from ``start`` in at most ``layers`` hops along allowed (causal) edges."""
    seen, frontier = {start}, deque([(start, 0)])
    while frontier:
        node, depth = frontier.popleft()
        if depth == layers:
            continue
        for j in np.flatnonzero(allowed[node]):
            if int(j) not in seen:
                seen.add(int(j))
                frontier.append((int(j), depth + 1))
    return start - min(seen)


def _power_reach(allowed: np.ndarray, layers: int) -> int:
    """Same question by an integer matrix power (counts paths; > 0 means reachable)."""
    m = np.linalg.matrix_power(allowed.astype(np.int64), layers) if layers else np.eye(len(allowed))
    row = m[-1] > 0
    return len(allowed) - 1 - int(np.flatnonzero(row).min())


@pytest.mark.parametrize("kind", ["sliding", "dilated", "global", "bigbird", "strided"])
@pytest.mark.parametrize("layers", [0, 1, 2, 3, 5])
def test_receptive_field_equals_bfs_and_matrix_power(kind, layers):
    n, pat = 40, dict(window=2, dilation=3, n_global=1, n_random=2, stride=5, seed=4)
    allowed = sparse_pattern(kind, n, **pat) & np.tri(n, dtype=bool)
    want = _bfs_reach(allowed, n - 1, layers)
    assert want == _power_reach(allowed, layers)
    got = receptive_field(kind, layers, pat.pop("window"), pat.pop("dilation"), n=n, **pat)
    assert got == want


@pytest.mark.parametrize("w,d,L", [(1, 1, 4), (3, 1, 2), (2, 3, 3), (4, 2, 5)])
def test_reach_table_follows_the_rules_of_thumb_when_the_start_is_far(w, d, L):
    kind = "sliding" if d == 1 else "dilated"
    r = ls.reach_table(kind, 200, L, w, d)
    assert list(r.composed) == list(r.layers * w * (d if kind == "dilated" else 1))
    assert receptive_field(kind, L, w, d) == r.composed[-1]  # the signature, no n


def test_window_attention_equals_masked_full_attention():
    g = torch.Generator().manual_seed(0)
    n, d, w = 23, 8, 4
    q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float64) for _ in range(3))
    s = q @ k.T / d**0.5
    band = torch.from_numpy(ls.causal_pattern("sliding", n, window=w))
    want = torch.softmax(s.masked_fill(~band, float("-inf")), -1) @ v
    torch.testing.assert_close(ls.window_attention(q, k, v, w), want)  # float64: same maths


def test_attention_cost_counts_cells():
    rows = ls.attention_cost([16, 32], window=3, d=4, repeats=1)
    assert [(r.n, r.full_cells, r.window_cells) for r in rows] == [(16, 256, 64), (32, 1024, 128)]
    assert all(r.full_ms > 0 and r.window_ms > 0 for r in rows)


def test_linformer_against_numpy():
    rng = np.random.default_rng(1)
    n, H, dh, k = 9, 2, 4, 3
    q, kk, v = (rng.normal(size=(n, H, dh)) for _ in range(3))
    got = ls.linformer(q, kk, v, k, seed=5)
    E, F = ls.projection(n, k, 5).numpy(), ls.projection(n, k, 6).numpy()
    err_num, err_den = 0.0, 0.0
    for h in range(H):
        s = q[:, h] @ (E @ kk[:, h]).T / np.sqrt(dh)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        np.testing.assert_allclose(got.maps[h], p, atol=1e-6)  # float32 projections, float64 maths
        s0 = q[:, h] @ kk[:, h].T / np.sqrt(dh)
        p0 = np.exp(s0 - s0.max(1, keepdims=True))
        p0 /= p0.sum(1, keepdims=True)
        exact, approx = p0 @ v[:, h], p @ (F @ v[:, h])
        err_num += ((approx - exact) ** 2).sum()
        err_den += (exact**2).sum()
    assert got.error == pytest.approx(np.sqrt(err_num / err_den), rel=1e-5)


def test_linformer_error_is_small_when_k_equals_n_and_projection_is_identity_like():
    # with k = n the projection is a random basis change, not identity; error still finite
    rng = np.random.default_rng(0)
    q = rng.normal(size=(6, 1, 4))
    assert np.isfinite(ls.linformer(q, q, q, 6).error)


@pytest.mark.parametrize("kind", ["sliding", "dilated", "bigbird", "strided", "full"])
def test_with_pattern_matches_a_model_built_with_it_and_leaves_the_original(kind):
    cfg = ModelConfig(n_layers=2, max_seq_len=16)
    shared = Transformer(cfg).eval()
    before = {k: v.clone() for k, v in shared.state_dict().items()}
    copy = ls.with_pattern(shared, kind, window=1, dilation=2, n_global=1, n_random=2, stride=3,
                           seed=0).eval()
    built = Transformer(ModelConfig(n_layers=2, max_seq_len=16, attn_pattern=kind, window=1,
                                    dilation=2, n_global=1, n_random=2, stride=3)).eval()
    ids = list(range(1, 12))
    a, b = run_with_trace(copy, ids), run_with_trace(built, ids)
    np.testing.assert_allclose(a["logits"], b["logits"], atol=1e-5)  # same weights, same mask
    assert shared.cfg.attn_pattern == "full"
    for k, v in shared.state_dict().items():
        torch.testing.assert_close(v, before[k], atol=0, rtol=0)


def test_next_token_loss_is_torch_cross_entropy():
    logits = np.random.default_rng(0).normal(size=(4, 7))
    ids = [1, 2, 3, 4]
    want = float(torch.nn.functional.cross_entropy(torch.tensor(logits[:-1]), torch.tensor(ids[1:])))
    assert ls.next_token_loss(logits, ids) == pytest.approx(want, rel=1e-9)
    assert np.isnan(ls.next_token_loss(logits[:1], [1]))


def test_trained_model_under_a_narrow_window_changes_its_loss():
    b = tfviz.load("gpt-tiny")
    ids = list(b.read("the animal didn't cross the street because it was too tired").ids)
    full = run_with_trace(b.model, ids)
    narrow = run_with_trace(ls.with_pattern(b.model, "sliding", window=0).eval(), ids)
    assert ls.next_token_loss(narrow["logits"], ids) != pytest.approx(
        ls.next_token_loss(full["logits"], ids), abs=1e-3)
    assert b.model.cfg.attn_pattern == "full"
