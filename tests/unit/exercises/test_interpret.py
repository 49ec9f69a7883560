"""The looking-inside exercises (dla-by-hand, patching-map, induction-score): every answer and
every slip recomputed another way.

Attribution: torch's own layer_norm for the logit, TransformerLens's recipe for the shares
(centre the stack of parts, divide by the frozen scale, fold γ into u), and tfviz.interpret's
direct_logit_attribution on a one-layer model whose head wrote a and whose MLP wrote b.
Patching: tfviz.interpret's Patching.restored() for the fractions, and the cells read by plain
loops. Induction: tfviz.interpret's induction_score and previous_token_score, and loops for
the slips. Float64 on both sides of each comparison, so 1e-9 where both compute the same
numbers in another order, exact where the answer is a position.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig
from tfviz.exercises.registry import make_instance
from tfviz.interpret import Patching, direct_logit_attribution, induction_score, previous_token_score
from tfviz.trace import Trace

SEEDS = [None, *range(10)]


def box(inst, name):
    return inst.field(name)


def slip(inst, field, name) -> np.ndarray:
    return next(np.ravel(m.values) for m in box(inst, field).mistakes if m.name == name)


# --- direct logit attribution -----------------------------------------------------------------

def one_layer_trace(a, b, gamma, u, s) -> tuple[Trace, dict]:
    """A pre-LN model of width 4 with one head (W_O the identity, so its output is its z = a),
    an MLP that wrote b, no embedding, and a final LayerNorm (γ, β = 0); token 0's unembedding
    column is u. Its logits are the final norm of a + b times W_U, computed by torch."""
    cfg = ModelConfig(d_model=4, n_heads=1, n_layers=1, d_ff=4, norm="pre", final_norm=True,
                      vocab_size=2, positional="rope", bias=False, ln_eps=0.0)
    x = torch.tensor(np.add(a, b), dtype=torch.float64)
    W_E = np.stack([u, np.zeros(4)])  # (vocab, d): tied, so W_U = W_E^T
    ln = torch.nn.functional.layer_norm(x, (4,), torch.tensor(gamma, dtype=torch.float64), None, 0.0)
    acts = {"hook_embed": np.zeros((1, 4)), "blocks.0.attn.hook_z": np.asarray(a, float)[None, None],
            "blocks.0.hook_mlp_out": np.asarray(b, float)[None], "ln_final.hook_scale": np.array([s]),
            "blocks.0.hook_resid_post": x.numpy()[None], "logits": (ln @ torch.from_numpy(W_E).T).numpy()[None]}
    weights = {"W_E": W_E, "W_O": np.eye(4)[None, None], "ln_final.w": np.asarray(gamma, float),
               "ln_final.b": np.zeros(4)}
    return Trace(activations=acts, config=cfg), weights


@pytest.mark.parametrize("seed", SEEDS)
def test_dla_answers_and_slips_recomputed(seed):
    inst = make_instance("dla-by-hand", seed)
    d = inst.data
    a, b, gamma, u = (np.array(d[k], dtype=float) for k in ("a", "b", "gamma", "u"))
    s = float(d["s"])
    x = torch.tensor(a + b, dtype=torch.float64)
    assert s == pytest.approx(float(x.std(unbiased=False)), abs=1e-12)  # the scale of x itself
    logit = float(torch.nn.functional.layer_norm(x, (4,), torch.from_numpy(gamma), None, 0.0)
                  @ torch.from_numpy(u))
    stack = torch.tensor(np.stack([a, b]))  # TransformerLens: centre, divide by the frozen scale
    shares = ((stack - stack.mean(-1, keepdim=True)) / s) @ torch.from_numpy(gamma * u)
    # float64 throughout on four-number vectors: only float64 rounding separates the two paths.
    np.testing.assert_allclose(box(inst, "shares").expected, shares.numpy(), atol=1e-9)
    assert float(box(inst, "logit").expected) == pytest.approx(logit, abs=1e-9)
    trace, weights = one_layer_trace(a, b, gamma, u, s)
    dla = direct_logit_attribution(trace, 0, 0, weights=weights)
    assert [dla["L0H0"], dla["L0 MLP"]] == pytest.approx(list(box(inst, "shares").expected), abs=1e-9)
    assert dla.total == pytest.approx(logit, abs=1e-9) and dla.logit == pytest.approx(logit, abs=1e-9)
    slips = {  # each slip, the torch way
        "no_center": (stack / s) @ torch.from_numpy(gamma * u),
        "own_scale": ((stack - stack.mean(-1, keepdim=True)) / stack.std(-1, unbiased=False, keepdim=True))
        @ torch.from_numpy(gamma * u),
        "unscaled": (stack - stack.mean(-1, keepdim=True)) @ torch.from_numpy(gamma * u),
        "no_gamma": ((stack - stack.mean(-1, keepdim=True)) / s) @ torch.from_numpy(u),
    }
    for name, want in slips.items():
        if any(m.name == name for m in box(inst, "shares").mistakes):
            np.testing.assert_allclose(slip(inst, "shares", name), want.numpy(), atol=1e-9)
            np.testing.assert_allclose(slip(inst, "logit", name), float(want.sum()), atol=1e-9)


# --- reading a patching map -------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_patching_map_answers_and_slips_recomputed(seed):
    inst = make_instance("patching-map", seed)
    v, C, c = np.asarray(inst.data["patched"]), inst.data["clean"], inst.data["corrupt"]
    f = Patching(values=v, clean=C, corrupt=c, hook="hook_resid_pre", by="position",
                 tokens=inst.tokens).restored()
    layers, positions = v.shape
    best = max(range(positions), key=lambda p: v[0, p])
    assert tuple(box(inst, "cell").expected) == (0, best)
    assert f[0, best] == 1.0  # at layer 0 the changed word itself brings the clean run back
    first = next(layer for layer in range(layers) if f[layer, -1] > 0.5)
    assert float(box(inst, "layer").expected) == first
    assert float(box(inst, "fraction").expected) == pytest.approx(f[first, -1], abs=1e-12)
    worst = min(range(positions), key=lambda p: v[0, p])
    want = {("cell", "from_one"): (1, best + 1), ("cell", "transposed"): (best, 0),
            ("cell", "smallest"): (0, worst), ("layer", "from_one"): (first + 1,),
            ("layer", "raw_half"): (next(layer for layer in range(layers) if v[layer, -1] > C / 2),),
            ("fraction", "no_baseline"): (v[first, -1] / C,),
            ("fraction", "not_restored"): (1 - f[first, -1],)}
    for (field, name), value in want.items():
        if any(m.name == name for m in box(inst, field).mistakes):
            np.testing.assert_allclose(slip(inst, field, name), value, atol=1e-12)
    if seed is not None:  # the 'more than half' reading is not the raw value's C / 2
        assert slip(inst, "layer", "raw_half")[0] != first


# --- induction and previous-token scores ------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_induction_answers_and_slips_recomputed(seed):
    inst = make_instance("induction-score", seed)
    A, n = np.asarray(inst.data["pattern"]), int(inst.data["half"])
    assert inst.tokens[:n] == inst.tokens[n:] and len(set(inst.tokens[:n])) == n
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-12)
    assert (np.triu(A, 1) == 0).all()  # a decoder's head: no weight on later tokens
    assert float(box(inst, "induction").expected) == pytest.approx(induction_score(A, n), abs=1e-12)
    assert float(box(inst, "previous").expected) == pytest.approx(previous_token_score(A), abs=1e-12)
    targets = [A[n + i, i + 1] for i in range(n)]
    below = [A[q, q - 1] for q in range(1, 2 * n)]
    want = {("induction", "same_copy"): np.mean([A[n + i, i] for i in range(n)]),
            ("induction", "summed"): sum(targets),
            ("induction", "from_n_minus_1"): np.mean([A[n - 1, 0], *targets]),
            ("previous", "self_weight"): np.mean([A[q, q] for q in range(1, 2 * n)]),
            ("previous", "summed"): sum(below),
            ("previous", "with_first"): sum(below) / (2 * n)}
    for (field, name), value in want.items():
        if any(m.name == name for m in box(inst, field).mistakes):
            assert slip(inst, field, name)[0] == pytest.approx(value, abs=1e-12)
