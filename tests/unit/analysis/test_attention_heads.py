"""Lesson 7's multi-head bookkeeping: reshape, per-head contributions, head statistics."""
import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import heads as hd


@pytest.fixture(scope="module")
def gpt():
    b = tfviz.load("gpt-tiny")
    return b, b.trace("the cat sat on the mat")


def test_split_heads_equals_torch_view_and_transpose():
    Q = np.random.default_rng(0).standard_normal((5, 12))
    per_token, per_head = hd.split_heads(Q, 3)
    ref = torch.tensor(Q).view(5, 3, 4)  # reshapes move numbers and never round them: bit for bit
    np.testing.assert_array_equal(per_token, ref.numpy())
    np.testing.assert_array_equal(per_head, ref.transpose(0, 1).numpy())
    np.testing.assert_array_equal(per_head[1], Q[:, 4:8])  # head 1 owns columns 4..7
    np.testing.assert_array_equal(per_token.reshape(5, 12), Q)  # and back: concat(heads) = Q


def test_query_matrix_is_the_trace_q_side_by_side(gpt):
    _, tr = gpt
    Q = hd.query_matrix(tr, 1)
    assert Q.shape == (len(tr.tokens), 64)
    np.testing.assert_array_equal(Q[:, 16:32], tr["q", 1][:, 1])


def test_concat_times_w_o_is_the_attention_output(gpt):
    b, tr = gpt
    W_O, b_O = hd.output_weights(b.weights(), 1)
    assert W_O.shape == (64, 64)
    z = tr["z", 1]  # (n, h, d_head)
    out = z.reshape(len(z), -1) @ W_O + b_O  # concat(z): head 0's numbers first, then head 1's
    np.testing.assert_allclose(out, tr["attn_out", 1], atol=1e-5)


def test_head_contributions_add_up_to_the_output(gpt):
    b, tr = gpt
    W_O, b_O = hd.output_weights(b.weights(), 0)
    for pos in (0, 4, len(tr.tokens) - 1):
        contrib = hd.head_contributions(tr["z", 0][pos], W_O)
        assert contrib.shape == (4, 64)
        # head 2's share on its own: its z times its 16 rows of W^O, in float64 as
        # head_contributions computes it (from the same float32 numbers)
        np.testing.assert_allclose(contrib[2], tr["z", 0][pos, 2].astype(np.float64) @ W_O[32:48],
                                   atol=1e-12)
        assert hd.contribution_check(contrib, b_O, tr["attn_out", 0][pos]) < 1e-5


def _causal_uniform(n):
    p = np.tril(np.ones((n, n)))
    return p / p.sum(axis=1, keepdims=True)


def test_head_stats_name_hand_made_heads():
    n = 6
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0
    first = np.zeros((n, n))
    first[:, 0] = 1.0
    patterns = np.stack([previous, first, np.eye(n), _causal_uniform(n)])
    stats = hd.head_stats(patterns)
    assert [s.label for s in stats] == ["previous-token head", "first-token head",
                                        "same-token head", "broad head"]
    assert stats[0].previous == 1.0 and stats[0].same == 0.0
    assert stats[1].first == 1.0
    assert stats[2].entropy == 0.0
    assert stats[3].entropy == pytest.approx(1.0)
    # rows 1..5 of the uniform causal head give 1/2, 1/3, ... to the previous token
    assert stats[3].previous == pytest.approx(np.mean([1 / (i + 1) for i in range(1, n)]))


def test_a_head_that_keeps_pointing_at_one_early_token():
    n = 6
    p = np.zeros((n, n))
    p[0, 0] = 1.0
    p[1:, 1] = 1.0  # every later token looks at token 1 (say, the subject)
    (stats,) = hd.head_stats(p[None])
    assert stats.label == "one-token head"
    assert (stats.favourite, stats.favourite_share) == (1, 1.0)
    assert hd.head_stats(np.ones((2, 1, 1)))[0].favourite_share == 0.0  # one token: no habit


def test_label_head_thresholds():
    assert hd.label_head(0.2, 0.2, 0.2, 0.5) == "mixed head"
    assert hd.label_head(0.2, 0.55, 0.2, 0.1) == "same-token head"


def test_head_stats_on_the_live_model(gpt):
    _, tr = gpt
    stats = hd.head_stats(tr["pattern", 0])
    assert len(stats) == 4
    for s in stats:
        assert 0 <= s.previous <= 1 and 0 <= s.first <= 1 and 0 <= s.entropy <= 1 + 1e-9
    p = tr["pattern", 0][1]
    rows = np.arange(1, p.shape[0])
    assert stats[1].previous == pytest.approx(p[rows, rows - 1].mean())
