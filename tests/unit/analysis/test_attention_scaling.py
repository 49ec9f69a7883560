"""Lesson 6's experiments: variance d_k, softmax saturation and its Jacobian, entropy."""
import math

import numpy as np
import pytest
import torch

from tfviz.analysis import scaling as sc


def test_dot_product_variance_is_d_k_without_and_1_with_the_scale():
    rows = sc.dot_product_variance([1, 8, 64, 256], n_samples=20000, seed=1)
    for r in rows:
        assert r.var_raw == pytest.approx(r.d_k, rel=0.08)
        assert r.var_scaled == pytest.approx(1.0, rel=0.08)
        assert r.var_scaled == pytest.approx(r.var_raw / r.d_k)
        assert (r.theory_raw, r.theory_scaled) == (r.d_k, 1.0)


def test_same_seed_same_numbers():
    assert sc.dot_product_variance([4], 100, seed=3) == sc.dot_product_variance([4], 100, seed=3)


@pytest.mark.parametrize("p", [[0.2, 0.3, 0.5], [1.0, 0.0], [0.25] * 4])
def test_softmax_jacobian_equals_autograd(p):
    p = np.asarray(p, dtype=np.float64)
    s = torch.log(torch.tensor(p).clamp_min(1e-300))  # softmax(log p) = p
    ref = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=0), s).numpy()
    np.testing.assert_allclose(sc.softmax_jacobian(p), ref, atol=1e-9)


def test_max_gradient_and_entropy_by_hand():
    # exact: halves and quarters are exact in binary, and so are their products and log2
    assert sc.max_gradient([0.5, 0.5]) == 0.25
    assert sc.max_gradient([1.0, 0.0, 0.0]) == 0.0
    assert float(sc.entropy([0.25] * 4)) == 2.0
    assert float(sc.entropy([1.0, 0.0])) == 0.0
    pattern = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(sc.row_entropy(pattern), [0.0, 1.0, math.log2(3)])


def test_without_the_scale_softmax_saturates_and_gradients_vanish():
    rows = {(r.d_k, r.scaled): r for r in sc.saturation([1, 16, 512], n_keys=8, seed=0)}
    assert rows[512, False].max_weight > 0.9 > 0.6 > rows[512, True].max_weight
    assert rows[512, False].max_grad < 0.05 < 0.15 < rows[512, True].max_grad
    assert rows[512, False].entropy < 0.5 < 2.0 < rows[512, True].entropy
    assert rows[1, False].max_weight == rows[1, True].max_weight  # √1 = 1: nothing to scale
    # the scaled column barely moves as d_k grows
    assert abs(rows[16, True].max_weight - rows[512, True].max_weight) < 0.1


def test_example_row_is_softmax_of_the_raw_scores():
    raw, p_without, p_with = sc.example_row(64, n_keys=5, seed=2)
    np.testing.assert_allclose(p_without, torch.softmax(torch.tensor(raw), 0).numpy(), atol=1e-12)
    np.testing.assert_allclose(p_with, torch.softmax(torch.tensor(raw) / 8, 0).numpy(), atol=1e-12)
