"""Mixture of experts: routing, gates, capacity and the output against a per-token reference."""
import math

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.model.moe import MoE
from tfviz.trace import run_with_trace


def _moe(**kw):
    cfg = ModelConfig(d_model=16, d_ff=32, n_experts=4, **kw)
    torch.manual_seed(0)  # the layer's weights, the same on every run
    return MoE(cfg).eval(), cfg


def _reference(moe: MoE, x: torch.Tensor, k: int, renorm: bool) -> torch.Tensor:
    """Token by token, no capacity: y = sum over the top-k experts of gate * expert(x)."""
    out = torch.zeros_like(x)
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            p = torch.softmax(moe.router(x[b, t]), -1)
            top_p, top_i = p.topk(k)
            if renorm:
                top_p = top_p / top_p.sum()
            for w, e in zip(top_p, top_i):
                out[b, t] += w * moe.experts[int(e)](x[b, t])
    return out


@pytest.mark.parametrize("k,renorm", [(1, False), (2, False), (2, True)])
def test_moe_output_equals_per_token_reference(k, renorm):
    moe, _ = _moe(moe_top_k=k, moe_renormalize=renorm)
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out, aux, _ = moe(x)
        torch.testing.assert_close(out, _reference(moe, x, k, renorm), atol=1e-5, rtol=1e-5)
    assert float(aux) >= 1.0 - 1e-6  # the Switch loss is at least 1, equal when balanced


def test_gates_sum_to_one_over_chosen_experts_when_renormalised():
    model = Transformer(ModelConfig(n_experts=4, moe_top_k=2, moe_renormalize=True, n_layers=1)).eval()
    tr = run_with_trace(model, list(range(1, 13)))
    np.testing.assert_allclose(tr["expert_weights", 0].sum(-1), 1.0, atol=1e-5)  # float32 rows
    np.testing.assert_allclose(tr["gate_probs", 0].sum(-1), 1.0, atol=1e-5)
    probs, idx = tr["gate_probs", 0], tr["expert_indices", 0]
    np.testing.assert_array_equal(idx[:, 0], probs.argmax(-1))


def _drops_by_hand(indices: np.ndarray, factor: float, k: int, E: int) -> np.ndarray:
    """The capacity rule from its definition, token by token in plain Python: the token at
    position t may use a chosen expert only if that expert has served fewer than
    ceil(factor * (t + 1) * k / E) of the tokens before it."""
    served, dropped = [0] * E, np.zeros(indices.shape, bool)
    for t, chosen in enumerate(indices.tolist()):
        room = max(1, math.ceil(factor * (t + 1) * k / E))
        for s, e in enumerate(chosen):
            if served[e] < room:
                served[e] += 1
            else:
                dropped[t, s] = True
    return dropped


@pytest.mark.parametrize("k,factor", [(1, 0.5), (1, 2.0), (2, 0.5)])
def test_capacity_is_counted_as_the_sentence_goes_and_dropped_tokens_are_accounted(k, factor):
    model = Transformer(ModelConfig(n_experts=4, moe_top_k=k, moe_capacity_factor=factor,
                                    n_layers=1)).eval()
    T = 16
    tr = run_with_trace(model, list(range(1, T + 1)))
    counts, dropped, idx = tr["expert_counts", 0], tr["dropped", 0], tr["expert_indices", 0]
    np.testing.assert_array_equal(dropped, _drops_by_hand(idx, factor, k, 4))
    assert (counts <= math.ceil(factor * T * k / 4)).all()  # the whole sentence's budget
    assert counts.sum() + dropped.sum() == T * k  # every slot is either served or dropped
    if factor == 0.5:  # tight enough to drop; a dropped token gets no expert output
        assert dropped.any()
        assert (tr["expert_weights", 0][dropped] == 0).all()
        if k == 1:
            assert (tr["mlp_out", 0][dropped[:, 0]] == 0).all()


def test_a_tokens_drops_depend_only_on_the_tokens_before_it():
    """Switch Transformer counts capacity over the whole batch, so the number of tokens that
    come *later* decides whether an earlier one is served. Ours counts it per prefix: every
    prefix of a sentence drops exactly what the whole sentence drops at those positions, and
    a KV-cached run token by token (the counts ride in the cache) drops the same too."""
    model = Transformer(ModelConfig(n_experts=4, moe_top_k=1, moe_capacity_factor=0.5,
                                    n_layers=2, vocab_size=64)).eval()
    ids = [int(i) for i in torch.randint(1, 64, (20,), generator=torch.Generator().manual_seed(3))]
    names = [f"blocks.{l}.mlp.hook_dropped" for l in range(2)]
    whole = run_with_trace(model, ids)
    assert any(whole[n].any() for n in names)  # the rule is really exercised
    for cut in (1, 5, 11, 19):
        part = run_with_trace(model, ids[:cut], names=names)
        for n in names:
            np.testing.assert_array_equal(part[n], whole[n][:cut])
    with torch.no_grad():
        logits, cache = model.step(torch.tensor([ids[:4]]))
        steps = [logits[0]]
        for i in ids[4:]:
            logits, cache = model.step(torch.tensor([[i]]), cache)
            steps.append(logits[0])
        full = model(torch.tensor([ids]))[0]
    # Same drops, so the same arithmetic up to rounding: a step reads 1 row, the full run 20,
    # and matmul kernels may round those differently in the last bits.
    torch.testing.assert_close(torch.cat(steps), full, atol=1e-4, rtol=1e-4)
    served = cache.served
    for l, n in enumerate(names):  # the counts in the cache are the served slots of the sentence
        routed = np.bincount(whole[f"blocks.{l}.mlp.hook_expert_indices"][:, 0][~whole[n][:, 0]],
                             minlength=4)
        np.testing.assert_array_equal(served[l][0].numpy(), routed)


def test_top_k_override_changes_routing_without_touching_model():
    model = Transformer(ModelConfig(n_experts=4, moe_top_k=1, n_layers=1)).eval()
    tr = run_with_trace(model, [1, 2, 3], options=RunOptions(moe_top_k=3))
    assert tr["expert_indices", 0].shape == (3, 3)
    assert run_with_trace(model, [1, 2, 3])["expert_indices", 0].shape == (3, 1)


def _rows_routed_to(moe: MoE, expert: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """``n`` random token vectors whose first choice is ``expert`` (rejection sampling)."""
    found = torch.empty(0, moe.cfg.d_model)
    while len(found) < n:
        x = torch.randn(64, moe.cfg.d_model, generator=gen)
        found = torch.cat([found, x[moe.router(x).argmax(-1) == expert]])
    return found[:n]


@pytest.mark.parametrize("k", [1, 2])
def test_a_tokens_row_is_bit_identical_whoever_shares_its_experts(k):
    """Batch invariance by construction: the token at position 5 keeps its output to the bit
    while the other 11 tokens are redrawn so that 0, 1, 5 or all 11 of them share its first
    expert. A dispatch that ran each expert on only its own tokens gave row counts of 1..12,
    and matmul kernels round differently for different row counts (seen here for 1-3 rows)."""
    moe, _ = _moe(moe_top_k=k)  # no capacity limit: nothing is dropped, only sharing changes
    gen = torch.Generator().manual_seed(0)
    token = torch.randn(1, 16, generator=gen)
    with torch.no_grad():
        mine = int(moe.router(token).argmax())
        others = [e for e in range(4) if e != mine]
        outputs, sharing = [], []
        for n_same in (0, 1, 5, 11):
            same = _rows_routed_to(moe, mine, n_same, gen)
            rest = torch.cat([_rows_routed_to(moe, others[i % 3], 1, gen) for i in range(11 - n_same)]
                             + [torch.empty(0, 16)])
            rows = torch.cat([same, rest])[torch.randperm(11, generator=gen)]
            x = torch.cat([rows[:5], token, rows[5:]])[None]  # (1, 12, 16), our token at 5
            out, _, _ = moe(x)
            outputs.append(out[0, 5])
            sharing.append(int((moe.router(x[0]).argmax(-1) == mine).sum()) - 1)
    assert sharing == [0, 1, 5, 11]  # the experiment really changed who shares the expert
    for out in outputs[1:]:
        assert torch.equal(out, outputs[0])  # bit for bit, not approximately
