"""The hand-calculation solver and the real model give the same attention numbers."""
import numpy as np
import pytest

pytest.importorskip("tfviz.model")
pytest.importorskip("tfviz.trace")

from tfviz.exercises.attention import solve_multihead  # noqa: E402
from tfviz.exercises.engine_check import engine_attention  # noqa: E402
from tfviz.exercises.registry import make_instance  # noqa: E402


def check(X, heads, causal, scale=True):
    weights, z = engine_attention(X, heads, causal=causal, scale=scale)
    ours = solve_multihead(X, heads, causal=causal, scale=scale)
    for h, r in enumerate(ours.heads):
        assert np.allclose(weights[h], r.weights, atol=1e-5)
        assert np.allclose(z[h], r.output, atol=1e-5)


def test_flying_arrows_in_the_engine():
    inst = make_instance("flying-arrows")
    d = inst.data
    check(d["X"], [(d["W_q"], d["W_k"], d["W_v"])], causal=False)
    weights, z = engine_attention(d["X"], [(d["W_q"], d["W_k"], d["W_v"])])
    assert np.allclose(z[0][0], inst.field("output").expected, atol=1e-5)


def test_how_are_you_in_the_engine():
    inst = make_instance("how-are-you")
    weights, z = engine_attention(inst.data["X"], inst.data["heads"], causal=True)
    focus = inst.focus
    assert np.allclose(np.concatenate([z[0][focus], z[1][focus]]),
                       inst.field("concat").expected, atol=1e-5)


@pytest.mark.parametrize("seed", range(6))
def test_random_variants_in_the_engine(seed):
    for ex_id, causal in (("flying-arrows", False), ("how-are-you", True)):
        d = make_instance(ex_id, seed).data
        heads = d["heads"] if "heads" in d else [(d["W_q"], d["W_k"], d["W_v"])]
        check(d["X"], heads, causal)


def test_unscaled_and_random_weights():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 6))
    heads = [tuple(rng.normal(size=(6, 2)) for _ in range(3)) for _ in range(3)]
    check(X, heads, causal=True, scale=False)
    check(X, heads, causal=False, scale=True)
