"""Lesson 9's instant charts (issue #15) and the all-at-once LayerNorm numbers behind them.

``every_norm`` is checked against torch's own ``F.layer_norm`` and the model's hooks; the
specs validate against altair's Vega-Lite v6 schema, decode to those numbers for every
layer, norm and token, and open on the view asked for.
"""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import layernorm as lna
from tfviz.bundle import Bundle
from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz import block as ivb
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    trace = b.trace("the cat sat")
    params = lna.gamma_beta(b.weights())
    return trace, params, lna.every_norm(trace, params)


def decode(packed: str) -> np.ndarray:
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def by_name(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_every_norm_matches_torch_layer_norm_and_the_model(gpt):
    trace, params, every = gpt
    cfg = trace.config
    assert every.norms == ("ln1", "ln2")
    n, d = len(trace.tokens), cfg.d_model
    assert every.stats.shape == (cfg.n_layers, 2, 4, n) and every.vectors.shape == (cfg.n_layers, 2, n, 3, d)
    for layer in range(cfg.n_layers):
        for j, norm in enumerate(every.norms):
            gamma, beta = params[f"L{layer} {norm}"]
            # float64 on both sides, from the same float32 inputs
            x = torch.tensor(lna.ln_input(trace, layer, norm), dtype=torch.float64)  # (T, d)
            out = F.layer_norm(x, (d,), torch.tensor(gamma, dtype=torch.float64),
                               torch.tensor(beta, dtype=torch.float64), cfg.ln_eps).numpy()
            plain = F.layer_norm(x, (d,), eps=cfg.ln_eps).numpy()
            np.testing.assert_allclose(every.vectors[layer, j, :, 2], out, atol=1e-9)
            np.testing.assert_allclose(every.vectors[layer, j, :, 1], plain, atol=1e-9)
            np.testing.assert_allclose(every.mean[layer, j], x.mean(-1).numpy(), atol=1e-12)
            np.testing.assert_allclose(every.sigma[layer, j],
                                       torch.sqrt(x.var(-1, unbiased=False) + cfg.ln_eps).numpy(), atol=1e-12)
            p = f"blocks.{layer}.{norm}."
            np.testing.assert_array_equal(every.trace_mean[layer, j], trace[p + "hook_mean"])
            np.testing.assert_array_equal(every.trace_sigma[layer, j], trace[p + "hook_scale"])
            k = every.steps.shape[3]
            model = lna.ln_output(trace, layer, norm, gamma, beta)
            for pos in (0, n - 1):  # one token's steps, column by column, from torch's numbers
                xs = x[pos, :k].numpy()
                by_torch = (xs, xs - x[pos].mean().item(), plain[pos, :k], gamma[:k], beta[:k],
                            out[pos, :k], model[pos, :k])
                for c, column in enumerate(by_torch):
                    np.testing.assert_allclose(every.steps[layer, j, pos, :, c], column, atol=1e-9)
    # the model's float32 numbers against float64 by hand
    assert 0 < every.max_error < 1e-4


def test_every_norm_knows_the_cross_attention_norm():
    bundle = tfviz.load("reverse-encdec")
    trace = bundle.trace("abc")
    every = lna.every_norm(trace, lna.gamma_beta(bundle.weights()))
    assert every.norms == ("ln1", "ln_cross", "ln2") and every.stats.shape[:2] == (2, 3)
    assert every.max_error < 1e-4


def test_token_stats_chart_carries_every_layer_and_norm(gpt):
    trace, _, every = gpt
    spec = ivb.token_stats(every.stats, every.norms, trace.tokens, layer=2, norm=2)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    rows = spec["datasets"]["stats"]
    n = len(trace.tokens)
    assert len(rows) == 3 * 2 * 4 * n
    for r in rows:
        j = every.norms.index(lna.NORM_ORDER[r["norm"]])
        want = every.stats[r["layer"], j, ivb.STATS.index(r["stat"]), r["q"]]
        assert r["v"] == pytest.approx(want, abs=TOL)
    p = by_name(spec)
    assert p["layer"]["value"] == 2 and p["layer"]["bind"]["max"] == 2
    # norm values are NORM_ORDER indices, so norm=2 means ln2 in every model
    assert p["norm"]["bind"]["options"] == [0, 2] and p["norm"]["value"] == 2
    assert p["norm"]["bind"]["labels"] == [lna.NORM_NAMES["ln1"], lna.NORM_NAMES["ln2"]]
    assert p["names"]["value"][2] == lna.NORM_NAMES["ln2"]
    # a norm this model lacks (ln_cross) falls back to the first one
    assert by_name(ivb.token_stats(every.stats, every.norms, trace.tokens, norm=1))["norm"]["value"] == 0


def test_worked_example_decodes_to_every_tokens_calculation(gpt):
    trace, _, every = gpt
    n = len(trace.tokens)
    spec = ivb.worked_example(every.mean, every.sigma, every.trace_mean, every.trace_sigma,
                              every.steps, every.vectors, every.norms, trace.tokens,
                              d_model=trace.config.d_model, layer=1, norm=2, pos=n - 1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    data = spec["datasets"]
    keys = [(lyr, code, q) for lyr in range(3) for code in (0, 2) for q in range(n)]
    for name in ("numbers", "steps", "vectors"):
        assert [(r["layer"], r["norm"], r["pos"]) for r in data[name]] == keys
    for r in data["numbers"]:
        j = every.norms.index(lna.NORM_ORDER[r["norm"]])
        at = (r["layer"], j, r["pos"])
        assert r["mean"] == pytest.approx(every.mean[at], abs=TOL)
        assert r["sigma"] == pytest.approx(every.sigma[at], abs=TOL)
        assert r["tmean"] == pytest.approx(every.trace_mean[at], abs=TOL)
        assert r["tsigma"] == pytest.approx(every.trace_sigma[at], abs=TOL)
    for name, arr in (("steps", every.steps), ("vectors", every.vectors)):
        for r in data[name]:
            j = every.norms.index(lna.NORM_ORDER[r["norm"]])
            np.testing.assert_allclose(decode(r["v"]), arr[r["layer"], j, r["pos"]].ravel(), atol=TOL)
    p = by_name(spec)
    assert (p["layer"]["value"], p["norm"]["value"], p["pos"]["value"]) == (1, 2, n - 1)
    # the slider spans the layout's 16 tokens (11 bytes here); the chart keeps it below the length
    assert n == 11 and p["pos"]["bind"]["input"] == "range" and p["pos"]["bind"]["max"] == 15
    assert p["posi"]["expr"] == "pos < 0 ? dpos : min(pos, ntok - 1)"
    assert data["numbers"][0]["s_bound"] == pytest.approx(float(np.abs(every.vectors).max()))
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)
    assert p["columns"]["value"] == list(lna.STEP_COLUMNS)
    assert p["dims"]["value"] == [str(i) for i in range(trace.config.d_model)]


def test_token_stats_chart_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data), each carrying its
    own tokens' statistics, checked against torch's layer_norm input statistics."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    params = lna.gamma_beta(b.weights())

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        every = lna.every_norm(trace, params)
        chart = ivb.token_stats(every.stats, every.norms, trace.tokens, layer=1, norm=2)
        for r in chart["datasets"]["stats"][::5]:
            if r["stat"] == "μ before":  # the norm's input, straight from the trace
                j = every.norms.index(lna.NORM_ORDER[r["norm"]])
                x = torch.tensor(every.vectors[r["layer"], j, r["q"], 0], dtype=torch.float64)
                assert r["v"] == pytest.approx(float(x.mean()), abs=TOL + 1e-6)
        return chart, token_labels(trace.tokens)

    built = check_length_free(build, past_cap=False)  # a line chart 640 px wide up to 40 tokens
    assert built[13]["encoding"]["x"]["scale"]["domain"] == {"expr": "sequence(0, ntok)"}


def test_worked_example_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data), each carrying its own
    tokens' LayerNorm by hand, checked against torch's layer_norm, and its own colour range;
    with no token in the link it opens on the sentence's first token."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    params = lna.gamma_beta(b.weights())
    d = cfg.d_model

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        every = lna.every_norm(trace, params)
        chart = ivb.worked_example(every.mean, every.sigma, every.trace_mean, every.trace_sigma,
                                   every.steps, every.vectors, every.norms, trace.tokens,
                                   d_model=d, layer=1, norm=2)
        first = chart["datasets"]["numbers"][0]
        assert by_name(chart)["pos"]["value"] == -1 and first["dpos"] == 0
        assert first["s_bound"] == pytest.approx(float(np.abs(every.vectors).max()))
        for r in chart["datasets"]["vectors"][::7]:
            norm = lna.NORM_ORDER[r["norm"]]
            gamma, beta = (torch.tensor(a, dtype=torch.float64) for a in params[f"L{r['layer']} {norm}"])
            x = torch.tensor(lna.ln_input(trace, r["layer"], norm), dtype=torch.float64)  # (T, d)
            out = F.layer_norm(x, (d,), gamma, beta, cfg.ln_eps).numpy()
            plain = F.layer_norm(x, (d,), eps=cfg.ln_eps).numpy()
            want = np.stack([x[r["pos"]].numpy(), plain[r["pos"]], out[r["pos"]]])  # (3, d)
            np.testing.assert_allclose(decode(r["v"]).reshape(3, d), want, atol=TOL)
        return chart, token_labels(trace.tokens)

    built = check_length_free(build)
    strips = built[13]["vconcat"][2]
    assert strips["layer"][0]["encoding"]["color"]["scale"]["domain"] == {"expr": "[-bound, bound]"}
    assert by_name(built[13])["pos"]["bind"]["max"] == 15 and by_name(built[24])["pos"]["bind"]["max"] == 23


def test_a_wide_models_strips_travel_as_one_picture_per_token():
    """Past PICTURE_CELLS cells (3 × 256 here; GPT-2's 3 × 768) the three strips of every
    (layer, norm, token) are one picture whose pixels are the numbers of ``every_norm``, each
    palette step 2·bound/254 wide, so a token moved to swaps one mark; the rest of the chart
    (μ, σ, the step table) is unchanged and still SVG."""
    import base64
    import dataclasses
    import io

    from PIL import Image

    from tfviz.viz.kit.instant_pictures import LEVELS

    torch.manual_seed(0)
    cfg = dataclasses.replace(preset("gpt-tiny"), d_model=256)
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    trace = b.trace("the cat sat")
    every = lna.every_norm(trace, lna.gamma_beta(b.weights()))
    n = len(trace.tokens)
    assert ivb.strips_pictured(256) and not ivb.strips_pictured(preset("gpt-tiny").d_model)
    spec = ivb.worked_example(every.mean, every.sigma, every.trace_mean, every.trace_sigma,
                              every.steps, every.vectors, every.norms, trace.tokens,
                              d_model=256, layer=1, norm=2, pos=n - 1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"
    rows = spec["datasets"]["vectors"]
    keys = [(lyr, code, q) for lyr in range(3) for code in (0, 2) for q in range(n)]
    assert [(r["layer"], r["norm"], r["pos"]) for r in rows] == keys and "v" not in rows[0]
    bound = float(np.abs(every.vectors).max())
    for r in rows:
        image = Image.open(io.BytesIO(base64.b64decode(r["img"].split(",", 1)[1])))
        assert image.mode == "P" and image.size == (256, 3)  # a pixel a number, a row a vector
        index = np.asarray(image, dtype=float)
        decoded = -bound + index / (LEVELS - 1) * 2 * bound
        j = every.norms.index(lna.NORM_ORDER[r["norm"]])
        want = every.vectors[r["layer"], j, r["pos"]]  # x, (x − μ)/σ, output
        # one palette step is 2·bound/254: the nearest step is at most half of it away
        np.testing.assert_allclose(decoded, want, atol=bound / (LEVELS - 1) + 1e-9)
    strips = spec["vconcat"][2]
    image_layer = strips["layer"][0]
    assert image_layer["mark"]["type"] == "image" and image_layer["transform"] == [
        {"filter": "datum.layer == layer && datum.norm == norm && datum.pos == posi"}]
    legend = strips["layer"][3]["encoding"]["color"]["scale"]
    assert legend["domain"] == {"expr": "[-bound, bound]"}  # the bound rides in the data
    assert spec["datasets"]["numbers"][0]["s_bound"] == pytest.approx(bound)
    # the step table still carries the first k numbers of the same vectors, to 4 decimals
    first = [r for r in spec["datasets"]["steps"] if (r["layer"], r["norm"], r["pos"]) == (1, 2, n - 1)]
    assert len(first) == 1
    k = every.steps.shape[3]
    np.testing.assert_allclose(decode(first[0]["v"]).reshape(k, -1),
                               every.steps[1, every.norms.index("ln2"), n - 1], atol=TOL)
