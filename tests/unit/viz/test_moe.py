"""Lesson 11's instant charts: valid Vega-Lite carrying every layer's routing, load and classes.

The numbers are checked against the trace's own hooks (router logits, gates, chosen experts,
drops) and against a direct recount; a hand-made routing with a dropped choice checks that a
drop is drawn and written out.
"""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tests.support.length_free import without_data
from tfviz.analysis import moe as ma
from tfviz.analysis import moe_rules as mr
from tfviz.bundle import Bundle
from tfviz.config import RunOptions, preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz import moe as ivm
from tfviz.viz.kit.instant import spec_tokens
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()


@pytest.fixture(scope="module")
def moe():
    torch.manual_seed(0)
    cfg = preset("moe-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    return b.trace("the cat sat on the mat", options=RunOptions(moe_top_k=2))


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def dropped_routing() -> ma.Routing:
    """Two tokens, three experts, k = 2; token 1's second choice (expert 0) was full."""
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
    return ma.Routing(logits=np.log(probs), probs=probs, indices=np.array([[0, 1], [1, 0]]),
                      weights=np.array([[0.5, 0.3], [0.6, 0.0]]),
                      dropped=np.array([[False, False], [False, True]]), counts=np.array([1, 2, 0]))


def test_routing_chart_is_valid_and_carries_every_layers_gates(moe):
    cfg = moe.config
    routes = [ma.routing(moe, layer) for layer in range(cfg.n_layers)]
    n = len(moe.tokens)
    spec = ivm.routing_chart(routes, moe.tokens, layer=1, pos=n - 1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert p["layer"]["value"] == 1 and p["layer"]["bind"]["max"] == cfg.n_layers - 1
    # the slider spans the layout's 24 tokens (22 bytes); the chart keeps it below the sentence's
    assert n == 22 and p["pos"]["value"] == n - 1 and p["pos"]["bind"]["max"] == 23
    assert p["posi"]["expr"] == "pos < 0 ? dpos : min(pos, ntok - 1)"
    assert spec_tokens(spec) == token_labels(moe.tokens)
    gates = spec["datasets"]["gates"]
    assert len(gates) == cfg.n_layers * n * cfg.n_experts
    for g in gates:
        hooks = f"blocks.{g['layer']}.mlp."
        assert g["p"] == pytest.approx(moe[hooks + "hook_gate_probs"][g["t"], g["e"]], abs=5e-5)
        picked = g["e"] in moe[hooks + "hook_expert_indices"][g["t"]].tolist()
        assert (g["status"] != "not chosen") == picked
    follow = spec["datasets"]["follow"]
    for r_layer, r in enumerate(routes):
        for t in range(n):
            lines = [f["text"] for f in follow if f["layer"] == r_layer and f["t"] == t]
            assert lines == ivm.routing_lines(r, t)
            h = moe[f"blocks.{r_layer}.mlp.hook_router_logits"][t]
            assert ", ".join(f"{v:.2f}" for v in h) in lines[0]


def test_a_dropped_choice_is_marked_and_explained():
    r = dropped_routing()
    spec = ivm.routing_chart([r], ["a", "b"], pos=1)
    validate_jsonschema(spec, SCHEMA)
    status = {(g["t"], g["e"]): g["status"] for g in spec["datasets"]["gates"]}
    assert status == {(0, 0): "chosen", (0, 1): "chosen", (0, 2): "not chosen",
                      (1, 0): "dropped (expert full)", (1, 1): "chosen", (1, 2): "not chosen"}
    lines = ivm.routing_lines(r, 1)
    assert lines[2] == "𝒯 = the 2 largest p = {1, 0}   ⇒   w = p, adding up to 0.700"
    assert lines[3] == "y = 0.600 · E₁(x) + 0.000 · E₀(x)"
    assert lines[4].startswith("⚠") and len(ivm.routing_lines(r, 0)) == 4
    load = ivm.load_chart([r], 1)
    validate_jsonschema(load, SCHEMA)
    counted = {(x["expert"], x["kind"]): x["tokens"] for x in load["datasets"]["load"]}
    assert counted == {("expert 0", "served"): 1, ("expert 1", "served"): 2,
                       ("expert 2", "served"): 0, ("expert 0", "dropped"): 1,
                       ("expert 1", "dropped"): 0, ("expert 2", "dropped"): 0}


def test_load_chart_counts_every_layer(moe):
    cfg = moe.config
    routes = [ma.routing(moe, layer) for layer in range(cfg.n_layers)]
    cap = ma.capacity_of(cfg.moe_capacity_factor, len(moe.tokens), 2, cfg.n_experts)
    spec = ivm.load_chart(routes, cap, layer=1)
    validate_jsonschema(spec, SCHEMA)
    assert params(spec)["layer"]["value"] == 1
    for x in spec["datasets"]["load"]:
        e = int(x["expert"].split()[1])
        hooks = f"blocks.{x['layer']}.mlp."
        chosen = moe[hooks + "hook_expert_indices"]
        dropped = moe[hooks + "hook_dropped"].astype(bool)
        want = (chosen[~dropped] == e).sum() if x["kind"] == "served" else (chosen[dropped] == e).sum()
        assert x["tokens"] == want  # a recount from the hooks
    rules = [lyr for lyr in spec["layer"] if lyr["mark"]["type"] == "rule"]
    assert rules[0]["encoding"]["y"]["field"] == "capacity"
    assert [x["capacity"] for x in spec["datasets"]["load"] if "capacity" in x] == [cap]  # one row
    assert all(lyr["mark"]["type"] != "rule" for lyr in ivm.load_chart(routes, None)["layer"])


def test_class_chart_carries_each_layers_table():
    tables = [(["noun", "verb"], [0, 1, 2], np.array([[3, 1, 0], [0, 0, 0]])),
              (["verb", "noun", "punct"], [0, 1, 2], np.array([[1, 1, 2], [0, 4, 0], [1, 0, 0]]))]
    spec = ivm.class_chart(tables, layer=1, title="Token class × expert (training)")
    validate_jsonschema(spec, SCHEMA)
    assert params(spec)["layer"] == {"name": "layer", "value": 1, "bind": {
        "input": "range", "min": 0, "max": 1, "step": 1, "name": "Layer "}}
    rows = {(r["layer"], r["class"], r["ei"]): (r["share"], r["count"]) for r in spec["datasets"]["classes"]}
    for layer, (classes, experts, counts) in enumerate(tables):
        shares = ma.row_shares(counts)
        for ci, c in enumerate(classes):
            for ei in range(len(experts)):
                assert rows[layer, c, ei] == (pytest.approx(shares[ci, ei], abs=5e-5), counts[ci, ei])
    assert rows[0, "verb", 0] == (0.0, 0)  # a class with no tokens stays at zero, no division
    assert spec["title"]["text"]["expr"] == '"Token class × expert (training), layer " + layer'


def test_routing_chart_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data), each carrying its
    own tokens' gates, checked against torch's softmax of the router's logits and torch's
    top-k, and opening on its own last token unless a link names one."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("moe-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n], options=RunOptions(moe_top_k=2))
        routes = [ma.routing(trace, layer) for layer in range(cfg.n_layers)]
        chart = ivm.routing_chart(routes, trace.tokens, layer=1)
        gates = chart["datasets"]["gates"]
        assert len(gates) == cfg.n_layers * n * cfg.n_experts
        for g in gates:
            hooks = f"blocks.{g['layer']}.mlp."
            logits = torch.as_tensor(trace[hooks + "hook_router_logits"], dtype=torch.float64)
            probs = torch.softmax(logits, dim=-1)  # (T, E), independent of the model's own gates
            # float32 gates, sent with 4 decimals
            assert g["p"] == pytest.approx(float(probs[g["t"], g["e"]]), abs=5e-5 + 1e-6)
            top = torch.topk(probs[g["t"]], 2).indices.tolist()
            assert (g["status"] != "not chosen") == (g["e"] in top)
        assert gates[0]["dpos"] == 0  # a link naming no token: the first one
        assert params(chart)["pos"]["value"] == -1
        return chart, token_labels(trace.tokens)

    built = check_length_free(build)
    heat = built[13]["vconcat"][0]
    assert heat["encoding"]["y"]["scale"]["domain"] == {"expr": "sequence(0, ntok)"}
    assert heat["height"] == {"step": 28} and built[24]["vconcat"][0]["height"] == {"step": 26}
    # a link's token past the sentence's end is kept below it in the browser (posi), and the
    # spec stays the same whatever the sentence
    linked = ivm.routing_chart([ma.routing(b.trace("abc"), 0)], ["a", "b", "c"], pos=9)
    assert params(linked)["pos"]["value"] == 9


def test_the_load_chart_holds_nothing_of_the_sentence():
    """Its capacity (which grows with the sentence) rides in the data: sentences of two lengths
    share one spec, so a new sentence swaps the chart's data instead of drawing it anew."""
    torch.manual_seed(0)
    cfg = preset("moe-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    specs, caps = [], []
    for text in ("the dog sat", "the animal didn't cross the street because it was too tired"):
        tr = b.trace(text, options=RunOptions(moe_top_k=2))
        routes = [ma.routing(tr, layer) for layer in range(cfg.n_layers)]
        cap = ma.capacity_of(cfg.moe_capacity_factor, len(tr.tokens), 2, cfg.n_experts)
        spec = ivm.load_chart(routes, cap, layer=1)
        validate_jsonschema(spec, SCHEMA)
        assert spec["datasets"]["load"][0]["capacity"] == cap
        specs.append(without_data(spec))
        caps.append(cap)
    assert caps[0] != caps[1] and specs[0] == specs[1]


# ----- the routing rules: each token's lines, the weights drawn, the rules side by side ----------
def one_token(rule: str, logits) -> ma.Routing:
    """One token's routing under ``rule``, computed here with torch (k = 2)."""
    h = torch.tensor([logits], dtype=torch.float32)
    p = torch.softmax(h, -1)
    if rule == mr.TOPK_SOFTMAX:
        top_h, idx = h.topk(2, -1)
        w = torch.softmax(top_h, -1)
    else:
        w, idx = p.topk(2, -1)
        w = w / w.sum(-1, keepdim=True) if rule == mr.RENORMALISED else w
    counts = torch.zeros(h.shape[-1], dtype=torch.long).scatter_add(0, idx[0], torch.ones(2, dtype=torch.long))
    return ma.Routing(h.numpy(), p.numpy(), idx.numpy(), w.numpy(), np.zeros((1, 2), bool),
                      counts.numpy(), rule)


@pytest.mark.parametrize("rule, line", [
    (mr.PLAIN, "𝒯 = the 2 largest p = {0, 1}   ⇒   w = p, adding up to 0.835"),
    (mr.RENORMALISED, "𝒯 = the 2 largest p = {0, 1}   ⇒   w = p / (p₀ + p₁) = p / 0.835"),
    (mr.TOPK_SOFTMAX, "𝒯 = the 2 largest h = {0, 1}   ⇒   w = softmax(h₀, h₁)"),
])
def test_a_tokens_lines_follow_its_models_rule(rule, line):
    """h = (2, 1, 0, 0): p = (0.610, 0.225, 0.083, 0.083), the top two hold 0.835 of it; the
    renormalised and the top-k softmax weights are 0.731 and 0.269, the plain ones p itself."""
    lines = ivm.routing_lines(one_token(rule, [2.0, 1.0, 0.0, 0.0]), 0)
    assert lines[0] == "router logits h(x) = [2.00, 1.00, 0.00, 0.00]"
    assert lines[1] == "gates p = softmax(h) = [0.610, 0.225, 0.083, 0.083]"
    assert lines[2] == line
    assert lines[3] == ("y = 0.610 · E₀(x) + 0.225 · E₁(x)" if rule == mr.PLAIN
                        else "y = 0.731 · E₀(x) + 0.269 · E₁(x)")


def test_many_experts_get_narrow_columns_and_their_range():
    """Granite's 32 experts: 24 px a column numbered without "expert", no number in each cell,
    a token's 32 logits given by their range; the y of a top-8 token on two lines."""
    h = np.linspace(-2, 2, 32, dtype=np.float32)[None, :]
    idx, w = mr.route(h, 8, mr.TOPK_SOFTMAX)
    p = mr.softmax32(h)
    r = ma.Routing(h, p, idx, w, np.zeros((1, 8), bool), np.bincount(idx[0], minlength=32), mr.TOPK_SOFTMAX)
    lines = ivm.routing_lines(r, 0)
    assert lines[0] == "router logits h(x): 32 numbers, from -2.00 to 2.00"
    assert lines[1] == f"gates p = softmax(h) over all 32: from {p.min():.3f} to {p.max():.3f}"
    assert lines[2] == ("𝒯 = the 8 largest h = {31, 30, 29, 28, 27, 26, 25, 24}   ⇒   "
                        "w = softmax(those 8 logits)")
    assert lines[3].startswith("y = ") and lines[4].startswith("    + ") and len(lines) == 5
    spec = ivm.routing_chart([r], ["a"], drops=False)
    validate_jsonschema(spec, SCHEMA)
    heat = spec["vconcat"][0]
    assert heat["width"] == {"step": 24} and heat["encoding"]["x"]["axis"]["labelExpr"] == "datum.value"
    assert not [lyr for lyr in heat["layer"] if lyr["mark"]["type"] == "text"]
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # 2 x 16 x 32 = 1,024 marks: SVG still
    legend = spec["vconcat"][1]["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert legend == ["not chosen", "chosen"]  # a model without capacity drops nothing


def test_the_routing_chart_draws_the_weights_the_model_used(moe):
    """The tick of each chosen expert is the model's own weight (hook_expert_weights): here
    moe-tiny's rule, softmax -> top-k, so w = p, computed again with torch."""
    routes = [ma.routing(moe, layer) for layer in range(moe.config.n_layers)]
    spec = ivm.routing_chart(routes, moe.tokens)
    for layer in range(moe.config.n_layers):
        h = torch.as_tensor(moe[f"blocks.{layer}.mlp.hook_router_logits"])
        top_p, top_i = torch.softmax(h, -1).topk(2, -1)
        kept = ~torch.as_tensor(moe[f"blocks.{layer}.mlp.hook_dropped"].astype(bool))
        want = torch.zeros_like(h).scatter(1, top_i, top_p * kept).numpy()
        got = np.zeros_like(want)
        for g in spec["datasets"]["gates"]:
            if g["layer"] == layer:
                got[g["t"], g["e"]] = g["w"]
        np.testing.assert_allclose(got, want, atol=5e-5 + 1e-6)


@pytest.mark.parametrize("rule", mr.RULES)
def test_rules_chart_carries_each_rules_weights_and_the_mass(moe, rule):
    """Every rule's weights for every token, layer and choice, and Σ_T p per token, against
    torch's softmax and top-k on the trace's router logits; the model's own rule is named."""
    L = moe.config.n_layers
    compared = mr.compare([moe[f"blocks.{layer}.mlp.hook_router_logits"] for layer in range(L)], 2)
    spec = ivm.rules_chart(compared, moe.tokens, own=rule, layer=1, pos=3)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    assert params(spec)["layer"]["value"] == 1 and params(spec)["pos"]["value"] == 3
    labels = spec["vconcat"][0]["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert len(labels) == 3 and [x.endswith(": this model's") for x in labels] == [r == rule for r in mr.RULES]
    rows = spec["datasets"]["weights"]
    assert len(rows) == L * len(moe.tokens) * 2 * 3
    for layer in range(L):
        h = torch.as_tensor(moe[f"blocks.{layer}.mlp.hook_router_logits"])  # (T, E)
        p = torch.softmax(h, -1)
        top_p, top_i = p.topk(2, -1)
        top_h, top_hi = h.topk(2, -1)
        want = {mr.PLAIN: (top_i, top_p), mr.RENORMALISED: (top_i, top_p / top_p.sum(-1, keepdim=True)),
                mr.TOPK_SOFTMAX: (top_hi, torch.softmax(top_h, -1))}
        for row in (r for r in rows if r["layer"] == layer):
            idx, w = want[mr.RULES[row["ri"]]]
            assert row["expert"] == f"expert {int(idx[row['t'], row['j']])}"
            assert row["w"] == pytest.approx(float(w[row["t"], row["j"]]), abs=5e-5 + 1e-6)
        masses = {m["t"]: m["m"] for m in spec["datasets"]["mass"] if m["layer"] == layer}
        np.testing.assert_allclose([masses[t] for t in range(len(moe.tokens))], top_p.sum(-1).numpy(),
                                   atol=5e-5 + 1e-6)


def test_load_map_counts_every_layer_against_an_even_share(moe):
    routes = [ma.routing(moe, layer) for layer in range(moe.config.n_layers)]
    spec = ivm.load_map_chart(routes)
    validate_jsonschema(spec, SCHEMA)
    assert "params" not in spec  # an overview: no view of its own
    E = moe.config.n_experts
    for x in spec["datasets"]["loadmap"]:
        hooks = f"blocks.{x['row']}.mlp."
        chosen = moe[hooks + "hook_expert_indices"]
        served = chosen[~moe[hooks + "hook_dropped"].astype(bool)]
        assert x["tokens"] == (served == x["e"]).sum()  # a recount from the hooks
        assert x["even"] == pytest.approx(x["tokens"] / (len(served) / E), abs=5e-5)
