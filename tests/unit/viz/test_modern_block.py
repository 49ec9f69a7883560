"""The charts lessons 9, 10 and 12 draw for the modern block (llama-tiny), and the ones every
model now gets beside them (RMSNorm next to LayerNorm, each neuron's steps, the activation
curves): each validates against altair's Vega-Lite v6 schema, opens on the view asked for,
and carries the analysis' numbers (tests/unit/analysis/test_modern_block.py checks those against
torch)."""
import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import ffn as fa
from tfviz.analysis import forward as fw
from tfviz.analysis import layernorm as lna
from tfviz.viz.kit import instant as iv
from tfviz.viz import block as ivb
from tfviz.viz import ffn as ivf
from tfviz.viz import forward as ifw
from tfviz.viz.forward import plain_formula

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9
TEXT = "the cat sat on the mat because it was tired."


@pytest.fixture(scope="module", params=["llama-tiny", "gpt-tiny"])
def model(request):
    bundle = tfviz.load(request.param)
    return bundle, bundle.trace(TEXT)


def decode(packed: str) -> np.ndarray:
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_lesson_9s_charts_speak_of_the_models_norm(model):
    bundle, tr = model
    every = lna.every_norm(tr, lna.gamma_beta(bundle.weights()))
    rms = every.kind == "rmsnorm"
    stats = ivb.token_stats(every.stats, every.norms, tr.tokens, layer=1, norm=2, kind=every.kind)
    worked = ivb.worked_example(every.mean, every.sigma, every.trace_mean, every.trace_sigma, every.steps,
                                every.vectors, every.norms, tr.tokens, d_model=64, layer=1, norm=2, pos=3,
                                kind=every.kind)
    pair = lna.every_pair(tr)
    both = ivb.norm_pair_chart(pair.numbers, pair.vectors, pair.norms, tr.tokens, kind=every.kind,
                               layer=1, norm=2, pos=3)
    for spec in (stats, worked, both):
        validate_jsonschema(spec, SCHEMA)
        assert params(spec)["layer"]["value"] == 1 and params(spec)["norm"]["value"] == 2
        assert params(spec)["norm"]["bind"]["name"] == ("Which RMSNorm " if rms else "Which LayerNorm ")
    assert params(worked)["pos"]["value"] == params(both)["pos"]["value"] == 3
    assert {r["stat"] for r in stats["datasets"]["stats"]} == set(ivb.RMS_STATS if rms else ivb.STATS)
    assert params(worked)["columns"]["value"] == list(every.columns)
    assert params(worked)["vectors"]["value"] == list(ivb.RMS_VECTORS if rms else ivb.VECTORS)
    lines = " ".join(str(v) for v in worked["vconcat"][0]["layer"])
    assert ("ln.hook_mean" in lines) != rms and "ln.hook_scale" in lines
    assert worked["description"].startswith("RMSNorm" if rms else "LayerNorm")
    # the side-by-side chart: every (layer, norm, token), μ, σ, rms, the model's hook_scale
    rows = both["datasets"]["pair"]
    assert len(rows) == 3 * 2 * len(tr.tokens)
    for r in rows:
        j = every.norms.index(lna.NORM_ORDER[r["norm"]])
        mu, sigma, rms_, scale = pair.numbers[r["layer"], j, r["pos"]]
        assert abs(r["mean"] - mu) <= TOL and abs(r["sigma"] - sigma) <= TOL and abs(r["rms"] - rms_) <= TOL
        assert abs(r["scale"] - scale) <= TOL
    for r in both["datasets"]["pair_vectors"]:
        j = every.norms.index(lna.NORM_ORDER[r["norm"]])
        np.testing.assert_allclose(decode(r["v"]), pair.vectors[r["layer"], j, r["pos"]].ravel(), atol=TOL)
    own = "This model uses RMSNorm" if rms else "This model uses LayerNorm"
    assert own in str(both["vconcat"][0]["layer"])


def test_the_gamma_map_names_the_norm(model):
    from tfviz.viz.block import gamma_beta_heatmap

    bundle, _ = model
    name = bundle.facts.norm_name
    spec = gamma_beta_heatmap(lna.gamma_beta(bundle.weights()), which="gamma", norm_name=name)
    assert spec["title"] == f"Learned γ (gain) of every {name}" and f"{name}s (rows)" in spec["description"]


def test_lesson_10s_neuron_steps_and_curves(model):
    bundle, tr = model
    steps = fa.neuron_steps(tr, bundle.weights())
    spec = ivf.neuron_steps_chart(steps.ids, steps.values, steps.share, steps.output, steps.model_output,
                                  tr.tokens, columns=steps.columns, d_ff=steps.d_ff, layer=2, pos=4)
    validate_jsonschema(spec, SCHEMA)
    assert params(spec)["layer"]["value"] == 2 and params(spec)["pos"]["value"] == 4
    assert params(spec)["columns"]["value"] == list(steps.columns)
    assert len(steps.columns) == (4 if bundle.facts.gated else 2)
    rows = spec["datasets"]["nsteps"]
    assert len(rows) == 3 * len(tr.tokens)
    for r in rows:
        assert [int(i) for i in r["ids"].split(",")] == steps.ids[r["layer"], r["pos"]].tolist()
        np.testing.assert_allclose(decode(r["v"]), steps.values[r["layer"], r["pos"]].ravel(), atol=TOL)
    for r in spec["datasets"]["nout"]:
        hand, own = decode(r["v"]).reshape(2, -1)
        np.testing.assert_allclose(hand, steps.output[r["layer"], r["pos"]], atol=TOL)
        np.testing.assert_allclose(own, steps.model_output[r["layer"], r["pos"]], atol=TOL)
    own = fa.curve_name(bundle.config.activation)
    curves = ivf.activation_curves_chart(fa.activation_curves(), own=own)
    validate_jsonschema(curves, SCHEMA)
    assert own in curves["title"] and {r["function"] for r in curves["datasets"]["rows"]} == {"ReLU", "GELU", "SiLU"}


def test_the_modern_walk_charts_its_steps():
    bundle = tfviz.load("llama-tiny")
    tr = bundle.trace(TEXT)
    steps = [fw.forward_steps(tr, head=h, token_strings=bundle.token_strings) for h in range(4)]
    spec = ifw.walk_chart(steps, step=5, head=3)
    validate_jsonschema(spec, SCHEMA)
    assert params(spec)["step"]["value"] == 5 and params(spec)["head"]["value"] == 3
    notes = spec["datasets"]["notes"]
    # the RoPE and attention steps differ by head: one set of notes per head; the rest once
    rope = [n for n in notes if n["step"] == 3]
    assert sorted({n["head"] for n in rope}) == [0, 1, 2, 3]
    assert {n["head"] for n in notes if n["step"] == 2} == {-1}  # RMSNorm: the same for every head
    formulas = {plain_formula(s.formula) for s in steps[0]}
    assert "x̂ = x / (rms(x)) ⊙ γ,   rms(x) = √(mean(x^2) + ε)" in formulas
    assert "h = SiLU(x̂ W_gate) ⊙ x̂ W_in,   FFN(x̂) = h W_out" in formulas
    assert "x ← x + Attn(RMS(x))" in formulas and "α = softmax((R(q) R(k)ᵀ) / √d_k + M),   z = α V" in formulas
