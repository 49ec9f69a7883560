"""Lessons 4 and 5 as instant charts (issue #15): every layer, head and query computed at once,
checked against torch; each chart valid Vega-Lite, carrying the trace's own numbers for every
view, and opening on the view it was asked for.

What the browser draws from these specs (the filters, the products α_j v_j) is checked by
running the page in chromium; here the data the browser receives, decoded as it decodes it.
"""
import json
import math

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.analysis import attention as att
from tfviz.analysis import attention_matrix as atm
from tfviz.analysis.lookup import effective_count, effective_counts
from tfviz.bundle import Bundle
from tfviz.config import ModelConfig, RunOptions, preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz import lookup as ia
from tfviz.viz import self_attention as selv
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # values travel rounded to DIGITS decimals


def _bundle(cfg: ModelConfig) -> Bundle:
    torch.manual_seed(0)
    return Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)


@pytest.fixture(scope="module")
def gpt():
    """A fresh gpt-tiny on the characters of a short text, with the hostile "<b>" in it."""
    b = _bundle(preset("gpt-tiny"))
    return b, b.trace("the <b>cat</b> sat")


def decode(packed: str) -> np.ndarray:
    """What ``unpack`` does in the browser: split, empty -> masked (nan), numbers."""
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def check_view_params(spec, cfg, n, *, layer, head, query=None, free=False):
    """Layer and head sliders over the model's range, the query's slider over every token,
    each starting where it was asked to. ``free`` (lesson 5's length-free charts): the query
    slider spans the layout's length (the page's script narrows it) and -1 stands for the
    sentence's default query, which rides in the data."""
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)  # plain JSON: no numpy, no NaN
    p = params(spec)
    assert p["layer"]["bind"] == {"input": "range", "min": 0, "max": cfg.n_layers - 1, "step": 1,
                                  "name": "Layer "}
    assert p["head"]["bind"]["max"] == cfg.n_heads - 1
    assert (p["layer"]["value"], p["head"]["value"]) == (layer, head)
    if query is None:
        assert "query" not in p
    else:
        bind = p["query"]["bind"]
        upper = length_cap(n) - 1 if free else n - 1
        assert bind["input"] == "range" and (bind["min"], bind["max"]) == (0, upper)
        assert p["query"]["value"] == query and bind["name"] == "Query token "
    if free:
        assert p["ntok"]["expr"] == "length(tokens)"
    return p


def torch_attention(trace, layer):
    """Scores, scaled, masked, weights and z of a layer recomputed by torch from its q, k, v
    (the model's own reference would be tfviz.reference; this is torch's)."""
    cfg, opts = trace.config, trace.options
    q = torch.tensor(trace["q", layer], dtype=torch.float64).transpose(0, 1)  # (H, n, d_k)
    k = torch.tensor(trace["k", layer], dtype=torch.float64).transpose(0, 1)
    v = torch.tensor(trace["v", layer], dtype=torch.float64).transpose(0, 1)
    raw = q @ k.transpose(-1, -2)  # (H, n, n)
    scale = cfg.scale_attn if opts.scale is None else opts.scale
    scaled = raw / math.sqrt(cfg.d_head) if scale else raw
    causal = cfg.causal if opts.causal is None else opts.causal
    n = raw.shape[-1]
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)  # keys after the query
    if not causal:
        hidden[:] = False
    masked = scaled.masked_fill(hidden, float("-inf"))
    weights = torch.softmax(masked / opts.temperature, dim=-1)
    return raw, scaled, masked, weights, weights @ v  # z: (H, n, d_k)


@pytest.mark.parametrize("options", [RunOptions(),
                                     RunOptions(scale=False, causal=False, temperature=2.5)])
def test_all_queries_equals_torch_for_every_layer_head_and_query(gpt, options):
    b, _ = gpt
    trace = b.trace("the <b>cat</b> sat", options=options)
    every = att.all_queries(trace)
    cfg = b.config
    n = len(trace.tokens)
    assert every.q.shape == (cfg.n_layers, cfg.n_heads, n, cfg.d_head) and every.raw.shape[-1] == n
    assert every.divisor == (4.0 if options.scale is not False else 1.0)
    for layer in range(cfg.n_layers):
        raw, scaled, masked, weights, z = (t.numpy() for t in torch_attention(trace, layer))
        np.testing.assert_allclose(every.raw[layer], raw, atol=1e-5)
        np.testing.assert_allclose(every.scaled[layer], scaled, atol=1e-5)
        assert (np.isneginf(every.masked[layer]) == np.isneginf(masked)).all()
        np.testing.assert_allclose(every.weights[layer], weights, atol=1e-5)  # float32 vs float64
        np.testing.assert_allclose(every.z[layer], z, atol=1e-5)
    # each query's walkthrough is the single-query reading of the same trace
    for layer, head, i in [(0, 0, 0), (2, 3, n - 1), (1, 2, 4)]:
        one, walk = every.walk(layer, head, i), att.query_walkthrough(trace, layer, head, i)
        for name in ("q", "k", "v", "raw", "scaled", "masked", "weights", "allowed",
                     "weighted_values", "z", "kv_head", "divisor", "temperature"):
            np.testing.assert_array_equal(getattr(one, name), getattr(walk, name), err_msg=name)


def test_all_queries_keeps_shared_key_value_heads_once():
    cfg = ModelConfig(d_model=32, n_heads=4, n_kv_heads=2, n_layers=1, vocab_size=300)
    trace = _bundle(cfg).trace("abcde")
    every = att.all_queries(trace)
    assert every.kv_heads == (0, 0, 1, 1) and every.k.shape[1] == 2
    np.testing.assert_array_equal(every.walk(0, 3, 4).k, att.query_walkthrough(trace, 0, 3, 4).k)


def test_matrix_forms_equal_torch_products(gpt):
    b, trace = gpt
    forms, error = atm.matrix_forms(trace, b.weights())
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in b.weights().items()}
    for layer in range(b.config.n_layers):
        # float64 on both sides, from the same float32 numbers
        X = torch.tensor(trace["resid_pre", layer], dtype=torch.float64)  # post-LN: the block input
        for h in range(b.config.n_heads):
            Q = X @ w["W_Q"][layer, h] + w["b_Q"][layer, h]
            V = X @ w["W_V"][layer, h] + w["b_V"][layer, h]
            A = torch.tensor(trace["pattern", layer][h], dtype=torch.float64)
            np.testing.assert_allclose(forms["Q"][layer, h], Q.numpy(), atol=1e-10)
            np.testing.assert_allclose(forms["V"][layer, h], V.numpy(), atol=1e-10)
            np.testing.assert_array_equal(forms["A"][layer, h], A.numpy())
            np.testing.assert_allclose(forms["Z"][layer, h], (A @ V).numpy(), atol=1e-10)
    assert error < 1e-5
    assert atm.matrix_shapes(7, 64, 16)[0] == ("Q = X W^Q", "n×d · d×d_k = n×d_k",
                                               "7×64 · 64×16 = 7×16")


def unpicture(row: dict) -> np.ndarray:
    """A ``signed_pictures`` row back to numbers: each pixel's nearest colour on the blue-red
    ramp from -m to +m (so to about 1% of m; the ramp's eleven stops are selv.BLUE_RED)."""
    import base64
    import io

    from PIL import Image

    png = base64.b64decode(row["img"].split(",", 1)[1])
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)  # (rows, cols, 3)
    stops = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in selv.BLUE_RED], float)
    t = np.linspace(0, 1, 2001)
    where = t * (len(stops) - 1)
    i = np.minimum(where.astype(int), len(stops) - 2)
    ramp = stops[i] * (1 - (where - i))[:, None] + stops[i + 1] * (where - i)[:, None]
    nearest = np.abs(rgb[..., None, :] - ramp).sum(-1).argmin(-1)  # (rows, cols)
    return (t[nearest] * 2 - 1) * row["m"]


def test_query_vectors_say_whether_a_what_if_moved_the_query(gpt):
    _, trace = gpt
    every = att.all_queries(trace)
    plain = selv.query_vectors(every)
    assert len(plain["vconcat"]) == 2 and "shift" not in plain["datasets"]["q"][0]
    shift = np.zeros(every.q.shape[:3])  # a made-up move (the page's test runs the what-if)
    shift[1, 2, 3] = 0.25
    spec = selv.query_vectors(every, shift=shift)
    validate_jsonschema(spec, SCHEMA)
    assert len(spec["vconcat"]) == 3
    row = next(r for r in spec["datasets"]["q"] if (r["layer"], r["head"]) == (1, 2))
    assert decode(row["shift"]).tolist()[3] == 0.25 and decode(row["shift"]).sum() == 0.25
    line = json.dumps(spec["vconcat"][1])
    assert "moves this query too" in line and "as in the model" in line


def test_query_vectors_carry_every_q_k_and_v(gpt):
    b, trace = gpt
    every, n = att.all_queries(trace), len(trace.tokens)
    spec = selv.query_vectors(every, layer=2, head=1, query=5)
    p = check_view_params(spec, b.config, n, layer=2, head=1, query=5, free=True)
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)  # "<b>" stays text: no escaping
    assert iv.spec_tokens(spec)[4] == "4 <" and p["kv"]["value"] == [0, 1, 2, 3]
    rows = spec["datasets"]["q"]  # the query's q: numbers, shown in its cells
    assert [(r["layer"], r["head"]) for r in rows] == [(lyr, h) for lyr in range(3)
                                                      for h in range(4)]
    for r in rows:
        got = decode(r["v"]).reshape(n, -1)
        np.testing.assert_allclose(got, every.q[r["layer"], r["head"]], atol=TOL)
    for name, stacked in (("k", every.k), ("v", every.v)):  # every token's k and v: pictures
        for r in spec["datasets"][name]:
            want = stacked[r["layer"], r["head"]]
            assert r["m"] == pytest.approx(np.abs(want).max(), abs=TOL)
            np.testing.assert_allclose(unpicture(r), want, atol=0.02 * r["m"])
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # marks carry ARIA labels


def test_score_steps_carry_raw_scores_weights_mask_and_best_key(gpt):
    b, trace = gpt
    every, n = att.all_queries(trace), len(trace.tokens)
    spec = selv.score_steps(every, layer=1, head=3, query=n - 1)
    check_view_params(spec, b.config, n, layer=1, head=3, query=n - 1, free=True)
    rows = spec["datasets"]["steps"]
    assert len(rows) == 3 * 4 * n and "s" not in rows[0]  # scaled = raw ÷ 4: the browser divides
    assert "datum.raw / 4.0" in json.dumps(spec["transform"])
    for r in rows:
        lyr, h, i = r["layer"], r["head"], r["q"]
        np.testing.assert_allclose(decode(r["raw"]), every.raw[lyr, h, i], atol=TOL)
        w = decode(r["w"])
        assert (np.isnan(w) == ~every.allowed[lyr, h, i]).all()  # masked keys travel empty
        assert np.isnan(w[i + 1:]).all() and not np.isnan(w[:i + 1]).any()  # causal: keys after i
        np.testing.assert_allclose(w[:i + 1], every.weights[lyr, h, i, :i + 1], atol=TOL)
        assert r["top"] == int(np.argmax(every.weights[lyr, h, i]))
    text = json.dumps(spec, ensure_ascii=False)
    assert "The key with the most weight is" in text and "later key(s) are masked" in text
    assert "The same numbers as a table" in text and "÷ 4" in text


def test_score_steps_send_scaled_scores_when_a_bias_is_added():
    """ALiBi adds a bias after the division: the scaled scores then travel themselves."""
    cfg = ModelConfig(d_model=32, n_heads=2, n_layers=1, vocab_size=300, positional="alibi")
    trace = _bundle(cfg).trace("abcdef")
    every = att.all_queries(trace)
    spec = selv.score_steps(every, query=3)
    validate_jsonschema(spec, SCHEMA)
    for r in spec["datasets"]["steps"]:
        want = every.scaled[r["layer"], r["head"], r["q"]]
        np.testing.assert_allclose(decode(r["s"]), want, atol=TOL)


def test_weighted_sum_rebuilds_each_queries_z(gpt):
    """The browser multiplies each α_j by v_j; doing the same with the sent (rounded) numbers
    gives the walkthrough's rows α_j v_j, the rest's sum, and z."""
    b, trace = gpt
    every, n = att.all_queries(trace), len(trace.tokens)
    spec = selv.weighted_sum(every, layer=0, head=2, query=4)
    check_view_params(spec, b.config, n, layer=0, head=2, query=4, free=True)
    values = {r["id"]: decode(r["v"]).reshape(n, -1) for r in spec["datasets"]["values"]}
    assert sorted(values) == [f"{lyr}-{h}" for lyr in range(3) for h in range(4)]
    for r in spec["datasets"]["weights"]:
        walk = every.walk(r["layer"], r["head"], r["q"])
        best = [int(j) for j in r["best"].split(",")]
        assert best == att.strongest_keys(walk.weights, 10)
        alpha = np.nan_to_num(decode(r["w"]))
        products = alpha[:, None] * values[f"{r['layer']}-{walk.kv_head}"]  # (n, d_k)
        np.testing.assert_allclose(products[best], walk.weighted_values[best], atol=1e-3)
        rest = [j for j in range(n) if j not in best]
        np.testing.assert_allclose(products[rest].sum(0), walk.weighted_values[rest].sum(0),
                                   atol=1e-3)
        np.testing.assert_allclose(decode(r["z"]), walk.z, atol=TOL)


def test_matrix_views_send_every_heads_matrices(gpt):
    b, trace = gpt
    forms, _ = atm.matrix_forms(trace, b.weights())
    n = len(trace.tokens)
    spec = selv.matrix_views(forms, trace.tokens, layer=2, head=3)
    check_view_params(spec, b.config, n, layer=2, head=3, free=True)
    for name in "QKVZ":  # pictures of every head's matrices
        for r in spec["datasets"][name]:
            want = forms[name][r["layer"], r["head"]]
            np.testing.assert_allclose(unpicture(r), want, atol=0.02 * r["m"])
    for r in spec["datasets"]["A"]:  # a short text's A: numbers, one cell each
        got = decode(r["v"]).reshape(n, n)
        np.testing.assert_allclose(got, forms["A"][r["layer"], r["head"]], atol=TOL)
    # a 40-token text: A (1,600 cells) is a picture too; with no cells left as marks, SVG
    long = b.trace("the cat sat on the mat and the dog ran.!")
    forms, _ = atm.matrix_forms(long, b.weights())
    spec = selv.matrix_views(forms, long.tokens)
    validate_jsonschema(spec, SCHEMA)
    assert spec["datasets"]["A"][0]["img"].startswith("data:image/png;base64,")
    assert all("img" in spec["datasets"][name][0] for name in "QKVZA")
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"


def test_flying_arrows_carry_every_row_of_weights(gpt):
    b, trace = gpt
    every, n = att.all_queries(trace), len(trace.tokens)
    spec = selv.flying_arrows(every, layer=1, head=0, query=2)
    check_view_params(spec, b.config, n, layer=1, head=0, query=2, free=True)
    rows = spec["datasets"]["weights"]
    assert len(rows) == 3 * 4 * n
    for r in rows:
        w = decode(r["w"])
        assert (np.isnan(w) == ~every.allowed[r["layer"], r["head"], r["q"]]).all()
        want = every.weights[r["layer"], r["head"], r["q"]]
        np.testing.assert_allclose(np.nan_to_num(w), want, atol=TOL)
    width = spec["layer"][0]["encoding"]["strokeWidth"]["scale"]
    assert width == {"domain": [0, 1], "range": [0.5, selv.MAX_WIDTH]}  # weight 1: 14 px


def test_lookup_weights_name_the_best_key_and_the_mix(gpt):
    b, trace = gpt
    patterns = np.stack([trace["pattern", layer] for layer in range(3)])
    counts = effective_counts(patterns)
    for layer, head, i in [(0, 0, 0), (2, 1, 5)]:  # against the one-row function of the toy table
        assert counts[layer, head, i] == pytest.approx(effective_count(patterns[layer, head, i]))
    n = len(trace.tokens)
    spec = ia.lookup_weights(patterns, trace.tokens, counts, layer=2, head=1, query=n - 1)
    check_view_params(spec, b.config, n, layer=2, head=1, query=n - 1, free=True)
    for r in spec["datasets"]["rows"]:
        row = patterns[r["layer"], r["head"], r["q"]]
        np.testing.assert_allclose(decode(r["w"]), row, atol=TOL)
        assert r["top"] == int(row.argmax())
        assert r["mix"] == pytest.approx(effective_count(row), abs=TOL)
    assert r["q"] == n - 1 and counts[2, 3, 0] == pytest.approx(1.0)  # token 0 sees only itself
    assert ia.HARD in json.dumps(spec) and "1 / Σα²" in json.dumps(spec, ensure_ascii=False)


def _lesson5_specs(bundle, text: str, **view) -> dict:
    """Lesson 5's five charts of ``text``, as the page builds them."""
    trace = bundle.trace(text)
    every = att.all_queries(trace)
    forms, _ = atm.matrix_forms(trace, bundle.weights())
    query = {k: v for k, v in view.items() if k != "query"}
    return {"vectors": selv.query_vectors(every, **view, default_query=2),
            "steps": selv.score_steps(every, **view, default_query=2),
            "sum": selv.weighted_sum(every, **view, default_query=2),
            "matrices": selv.matrix_views(forms, trace.tokens, **query),
            "arrows": selv.flying_arrows(every, **view, default_query=2)}


def test_lesson5_specs_hold_nothing_of_the_sentences_length():
    """Streamlit swaps a chart's data when its spec is unchanged and draws it anew otherwise,
    so every sentence of 1-16 tokens must give the same five specs (tfviz.viz.kit.instant_length);
    what differs is the data: the tokens, and the default query (here 2) in the first row."""
    b = _bundle(preset("gpt-tiny"))
    texts = {n: "abcdefghijklmnopqrstuvwxyz"[:n] for n in (3, 8, 13, 16, 17)}  # a byte each
    built = {n: _lesson5_specs(b, t, layer=1, head=2, query=None) for n, t in texts.items()}
    assert {n: len(b.trace(t).tokens) for n, t in texts.items()} == {n: n for n in texts}

    def without_data(chart):
        return json.dumps({k: v for k, v in chart.items() if k != "datasets"}, sort_keys=True)

    for name, chart in built[13].items():
        validate_jsonschema(chart, SCHEMA)
        same = {n: without_data(built[n][name]) == without_data(chart) for n in texts}
        assert same == {3: True, 8: True, 13: True, 16: True, 17: False}, name
        first = next(iter(chart["datasets"].values()))[0]
        assert first["tokens"].split(iv.SEPARATOR) == token_labels(b.trace(texts[13]).tokens)
        assert first.get("dq", 2) == 2
    for name in ("vectors", "steps", "sum", "arrows"):
        assert params(built[13][name])["query"]["value"] == -1  # the sentence's own query
        assert params(built[13][name])["qi"]["expr"] == "query < 0 ? dq : min(query, ntok - 1)"
    # a shared link's token is held as it is; the browser keeps it below the length
    linked = selv.score_steps(att.all_queries(b.trace(texts[8])), query=11)
    assert params(linked)["query"]["value"] == 11 and params(linked)["query"]["bind"]["max"] == 15


def test_lesson4s_lookup_is_length_free(gpt):
    """Lesson 4's bars hold nothing of the sentence's length: 3-16 tokens share one spec, each
    carrying its own weights, best keys and mixes, opening on its last token."""
    from tests.support.length_free import check_length_free

    b, _ = gpt

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])
        patterns = np.stack([trace["pattern", layer] for layer in range(3)])
        chart = ia.lookup_weights(patterns, trace.tokens, effective_counts(patterns), layer=1)
        rows = chart["datasets"]["rows"]
        assert rows[0]["dq"] == n - 1 and params(chart)["query"]["value"] == -1
        for r in rows:
            row = patterns[r["layer"], r["head"], r["q"]]
            np.testing.assert_allclose(decode(r["w"]), row, atol=TOL)
            assert r["top"] == int(row.argmax())
        return chart, token_labels(trace.tokens)

    built = check_length_free(build)
    assert "' + ntok + ' values" in json.dumps(built[13], ensure_ascii=False)
