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
from tfviz.model.masks import sparse_pattern
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


@pytest.mark.parametrize("kind", ["sliding", "dilated", "global", "bigbird", "strided", "block"])
@pytest.mark.parametrize("layers", [0, 1, 2, 3, 5])
def test_receptive_field_equals_bfs_and_matrix_power(kind, layers):
    n, pat = 40, dict(window=2, dilation=3, n_global=1, n_random=2, stride=5, seed=4)
    allowed = sparse_pattern(kind, n, **pat) & np.tri(n, dtype=bool)
    want = _bfs_reach(allowed, n - 1, layers)
    assert want == _power_reach(allowed, layers)
    reach = ls.reach_table(kind, n, layers, **pat)  # the page's "farthest away", last token
    assert (int(reach.farthest[-1]) if layers else 0) == want


@pytest.mark.parametrize("w,d,L", [(1, 1, 4), (3, 1, 2), (2, 3, 3), (4, 2, 5)])
def test_reach_table_follows_the_rules_of_thumb_when_the_start_is_far(w, d, L):
    kind = "sliding" if d == 1 else "dilated"
    r = ls.reach_table(kind, 200, L, window=w, dilation=d)
    assert list(r.farthest) == list(r.layers * w * (d if kind == "dilated" else 1))
    # a decoder's last token has read w more positions a layer, whatever the dilation
    assert list(r.reached) == list(r.layers * w + 1)


def _reached_by_powers(kind, n, L, causal, pat):
    """(L, n, n) bool by integer matrix powers of the mask, built here from sparse_pattern and
    numpy's own lower triangle."""
    m = sparse_pattern(kind, n, **pat).astype(np.int64)
    if causal:
        m = m * np.tri(n, dtype=np.int64)
    return np.stack([np.linalg.matrix_power(m, layer) > 0 for layer in range(1, L + 1)])


PAGE = dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, seed=0)  # the page's defaults


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["full", "sliding", "dilated", "global", "bigbird", "strided",
                                  "block"])
@pytest.mark.parametrize("query", [None, 0, 16])
def test_reach_table_counts_against_composed_masks(kind, causal, query):
    n, L = 32, 6
    want = _reached_by_powers(kind, n, L, causal, PAGE)[:, n - 1 if query is None else query]
    r = ls.reach_table(kind, n, L, query=query, causal=causal, **PAGE)
    assert list(r.reached) == list(want.sum(1))
    q = n - 1 if query is None else query
    assert list(r.farthest) == [max(abs(j - q) for j in np.flatnonzero(row)) for row in want]


@pytest.mark.parametrize("n,N", [(32, 4), (10, 3), (5, 8), (7, 1)])
def test_block_local_is_the_notes_formula_and_never_leaves_its_block(n, N):
    """The notes: attend within the block, floor(j/N) = floor(i/N), written here as two loops.
    Stacking layers adds nothing (the blocks do not overlap), and one layer allows n*N pairs
    when N divides n, N(N+1)/2 per block as a decoder reads it."""
    want = np.array([[i // N == j // N for j in range(n)] for i in range(n)])
    np.testing.assert_array_equal(sparse_pattern("block", n, stride=N), want)
    for causal in (False, True):
        r = ls.reach_table("block", n, 5, causal=causal, window=2, dilation=2, stride=N)
        last_block = n - (n - 1) // N * N  # positions in the last block
        assert r.reached.tolist() == [last_block if not causal else (n - 1) % N + 1] * 5
    sizes = ls.pattern_sizes(n, kinds=("block",), stride=N)
    full_blocks, rest = divmod(n, N)
    assert sizes["pairs, encoder"] == [full_blocks * N * N + rest * rest]
    assert sizes["pairs, decoder"] == [full_blocks * N * (N + 1) // 2 + rest * (rest + 1) // 2]


def test_reach_table_global_by_hand():
    # the numbers: a decoder's last token has read 4..14 of 32, an encoder's all 32
    # from layer 2 on (through the global token, which read everyone in layer 1)
    dec = ls.reach_table("global", 32, 6, **PAGE)
    enc = ls.reach_table("global", 32, 6, causal=False, **PAGE)
    assert dec.reached.tolist() == [4, 6, 8, 10, 12, 14]
    assert enc.reached.tolist() == [4, 32, 32, 32, 32, 32]
    assert dec.farthest.tolist() == enc.farthest.tolist() == [31] * 6  # why a distance misleads


@pytest.mark.parametrize("kind", ["full", "sliding", "dilated", "global", "bigbird", "strided",
                                  "block"])
def test_pairs_table_against_composed_masks(kind):
    n, L = 24, 6
    p = ls.pairs_table(kind, n, L, **PAGE)
    assert list(p.encoder) == [int(m.sum()) for m in _reached_by_powers(kind, n, L, False, PAGE)]
    assert list(p.decoder) == [int(m.sum()) for m in _reached_by_powers(kind, n, L, True, PAGE)]
    assert (p.all_encoder, p.all_decoder) == (576, 300)


def test_global_token_joins_every_pair_of_an_encoder_in_two_layers():
    for n in (8, 32, 64):
        p = ls.pairs_table("global", n, 6, **PAGE)
        assert ls.layers_to_join_all(p, causal=False) == 2
        # a decoder's token 0 has read nothing to pass on: only the window joins pairs, 2 back a
        # layer, so 8 tokens take 3 layers (6 back, and position 0 read directly)
        assert ls.layers_to_join_all(p, causal=True) == (3 if n == 8 else None)
    sliding = ls.pairs_table("sliding", 32, 6, **PAGE)
    assert ls.layers_to_join_all(sliding, causal=True) is None  # 6 layers of 2 reach 12 back
    assert ls.layers_to_join_all(ls.pairs_table("full", 5, 3), causal=True) == 1


def test_pattern_sizes_by_counting_cells():
    n = 32
    tri = [(i, j) for i in range(n) for j in range(n)]
    window = sum(abs(i - j) <= 2 for i, j in tri)  # 32 + 2·(31 + 30) = 154
    assert window == 154
    table = ls.pattern_sizes(n, kinds=("full", "sliding", "global"), **PAGE)
    assert table["pairs, encoder"] == [1024, 154, 154 + 2 * 29]
    # a decoder keeps the diagonal and the lower half of the rest
    assert table["pairs, decoder"] == [528, 32 + 31 + 30, 32 + 31 + 30 + 29]
    assert table["kept by the decoder"] == ["52%", "60%", "58%"]


def test_random_cells_that_survive_the_causal_mask():
    n = 32
    big = sparse_pattern("bigbird", n, **PAGE)
    extra = [(i, j) for i in range(n) for j in range(n)
             if big[i, j] and abs(i - j) > 2 and i != 0 and j != 0]  # not window, not global
    assert ls.random_cells(n, **PAGE) == (len(extra), sum(j <= i for i, j in extra)) == (50, 26)


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


def _pool(n, k):
    """Mean-pooling by hand: k runs of neighbouring positions, lengths n // k or n // k + 1."""
    P, start = np.zeros((k, n)), 0
    sizes = sorted([n // k + 1] * (n % k) + [n // k] * (k - n % k))  # the longer runs last
    for r, size in enumerate(sizes):
        P[r, start:start + size] = 1 / size
        start += size
    return P


def test_pooling_by_hand():
    np.testing.assert_allclose(ls.pooling(7, 3).numpy(), _pool(7, 3))
    np.testing.assert_allclose(ls.pooling(7, 3).numpy()[2], [0, 0, 0, 0, 1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_array_equal(ls.pooling(6, 6).numpy(), np.eye(6))
    np.testing.assert_allclose(ls.pooling(6, 1).numpy(), np.full((1, 6), 1 / 6))
    with pytest.raises(ValueError, match="1 to 6 rows"):
        ls.pooling(6, 7)


def _softmax(s):
    p = np.exp(s - s.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


@pytest.mark.parametrize("k", [1, 3, 9])
def test_linformer_against_numpy(k):
    rng = np.random.default_rng(1)
    n, H, dh = 9, 2, 4
    q, kk, v = (rng.normal(size=(n, H, dh)) for _ in range(3))
    got = ls.linformer(q, kk, v, k)
    P = _pool(n, k)
    err_num, err_den = 0.0, 0.0
    for h in range(H):
        p = _softmax(q[:, h] @ (P @ kk[:, h]).T / np.sqrt(dh))
        np.testing.assert_allclose(got.maps[h], p, atol=1e-12)  # float64 on both sides
        exact, approx = _softmax(q[:, h] @ kk[:, h].T / np.sqrt(dh)) @ v[:, h], p @ (P @ v[:, h])
        err_num += ((approx - exact) ** 2).sum()
        err_den += (exact**2).sum()
    assert got.error == pytest.approx(np.sqrt(err_num / err_den), rel=1e-9)
    if k == n:
        assert got.error == pytest.approx(0, abs=1e-12)  # pooling by 1 is the identity


def test_pooled_linformer_beats_zeros_where_a_random_projection_does_not():
    # The page's claims on its default sentence, every layer of gpt-tiny: mean-pooling never
    # does worse than an output of zeros (error 1), a random N(0, 1/k) projection always does.
    b = tfviz.load("gpt-tiny")
    tr = b.trace(b.read("The animal didn't cross the street because it was too tired."))
    rng = np.random.default_rng(0)
    for layer in range(b.config.n_layers):
        q, kk, v = (tr[nm, layer] for nm in ("q", "k", "v"))
        n, H, dh = q.shape
        for k in range(1, n + 1):
            assert ls.linformer(q, kk, v, k).error < 1
            E, F = (rng.normal(0, 1 / np.sqrt(k), size=(k, n)) for _ in range(2))
            num = den = 0.0
            for h in range(H):
                exact = _softmax(q[:, h] @ kk[:, h].T / np.sqrt(dh)) @ v[:, h]
                approx = _softmax(q[:, h] @ (E @ kk[:, h]).T / np.sqrt(dh)) @ (F @ v[:, h])
                num, den = num + ((approx - exact) ** 2).sum(), den + (exact**2).sum()
            assert np.sqrt(num / den) > 1, (layer, k)


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
    assert ls.next_token_loss(logits, ids) == pytest.approx(want, rel=1e-9)  # float64 both
    assert np.isnan(ls.next_token_loss(logits[:1], [1]))


def test_trained_model_under_a_narrow_window_changes_its_loss():
    b = tfviz.load("gpt-tiny")
    ids = list(b.read("the animal didn't cross the street because it was too tired").ids)
    full = run_with_trace(b.model, ids)
    narrow = run_with_trace(ls.with_pattern(b.model, "sliding", window=0).eval(), ids)
    assert ls.next_token_loss(narrow["logits"], ids) != pytest.approx(
        ls.next_token_loss(full["logits"], ids), abs=1e-3)
    assert b.model.cfg.attn_pattern == "full"
