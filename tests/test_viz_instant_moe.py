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
from tfviz.bundle import Bundle
from tfviz.config import RunOptions, preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz import instant_moe as ivm
from tfviz.viz.instant import spec_tokens
from tfviz.viz.style import token_labels

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
    assert lines[1] == "𝒯 = {1, 0}   ⇒   y = 0.600 · E₁(x) + 0.000 · E₀(x)"
    assert lines[2].startswith("⚠") and len(ivm.routing_lines(r, 0)) == 2
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
