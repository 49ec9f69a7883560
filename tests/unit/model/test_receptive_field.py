"""Receptive field of sparse attention after L layers (issue #17, lesson 17).

``reach_by_layer`` composes the masks (boolean matrix powers), and lesson 17's table reads
how far back the farthest reached position is from it (``reach_table``'s ``farthest``). Three
independent references check them: the formulas L·w and L·d·w, a breadth-first search over a
token graph whose edges are written out here from each pattern's definition, and a real
Transformer whose last output changes exactly when a token it can reach changes.
"""
from collections import deque

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig
from tfviz.model import Transformer
from tfviz.experiments.long_sequences import reach_table
from tfviz.model.masks import MAX_POSITIONS, reach_by_layer, reach_matrix, sparse_pattern
from tfviz.trace import run_with_trace



def receptive_field(kind, n_layers, window, dilation=1, *, n=None, causal=True, **pattern):
    """How far back the last token reaches after ``n_layers`` layers, as lesson 17's table says
    it (``reach_table``'s last ``farthest``). Without ``n`` the sequence is made long enough
    that its start cannot cut a sliding or dilated reach (L·w·d back at most, and one more)."""
    n = n_layers * window * dilation + 2 if n is None else n
    reach = reach_table(kind, n, n_layers, causal=causal, window=window, dilation=dilation,
                        **pattern)
    return int(reach.farthest[-1]) if n_layers else 0


def _edge(kind, i, j, window, dilation, n_global, stride, causal=True):
    """May query i read key j? Each pattern's definition, in words turned into code; a decoder
    (``causal``) reads only j <= i, an encoder both ways."""
    if causal and j > i:
        return False
    back = abs(i - j)
    if kind == "sliding":
        return back <= window
    if kind == "dilated":
        return back <= window * dilation and back % dilation == 0
    if kind == "global":
        return back <= window or i < n_global or j < n_global
    if kind == "strided":
        return back < stride or back % stride == 0
    return True  # full


def _bfs_depths(n, query, reads):
    """Fewest layers for ``query`` to reach each position; reads(i) lists what i reads."""
    depth = {query: 0}
    todo = deque([query])
    while todo:
        i = todo.popleft()
        for j in reads(i):
            if j not in depth:
                depth[j] = depth[i] + 1
                todo.append(j)
    return depth


def _bfs_reach(n, query, n_layers, reads):
    """(L, n) bool: reached within l layers (every pattern lets a token read itself)."""
    depth = _bfs_depths(n, query, reads)
    return np.array([[j in depth and depth[j] <= layer for j in range(n)]
                     for layer in range(1, n_layers + 1)], dtype=bool).reshape(n_layers, n)


@pytest.mark.parametrize("n_layers", range(5))
@pytest.mark.parametrize("window", range(4))
def test_sliding_reaches_layers_times_window(n_layers, window):
    assert receptive_field("sliding", n_layers, window) == n_layers * window


@pytest.mark.parametrize("n_layers", range(5))
@pytest.mark.parametrize("window", range(4))
@pytest.mark.parametrize("dilation", [1, 2, 3, 5])
def test_dilated_reaches_layers_times_dilation_times_window(n_layers, window, dilation):
    assert receptive_field("dilated", n_layers, window, dilation) == n_layers * dilation * window


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["full", "sliding", "dilated", "global", "strided"])
@pytest.mark.parametrize("n", [1, 2, 7, 20])
@pytest.mark.parametrize("window,dilation,n_global,stride", [
    (0, 1, 0, 1), (1, 2, 1, 2), (2, 3, 2, 3), (3, 2, 0, 5)])
def test_composition_matches_breadth_first_search(kind, n, window, dilation, n_global, stride,
                                                  causal):
    n_layers = 4
    kw = dict(window=window, dilation=dilation, n_global=n_global, stride=stride)

    def reads(i):
        return [j for j in range(n)
                if _edge(kind, i, j, window, dilation, n_global, stride, causal)]

    every = reach_matrix(kind, n, n_layers, causal=causal, **kw)  # (L, n, n)
    for query in range(n):
        expected = _bfs_reach(n, query, n_layers, reads)
        if query in (0, n // 2, n - 1):
            np.testing.assert_array_equal(
                reach_by_layer(kind, n, n_layers, query=query, causal=causal, **kw), expected)
        np.testing.assert_array_equal(every[:, query], expected)
    for layers in range(n_layers + 1):
        depth = _bfs_depths(n, n - 1, reads)
        farthest = max(n - 1 - j for j, d in depth.items() if d <= layers)
        assert receptive_field(kind, layers, window, dilation, n=n, n_global=n_global,
                               stride=stride, causal=causal) == farthest


def _powers(allowed, n_layers):
    """(L, n, n) bool by integer matrix powers in numpy: a path of l allowed steps from i to j
    (every pattern holds the diagonal, so l steps include every shorter path)."""
    m = allowed.astype(np.int64)
    return np.stack([np.linalg.matrix_power(m, layer) > 0 for layer in range(1, n_layers + 1)])


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["full", "sliding", "dilated", "global", "bigbird", "strided"])
def test_reach_counts_are_matrix_powers_of_the_mask(kind, causal):
    n, kw = 32, dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, seed=0)
    allowed = sparse_pattern(kind, n, **kw)
    if causal:
        allowed = allowed & np.tril(np.ones((n, n), bool))
    want = _powers(allowed, 6)
    np.testing.assert_array_equal(reach_matrix(kind, n, 6, causal=causal, **kw), want)
    for query in (0, 13, n - 1):
        np.testing.assert_array_equal(
            reach_by_layer(kind, n, 6, query=query, causal=causal, **kw).sum(1),
            want[:, query].sum(1))


def test_global_token_reach_read_both_ways_by_hand():
    # The page's defaults: 32 tokens, window 2, position 0 global. A decoder's last token reads
    # 2 more positions a layer, plus itself and position 0, which has read only itself: 4..14.
    kw = dict(window=2, n_global=1)
    assert reach_by_layer("global", 32, 6, **kw).sum(1).tolist() == [4, 6, 8, 10, 12, 14]
    # An encoder's global token reads everyone in layer 1, so in layer 2 everyone has read all
    assert reach_by_layer("global", 32, 6, causal=False, **kw).sum(1).tolist() == [4] + [32] * 5
    every = reach_matrix("global", 32, 2, causal=False, **kw)
    assert every[0, 0].all() and not every[0].all() and every[1].all()
    assert not reach_matrix("global", 32, 6, causal=True, **kw)[-1].all()
    # a dilated window reaches L·d·w back but has read only L·w + 1 positions
    assert reach_by_layer("dilated", 32, 3, window=2, dilation=2).sum(1).tolist() == [3, 5, 7]
    assert receptive_field("dilated", 3, 2, 2, n=32) == 12


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("n_global", [0, 1])
def test_bigbird_composition_matches_breadth_first_search(seed, n_global, causal):
    # random keys cannot be written out by hand, so the BFS reads sparse_pattern's own draw
    n, kw = 24, dict(window=1, n_global=n_global, n_random=2, seed=seed)
    drawn = sparse_pattern("bigbird", n, **kw)

    def reads(i):
        return [j for j in range(i + 1 if causal else n) if drawn[i, j]]

    np.testing.assert_array_equal(reach_by_layer("bigbird", n, 5, causal=causal, **kw),
                                  _bfs_reach(n, n - 1, 5, reads))
    depth = _bfs_depths(n, n - 1, reads)
    assert receptive_field("bigbird", 5, 1, n=n, n_global=n_global, n_random=2, seed=seed,
                           causal=causal) == max(n - 1 - j for j, d in depth.items() if d <= 5)


def test_window_one_by_hand():
    # the last of 6 tokens: one step back per layer; after 5 layers it reaches position 0
    assert reach_by_layer("sliding", 6, 3, window=1).astype(int).tolist() == [
        [0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]]
    assert receptive_field("sliding", 5, 1) == 5
    # dilation 2, window 1: one step of 2 per layer, odd distances never reached
    assert reach_by_layer("dilated", 7, 2, window=1, dilation=2).astype(int).tolist() == [
        [0, 0, 0, 0, 1, 0, 1], [0, 0, 1, 0, 1, 0, 1]]


def test_global_and_strided_reach_the_start_at_once():
    assert receptive_field("global", 1, 1, n=30) == 29
    assert receptive_field("global", 1, 1, n=30, n_global=0) == 1  # a plain window of 1
    # strided, stride 4: one layer reads 0..3 back and every 4th; two layers fill the gaps
    assert reach_by_layer("strided", 12, 1, stride=4)[0].astype(int).tolist() == [
        0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    assert reach_by_layer("strided", 12, 2, stride=4)[1].all()


@pytest.mark.parametrize("kind", ["full", "sliding", "dilated", "global", "bigbird", "strided"])
def test_no_layers_reach_nothing(kind):
    assert receptive_field(kind, 0, 3, 2, n=10) == 0
    assert reach_by_layer(kind, 10, 0).shape == (0, 10)


def test_huge_values_are_bounded():
    # by the sequence: a fixed point stops the composition long before fifty layers end
    assert reach_by_layer("sliding", 8, 50, window=1)[7:].all()
    assert receptive_field("sliding", 1, MAX_POSITIONS - 2) == MAX_POSITIONS - 2
    with pytest.raises(ValueError, match="positions"):
        reach_by_layer("sliding", MAX_POSITIONS + 1, 1)


def test_bad_arguments_say_why():
    with pytest.raises(ValueError, match="n_layers >= 0"):
        reach_by_layer("sliding", 4, -1, window=1)
    with pytest.raises(ValueError, match="dilation >= 1"):
        reach_by_layer("dilated", 4, 2, window=1, dilation=0)
    with pytest.raises(ValueError, match="query 9"):
        reach_by_layer("sliding", 9, 1, query=9)
    with pytest.raises(ValueError, match="unknown attention pattern"):
        reach_by_layer("spiral", 4, 1, window=1)


@pytest.mark.parametrize("pattern,n_layers", [("sliding", 2), ("dilated", 2), ("global", 1),
                                              ("strided", 1), ("bigbird", 2)])
def test_a_real_model_feels_exactly_the_tokens_it_can_reach(pattern, n_layers):
    # Change one token at a time: the last output moves exactly when that position is reachable.
    cfg = ModelConfig(attn_pattern=pattern, window=1, dilation=2, n_global=1, stride=4,
                      n_layers=n_layers, max_seq_len=16, positional="none")
    model = Transformer(cfg).eval()
    ids = torch.arange(1, 15)[None]  # (1, 14)
    with torch.no_grad():
        base = model(ids)[0, -1]
        felt = []
        for j in range(14):
            changed = ids.clone()
            changed[0, j] = 40
            felt.append(not torch.equal(model(changed)[0, -1], base))
    # the model draws its pattern at max_seq_len and crops it, so draw it the same way here
    reach = reach_by_layer(pattern, 16, n_layers, query=13, window=1, dilation=2, n_global=1,
                           stride=4)[-1][:14]
    assert felt == reach.tolist()


@pytest.mark.parametrize("pattern", ["sliding", "dilated", "global", "bigbird", "strided", "block"])
def test_blocked_pairs_score_minus_infinity_not_zero(pattern):
    # The notes' Sparse Transformer mask writes 0 for blocked pairs; a 0 score still gets
    # weight e⁰ = 1 in the softmax. The model writes -inf there, so the weight is exactly 0.
    cfg = ModelConfig(attn_pattern=pattern, window=1, n_layers=1, max_seq_len=16)
    tr = run_with_trace(Transformer(cfg).eval(), list(range(1, 11)))
    allowed = sparse_pattern(pattern, 16, window=1)[:10, :10] & np.tri(10, dtype=bool)
    masked = tr["attn_scores", 0]  # (H, 10, 10)
    assert np.isneginf(masked[:, ~allowed]).all() and np.isfinite(masked[:, allowed]).all()
    assert (tr["pattern", 0][:, ~allowed] == 0).all()
