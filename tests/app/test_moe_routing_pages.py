"""Lesson 11 (AppTest) on every kind of mixture of experts the app opens: moe-tiny (softmax ->
top-1, not renormalised, a capacity), mixtral-tiny (Mixtral's softmax -> top-2 -> renormalise,
no capacity), and a random Mixtral (top-2 of 4) and GraniteMoe folder (top-3 of 5 by Granite's
top-k -> softmax, with its multipliers) made by transformers. On each, the page names the
model's own rule from its facts (checked by the claims table, tests/support/claims.py) and
every number it prints about the rules is recomputed here with torch's softmax and topk from
the trace's router logits: how many (token, layer) pairs both orders route alike, the largest
difference between the renormalised and the top-k softmax weights, what softmax -> top-k
keeps of p (least, most, mean), its largest difference from the renormalised weights, and the
model's own weights against its rule. The charts' weights are the hooks' and torch's.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from tests.app.specs import instant_charts
from tests.support.claims import broken, page_words
from tfviz.analysis import moe_rules as mr
from tfviz.config import RunOptions
from tfviz.ui.state import DEFAULT_TEXT

LESSON = "11_moe.py"
FOLDERS = {"mixtral": mr.RENORMALISED, "granitemoe": mr.TOPK_SOFTMAX, "granite32": mr.TOPK_SOFTMAX}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.moe_folders import make_moe_checkpoint

    root = tmp_path_factory.mktemp("moe-pages")
    make_moe_checkpoint(root / "mixtral", "mixtral", experts=4, top_k=2, heads=4, kv_heads=2)
    make_moe_checkpoint(root / "granitemoe", "granitemoe", experts=5, top_k=3, heads=4, kv_heads=1,
                        tie_word_embeddings=True, embedding_multiplier=12.0, attention_multiplier=0.125,
                        residual_multiplier=0.22, logits_scaling=6.0)
    # granite-3.1-1b-a400m's routing (top-8 of 32) in a small deep model: 6 layers, so the
    # page sends one layer at a time (its layer picker), and narrow expert columns
    make_moe_checkpoint(root / "granite32", "granitemoe", experts=32, top_k=8, heads=4, kv_heads=2,
                        layers=6, d_ff=8, tie_word_embeddings=True, embedding_multiplier=12.0,
                        attention_multiplier=0.125, residual_multiplier=0.22, logits_scaling=6.0)
    return root


def torch_numbers(trace, k: int, rule: str) -> dict:
    """The page's numbers, recomputed with torch from the trace's router logits."""
    L = trace.config.n_layers
    h = torch.stack([torch.as_tensor(trace[f"blocks.{i}.mlp.hook_router_logits"]) for i in range(L)])  # (L, T, E)
    p = torch.softmax(h, -1)
    top_p, top_i = p.topk(k, -1)
    top_h, top_hi = h.topk(k, -1)
    renorm = torch.zeros_like(h).scatter(-1, top_i, top_p / top_p.sum(-1, keepdim=True))
    granite = torch.zeros_like(h).scatter(-1, top_hi, torch.softmax(top_h, -1))
    plain = torch.zeros_like(h).scatter(-1, top_i, top_p)
    mass = top_p.sum(-1)
    own = {mr.PLAIN: plain, mr.RENORMALISED: renorm, mr.TOPK_SOFTMAX: granite}[rule]
    served = torch.zeros_like(h)
    used = torch.zeros_like(h)
    for i in range(L):
        idx = torch.as_tensor(trace[f"blocks.{i}.mlp.hook_expert_indices"])
        keep = ~torch.as_tensor(trace[f"blocks.{i}.mlp.hook_dropped"].astype(bool))
        served[i].scatter_(-1, idx, keep.float())
        used[i].scatter_(-1, idx, torch.as_tensor(trace[f"blocks.{i}.mlp.hook_expert_weights"]) * keep)
    return {"same": int((top_i.sort(-1).values == top_hi.sort(-1).values).all(-1).sum()),
            "pairs": L * h.shape[1], "rule_gap": float((renorm - granite).abs().max()),
            "least": float(mass.min()), "most": float(mass.max()), "mean": float(mass.mean()),
            "plain_gap": float((renorm - plain).abs().max()),
            "own_gap": float(((used - own) * served).abs().max())}


def shown_numbers(at) -> dict:
    """The same numbers, as the page printed them."""
    (box,) = [s.value for s in at.success if "**The same experts**" in s.value]
    same = re.search(r"chose the same (?:expert|\d+ experts) for (\d+) of the (\d+) \(token, layer\) pairs", box)
    gap = re.search(r"over every token, layer and expert, is \*\*([0-9.e+-]+)\*\*", box)
    mass = re.search(r"here between ([0-9.]+) and ([0-9.]+) \(mean ([0-9.]+)\)", box)
    plain = re.search(r"largest difference from the renormalised weights is \*\*([0-9.]+)\*\*", box)
    (own,) = [re.search(r"match the model's own \(mlp.hook_expert_weights\) to ([0-9.e+-]+)", c.value)
              for c in at.caption if "match the model's own" in c.value]
    return {"same": int(same.group(1)), "pairs": int(same.group(2)), "rule_gap": float(gap.group(1)),
            "least": float(mass.group(1)), "most": float(mass.group(2)), "mean": float(mass.group(3)),
            "plain_gap": float(plain.group(1)), "own_gap": float(own.group(1))}


def check_page(at, name: str, bundle, rule: str, k: int) -> None:
    assert not at.exception, at.exception
    label = mr.RULE[rule].label
    assert any(m.value.startswith(f"**{name}** routes by **{label}**, {mr.RULE[rule].used_by}:")
               for m in at.markdown)
    assert broken({"mixture-of-experts": page_words(at)}, name, own=bundle) == []
    trace = bundle.trace(DEFAULT_TEXT, options=RunOptions(moe_top_k=k))
    want, got = torch_numbers(trace, k, rule), shown_numbers(at)
    assert (got["same"], got["pairs"]) == (want["same"], want["pairs"]) == (want["pairs"], want["pairs"])
    for key in ("least", "most", "mean", "plain_gap"):  # printed with 3 decimals
        assert got[key] == pytest.approx(want[key], abs=5e-4 + 1e-6), key
    for key in ("rule_gap", "own_gap"):  # printed as 6.0e-08: rounding, under 1e-6 both ways
        assert got[key] < 1e-6 and want[key] < 1e-6, (key, got[key], want[key])
    # the routing chart's ticks are the model's weights, its lines follow the model's rule
    (_, routing), = [c for c in instant_charts(at) if "gates" in c[1]]
    gates = routing["gates"]
    sent = sorted(set(gates["layer"]))  # every layer, or a deep model's picked one
    assert sent == (list(range(trace.config.n_layers)) if trace.config.n_layers <= 4 else [sent[0]])
    for layer in sent:
        rows = gates[gates["layer"] == layer].sort_values(["t", "e"])
        w = np.zeros_like(trace[f"blocks.{layer}.mlp.hook_router_logits"])
        np.put_along_axis(w, trace[f"blocks.{layer}.mlp.hook_expert_indices"],
                          trace[f"blocks.{layer}.mlp.hook_expert_weights"], axis=-1)
        np.testing.assert_allclose(rows["w"].to_numpy().reshape(w.shape), w, atol=5e-5 + 1e-6)
    follow = routing["follow"]
    third = follow[(follow["line"] == 2)]["text"].tolist()
    formula = {mr.PLAIN: "⇒   w = p", mr.RENORMALISED: "⇒   w = p / (",
               mr.TOPK_SOFTMAX: "⇒   w = softmax("}[rule]
    assert all(formula in line for line in third), third[:2]


@pytest.mark.parametrize("model, rule", [("moe-tiny", mr.PLAIN), ("mixtral-tiny", mr.RENORMALISED)])
def test_lesson_11_on_a_bundled_moe(app_page, model, rule):
    import tfviz

    at = app_page(LESSON, model=model)
    bundle = tfviz.load(model)
    check_page(at, model, bundle, rule, bundle.config.moe_top_k)
    if model == "moe-tiny":  # k = 1: the renormalised weight is 1, the Switch keeps p
        assert any("The Switch Transformer keeps w = p" in c.value for c in at.caption)
        assert any("it has a **capacity factor of 3**" in m.value for m in at.markdown)
    else:
        assert any("it sets **no capacity**" in m.value for m in at.markdown)


@pytest.mark.parametrize("kind", list(FOLDERS))
def test_lesson_11_on_a_folder(app_page, folders, monkeypatch, kind):
    """A random Mixtral or GraniteMoe folder: its rule, read from its config, and every number
    recomputed; then top-k moved (a what-if that reruns the model) and checked again."""
    import tfviz
    from tests.app.test_bert_checkpoint_pages import listing

    folder = str(folders / kind)
    listing(monkeypatch, folder)
    at = app_page(LESSON, model=folder)
    assert at.session_state["model"] == folder
    bundle = tfviz.load(folder)
    k = bundle.config.moe_top_k
    check_page(at, folder, bundle, FOLDERS[kind], k)
    assert any("it sets **no capacity**" in m.value for m in at.markdown)
    if kind != "mixtral":
        E = bundle.config.n_experts
        assert any(f"Its router never computes p = softmax(h) over all {E} experts" in c.value
                   for c in at.caption)
    if kind == "granite32":  # deep: the charts carry the layer picker's layer alone
        at.slider(key="moe_layer").set_value(4).run()
        assert not at.exception, at.exception
        charts = instant_charts(at)
        layers = {int(x) for _, data in charts for table in data.values() if "layer" in table
                  for x in table["layer"]}
        assert layers == {4}
        (load_map,) = [data["loadmap"] for _, data in charts if "loadmap" in data]
        assert sorted(set(load_map["row"])) == list(range(6))  # the overview keeps every layer
    at.slider(key="moe_topk").set_value(k + 1).run()
    check_page(at, folder, bundle, FOLDERS[kind], k + 1)
    assert any(f"This page runs it with k = {k + 1}" in c.value for c in at.caption)
