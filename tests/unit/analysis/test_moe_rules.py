"""The three routing rules of lesson 11 (tfviz/analysis/moe_rules.py), checked against
independent computations: torch's softmax and topk on the same logits; each bundled MoE model's
own weights (its hooks), which its rule recomputed here must give back; and transformers' own
routers on a random Mixtral and GraniteMoe folder (tests/support/moe_folders.py), whose chosen
experts and weights the model's rule, run here on our trace's router logits, must give.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import moe as ma
from tfviz.analysis import moe_rules as mr

ATOL = 1e-6  # float32 weights in [0, 1] computed in another order: a few units of 6e-8


def torch_rules(h: torch.Tensor, k: int) -> dict:
    """rule -> (indices, weights) by torch alone, on logits h (…, E)."""
    p = torch.softmax(h, -1)
    top_p, top_i = p.topk(k, -1)
    top_h, top_hi = h.topk(k, -1)
    return {mr.PLAIN: (top_i, top_p), mr.RENORMALISED: (top_i, top_p / top_p.sum(-1, keepdim=True)),
            mr.TOPK_SOFTMAX: (top_hi, torch.softmax(top_h, -1))}


@pytest.mark.parametrize("k, E", [(1, 4), (2, 4), (2, 8), (8, 32), (5, 5)])
def test_every_rule_is_torchs_softmax_and_topk(k, E):
    g = torch.Generator().manual_seed(k * 100 + E)
    h = torch.randn(3, 11, E, generator=g) * 2  # (L, T, E): three layers of 11 tokens
    c = mr.compare(h.numpy(), k)
    theirs = torch_rules(h, k)
    for rule in mr.RULES:
        np.testing.assert_array_equal(c.indices[rule], theirs[rule][0].numpy(), err_msg=rule)
        np.testing.assert_allclose(c.weights[rule], theirs[rule][1].numpy(), atol=ATOL, err_msg=rule)
    # the numbers the page prints, recomputed from torch's weights
    dense = {rule: torch.zeros_like(h).scatter(-1, *theirs[rule]) for rule in mr.RULES}
    gap = (dense[mr.RENORMALISED] - dense[mr.TOPK_SOFTMAX]).abs().max()
    assert c.rule_gap == pytest.approx(float(gap), abs=ATOL)
    assert c.rule_gap < ATOL  # the same weights, but for rounding
    assert c.plain_gap == pytest.approx(float((dense[mr.RENORMALISED] - dense[mr.PLAIN]).abs().max()), abs=ATOL)
    np.testing.assert_allclose(c.mass, theirs[mr.PLAIN][1].sum(-1).numpy(), atol=ATOL)
    assert c.same_experts.all()
    if k == E:  # every expert chosen: nothing cut away, the three agree
        assert c.plain_gap < ATOL and np.allclose(c.mass, 1, atol=ATOL)
    else:
        assert c.plain_gap > 0.01 and (c.mass < 1).all()


def test_the_plain_weights_are_the_renormalised_times_the_mass():
    """softmax -> top-k gives m times the renormalised weights, m = Σ_T p, per token."""
    h = torch.randn(2, 9, 6, generator=torch.Generator().manual_seed(3))
    c = mr.compare(h.numpy(), 3)
    np.testing.assert_allclose(c.weights[mr.PLAIN], c.weights[mr.RENORMALISED] * c.mass[..., None], atol=ATOL)


def test_a_tie_that_float32_cannot_tell_apart_is_counted():
    """h = (0, 1e-8): the logits differ, their float32 softmax does not, so top-1 of h takes
    expert 1 and top-1 of p the lower number, expert 0: the page says so instead of
    claiming every token agrees."""
    c = mr.compare(np.array([[[0.0, 1e-8], [0.0, 1.0]]], dtype=np.float32), 1)
    assert c.indices[mr.TOPK_SOFTMAX][0, :, 0].tolist() == [1, 1]
    assert c.indices[mr.RENORMALISED][0, :, 0].tolist() == [0, 1]
    assert c.same_experts.tolist() == [[False, True]]


def test_model_rule_reads_the_facts():
    moe = tfviz.load("moe-tiny").facts
    assert mr.model_rule(moe.moe_router, moe.moe_renormalized) == mr.PLAIN
    mixtral = tfviz.load("mixtral-tiny").facts
    assert mr.model_rule(mixtral.moe_router, mixtral.moe_renormalized) == mr.RENORMALISED
    assert mr.model_rule("topk_softmax", True) == mr.TOPK_SOFTMAX
    with pytest.raises(ValueError):
        mr.model_rule(None, False)  # a dense model has no rule


@pytest.mark.parametrize("model, k", [("moe-tiny", 1), ("moe-tiny", 2), ("mixtral-tiny", 2), ("mixtral-tiny", 3)])
def test_the_models_own_weights_are_its_rule(model, k):
    """Recomputed here from the trace's router logits, the model's rule gives the weights the
    model used (its hooks), for every choice it served; moe-tiny drops some (capacity)."""
    from tfviz.config import RunOptions

    bundle = tfviz.load(model)
    trace = bundle.trace("The animal didn't cross the street because it was too tired.",
                         options=RunOptions(moe_top_k=k))
    routes = [ma.routing(trace, layer) for layer in range(bundle.config.n_layers)]
    assert {r.rule for r in routes} == {mr.model_rule(bundle.facts.moe_router, bundle.facts.moe_renormalized)}
    c = mr.compare([r.logits for r in routes], k)
    assert ma.own_rule_gap(routes, c) < ATOL
    for layer, r in enumerate(routes):
        np.testing.assert_array_equal(c.indices[r.rule][layer], r.indices)
    # a wrong rule is seen: the plain weights are not the renormalised ones (k > 1)
    if k > 1:
        wrong = mr.PLAIN if routes[0].rule != mr.PLAIN else mr.RENORMALISED
        assert mr.model_weights_gap(c, wrong, np.stack([r.indices for r in routes]),
                                    np.stack([r.weights for r in routes]),
                                    np.stack([r.dropped for r in routes])) > 0.01


# ----- transformers' own routers ----------------------------------------------------------------
@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.moe_folders import make_moe_checkpoint

    root = tmp_path_factory.mktemp("moe-rules")
    make_moe_checkpoint(root / "mixtral", "mixtral", experts=4, top_k=2, heads=4, kv_heads=2)
    make_moe_checkpoint(root / "granite", "granitemoe", experts=5, top_k=2, heads=4, kv_heads=1,
                        tie_word_embeddings=True, embedding_multiplier=12.0, attention_multiplier=0.125,
                        residual_multiplier=0.22, logits_scaling=6.0)
    return root


@pytest.mark.parametrize("kind, rule", [("mixtral", mr.RENORMALISED), ("granite", mr.TOPK_SOFTMAX)])
def test_the_rule_on_our_logits_gives_transformers_routing(folders, kind, rule):
    """Lesson 11 names the folder's rule from its facts and recomputes it from our trace's
    router logits: those are transformers' experts, token by token (exactly), and its weights;
    the other renormalised rule gives the same weights, the plain one does not."""
    from tests.support.llama_folders import TEXT
    from tests.support.moe_folders import moe_reference

    bundle = tfviz.load(folders / kind)
    facts = bundle.facts
    assert mr.model_rule(facts.moe_router, facts.moe_renormalized) == rule
    ref = moe_reference(folders / kind, bundle.encode(TEXT))
    trace = bundle.trace(TEXT)
    routes = [ma.routing(trace, layer) for layer in range(bundle.config.n_layers)]
    c = mr.compare([r.logits for r in routes], facts.moe_top_k)
    for layer in range(bundle.config.n_layers):
        np.testing.assert_array_equal(c.indices[rule][layer], ref["indices"][layer])
        np.testing.assert_allclose(c.weights[rule][layer], ref["weights"][layer], atol=ATOL)
        other = mr.TOPK_SOFTMAX if rule == mr.RENORMALISED else mr.RENORMALISED
        np.testing.assert_allclose(c.weights[other][layer], ref["weights"][layer], atol=ATOL)
        assert np.abs(c.weights[mr.PLAIN][layer] - ref["weights"][layer]).max() > 0.01
    assert c.rule_gap < ATOL and c.same_experts.all()


def test_the_counts_a_page_prints_by_hand():
    """same_count and mass_range, the numbers lesson 11 prints, on logits small enough to read."""
    from tfviz.analysis import moe_rules as mr

    logits = np.log(np.array([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]], dtype=np.float32))  # (1, 2, 3)
    c = mr.compare(logits, 2)
    assert c.same_count == (2, 2)
    low, high, mean = c.mass_range  # p sums of the two chosen: 0.8 and 0.9
    assert (round(low, 5), round(high, 5), round(mean, 5)) == (0.8, 0.9, 0.85)
