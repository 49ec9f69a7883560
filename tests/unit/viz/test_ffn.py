"""Lesson 10's instant charts: valid Vega-Lite carrying every layer's, head's and token's numbers.

The arrays come from ``tfviz.analysis.ffn.neuron_views`` and ``mixing_views``, which are
checked here against independent computations (torch's topk and einsum, the model's own
hook_z) and against the one-view functions the page used before (``attention_mixing``).
"""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.analysis import ffn as fa
from tfviz.bundle import Bundle
from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz import ffn as ivf
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # what packing to DIGITS decimals may change


def fresh(name: str, text: str):
    torch.manual_seed(0)
    cfg = preset(name)
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    return b.trace(text)


@pytest.fixture(scope="module")
def gpt():
    return fresh("gpt-tiny", "the cat sat")


@pytest.fixture(scope="module")
def bert():
    return fresh("bert-tiny", "a dog ran")


def decode(packed: str) -> np.ndarray:
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_neuron_views_rank_each_layers_neurons_like_torch_topk(gpt):
    views = fa.neuron_views(gpt, 7)
    for layer in range(gpt.config.n_layers):
        post = torch.as_tensor(gpt[f"blocks.{layer}.mlp.hook_post"], dtype=torch.float64)  # (T, d_ff)
        peak = post.max(dim=0).values
        top = torch.topk(peak, 7)  # independent ranking (ties are not expected in real floats)
        assert views.ids[layer].tolist() == top.indices.tolist()
        np.testing.assert_array_equal(views.acts[layer], post[:, top.indices].numpy())
        np.testing.assert_allclose(views.active[layer], (post > 0).double().mean(dim=1).numpy())


def test_mixing_views_match_every_single_view_and_the_models_z(gpt):
    mv = fa.mixing_views(gpt)
    L, H, T, _ = mv.weights.shape
    inside_one_by_one = 0
    for layer in range(L):
        z_model = torch.as_tensor(gpt["z", layer], dtype=torch.float64)  # (T, H, dh)
        for h in range(H):
            w = torch.as_tensor(gpt["pattern", layer][h], dtype=torch.float64)  # (T, T)
            v = torch.as_tensor(gpt[f"blocks.{layer}.attn.hook_v"][:, h], dtype=torch.float64)
            np.testing.assert_allclose(mv.z[layer, h], torch.einsum("qk,kd->qd", w, v).numpy(),
                                       atol=1e-12)  # float64 of the same float32 numbers
            np.testing.assert_allclose(mv.z[layer, h], z_model[:, h].numpy(), atol=1e-5)
            for q in range(T):
                one = fa.attention_mixing(gpt, layer, h, q)
                assert mv.inside[layer, h, q] == one.inside
                np.testing.assert_allclose(mv.values[layer, h], one.values)
                inside_one_by_one += one.inside
    assert mv.model_gap < 1e-5
    summary = mv.summary()
    assert summary["triples"] == L * H * T
    assert summary["inside"] == inside_one_by_one  # the one-query mixes, counted here
    # the same float32 weights, read straight from the trace: min picks one, bit for bit
    assert summary["min weight"] == min(float(gpt["pattern", layer].min()) for layer in range(L))


def test_mixing_views_notice_a_mix_outside_its_values():
    """The vectorised check must fail where ``mixing`` fails: a negative weight."""
    class Fake:  # the smallest stand-in for a trace: one layer, one head, two tokens
        class config:
            n_layers, n_heads = 1, 1
        activations = {"blocks.0.attn.hook_pattern": np.array([[[1.0, 0.0], [-1.0, 2.0]]]),
                       "blocks.0.attn.hook_v": np.array([[[0.0, 4.0]], [[4.0, 0.0]]]),
                       "blocks.0.attn.hook_z": np.array([[[0.0, 4.0]], [[8.0, -4.0]]])}
    mv = fa.mixing_views(Fake())
    assert mv.inside.tolist() == [[[True, False]]]
    assert mv.inside[0, 0, 1] == fa.mixing(np.array([-1.0, 2.0]), Fake.activations[
        "blocks.0.attn.hook_v"][:, 0]).inside


def test_neuron_chart_is_valid_and_carries_every_layers_neurons(gpt):
    cfg = gpt.config
    views = fa.neuron_views(gpt, 32)
    spec = ivf.neuron_chart(views.ids, views.acts, views.active, gpt.tokens, d_ff=cfg.d_ff,
                            activation="ReLU", layer=2, neurons=9)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert p["layer"]["value"] == 2 and p["layer"]["bind"]["max"] == cfg.n_layers - 1
    assert p["neurons"]["value"] == 9
    assert (p["neurons"]["bind"]["min"], p["neurons"]["bind"]["max"]) == (4, 32)
    ids = [int(x) for x in spec["datasets"]["neurons"][0]["s_ids"].split(",")]  # in the data
    assert np.reshape(ids, views.ids.shape).tolist() == views.ids.tolist()
    assert iv.spec_tokens(spec) == token_labels(gpt.tokens)
    rows = spec["datasets"]["neurons"]
    n = len(gpt.tokens)
    assert [r["layer"] for r in rows] == list(range(cfg.n_layers))
    for r in rows:
        post = gpt[f"blocks.{r['layer']}.mlp.hook_post"]
        got = decode(r["v"]).reshape(n, 32)
        np.testing.assert_allclose(got, post[:, views.ids[r["layer"]]], atol=TOL)
    for r in spec["datasets"]["active"]:
        assert r["v"] == pytest.approx(fa.fraction_active(gpt[f"blocks.{r['layer']}.mlp.hook_post"])[r["t"]],
                                       abs=TOL)
    assert len(spec["datasets"]["active"]) == cfg.n_layers * n
    # out of range values are clamped: never an empty chart
    p = params(ivf.neuron_chart(views.ids, views.acts, views.active, gpt.tokens, d_ff=cfg.d_ff,
                                activation="ReLU", layer=9, neurons=2))
    assert p["layer"]["value"] == cfg.n_layers - 1 and p["neurons"]["value"] == 4


def test_gelu_neurons_get_a_diverging_scale(bert):
    views = fa.neuron_views(bert, 32)
    assert views.acts.min() < 0  # GELU's small negatives
    spec = ivf.neuron_chart(views.ids, views.acts, views.active, bert.tokens, d_ff=bert.config.d_ff,
                            activation="GELU")
    validate_jsonschema(spec, SCHEMA)
    scale = spec["vconcat"][0]["encoding"]["color"]["scale"]
    assert scale["scheme"] == iv.DIVERGING_SCHEME and scale["domain"] == {"expr": f"[-{ivf.PEAK}, {ivf.PEAK}]"}
    peaks = [float(x) for x in spec["datasets"]["neurons"][0]["s_peak"].split(",")]  # in the data
    assert peaks == [pytest.approx(np.abs(a).max(), abs=1e-4) for a in views.acts]


def test_mixing_chart_is_valid_and_carries_every_layer_head_and_query(gpt):
    mv = fa.mixing_views(gpt)
    L, H, n, _ = mv.weights.shape
    dh = mv.values.shape[-1]
    spec = ivf.mixing_chart(mv.weights, mv.values, mv.z, mv.inside, gpt.tokens, layer=1, head=3,
                            query=n - 1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert (p["layer"]["value"], p["head"]["value"], p["query"]["value"]) == (1, 3, n - 1)
    assert p["head"]["bind"]["max"] == H - 1 and p["query"]["bind"]["max"] == 15  # the layout's length_cap
    assert iv.spec_tokens(spec) == token_labels(gpt.tokens)
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # a small head's ticks: labelled marks
    wide = np.zeros((1, 1, 64, 64))  # a GPT-2 head at 64 tokens: 64 x 64 value ticks
    big = ivf.mixing_chart(wide, np.zeros((1, 1, 64, 64)), np.zeros((1, 1, 64, 64)),
                           np.ones((1, 1, 64), bool), [str(i) for i in range(64)])
    assert big["usermeta"]["embedOptions"]["renderer"] == "canvas"
    # a SmolLM2 or GPT-2 head (d_head 64) on a short text: its ticks are all made anew on each
    # view change, which SVG made slow (130 ms a head change, against 40 on a canvas)
    short = ivf.mixing_chart(np.zeros((1, 1, 14, 14)), np.zeros((1, 1, 14, 64)), np.zeros((1, 1, 14, 64)),
                             np.ones((1, 1, 14), bool), [str(i) for i in range(14)])
    assert short["usermeta"]["embedOptions"]["renderer"] == "canvas"
    rows = spec["datasets"]["mix"]
    assert [(r["layer"], r["head"]) for r in rows] == [(a, b) for a in range(L) for b in range(H)]
    for r in rows:
        lyr, h = r["layer"], r["head"]
        np.testing.assert_allclose(decode(r["w"]).reshape(n, n), gpt["pattern", lyr][h], atol=TOL)
        np.testing.assert_allclose(decode(r["val"]).reshape(n, dh),
                                   gpt[f"blocks.{lyr}.attn.hook_v"][:, h], atol=TOL)
        np.testing.assert_allclose(decode(r["z"]).reshape(n, dh), gpt["z", lyr][:, h], atol=TOL + 1e-5)
    checks = spec["datasets"]["checks"]
    assert len(checks) == L * H * n
    for c in checks:
        w = gpt["pattern", c["layer"]][c["head"], c["q"]]
        assert c["min"] == pytest.approx(w.min()) and c["sum"] == pytest.approx(w.sum())
        assert c["inside"] == fa.attention_mixing(gpt, c["layer"], c["head"], c["q"]).inside


def test_hostile_tokens_stay_plain_text_in_the_spec(gpt):
    tokens = ["<script>", "'", '"', "\\", "مرحبا", "👩‍💻"]
    n = len(tokens)
    mv = fa.mixing_views(gpt)
    spec = ivf.mixing_chart(mv.weights[:, :, :n, :n], mv.values[:, :, :n], mv.z[:, :, :n],
                            mv.inside[:, :, :n], tokens)
    validate_jsonschema(spec, SCHEMA)
    back = json.loads(json.dumps(spec))
    assert iv.spec_tokens(back) == token_labels(tokens)
    assert "<script>" in iv.spec_tokens(back)[0]


def test_neuron_chart_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data): the strongest
    neurons and each layer's colour range, which follow the sentence, ride in the data, and
    each chart carries its own sentence's activations as torch's topk ranks them."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        views = fa.neuron_views(trace, 16)
        chart = ivf.neuron_chart(views.ids, views.acts, views.active, trace.tokens, d_ff=cfg.d_ff,
                                 activation="ReLU", layer=1, neurons=9)
        ids = np.array([int(x) for x in chart["datasets"]["neurons"][0]["s_ids"].split(",")])
        for r in chart["datasets"]["neurons"]:
            post = torch.tensor(trace[f"blocks.{r['layer']}.mlp.hook_post"], dtype=torch.float64)  # (n, d_ff)
            top = torch.topk(post.max(dim=0).values, 16).indices.numpy()
            assert (ids.reshape(3, 16)[r["layer"]] == top).all()
            np.testing.assert_allclose(decode(r["v"]).reshape(n, 16), post[:, top], atol=TOL)
        return chart, token_labels(trace.tokens)

    check_length_free(build)


def test_mixing_chart_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data), opening on the
    sentence's default query; each carries its own weights, values and z, and the checks
    (smallest weight, sum) are the weights' own, computed here with torch."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        mixes = fa.mixing_views(trace)
        chart = ivf.mixing_chart(mixes.weights, mixes.values, mixes.z, mixes.inside, trace.tokens,
                                 layer=1, head=2, default_query=n // 2)
        assert chart["datasets"]["mix"][0]["dq"] == n // 2 and params(chart)["query"]["value"] == -1
        for r in chart["datasets"]["mix"]:
            np.testing.assert_allclose(decode(r["w"]).reshape(n, n), trace["pattern", r["layer"]][r["head"]],
                                       atol=TOL)
        for r in chart["datasets"]["checks"][::5]:
            # float64 minimum and sum of the same float32 row on both sides
            w = torch.tensor(trace["pattern", r["layer"]][r["head"], r["q"]], dtype=torch.float64)
            assert r["min"] == pytest.approx(float(w.min()), abs=1e-6)
            assert r["sum"] == pytest.approx(float(w.sum()), abs=1e-6)
        return chart, token_labels(trace.tokens)

    built = check_length_free(build)
    assert "qi * ntok" in json.dumps(built[13])
