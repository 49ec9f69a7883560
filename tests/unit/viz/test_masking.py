"""Lesson 8's instant charts (issue #15): valid Vega-Lite carrying every layer's and head's maps.

The specs validate against altair's Vega-Lite v6 schema, their packed rows decode to the
trace's own scores and weights (−∞ stays masked), and layer and head are labelled sliders
opening on the view asked for.
"""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.analysis import masking as mk
from tfviz.bundle import Bundle
from tfviz.config import RunOptions, preset
from tfviz.experiments.padding import padding_demo
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz.kit import instant_pictures as ipic
from tfviz.viz.kit import maps as mapv
from tfviz.viz.kit import style as styv
from tfviz.viz import masking as masv
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # packed with DIGITS decimals


@pytest.fixture(scope="module")
def gpt():
    """A fresh gpt-tiny on the characters of "the cat sat" (no trained assets needed)."""
    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    return Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)


def decode(packed: str) -> np.ndarray:
    """What ``unpack`` does in the browser: split, empty -> masked (nan), numbers."""
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def stacked(trace, name: str) -> np.ndarray:
    return np.stack([trace[name, layer] for layer in range(trace.config.n_layers)])


def check_rows(rows, want: np.ndarray, *names: str) -> None:
    """Every row of ``stack_rows`` decodes to ``want`` at its index, −∞ (masked) as empty."""
    assert [tuple(r[k] for k in names) for r in rows] == list(np.ndindex(*want.shape[:len(names)]))
    for r in rows:
        expected = want[tuple(r[k] for k in names)].ravel()
        got = decode(r["v"])
        assert (np.isnan(got) == np.isneginf(expected)).all()
        finite = np.isfinite(expected)
        assert np.allclose(got[finite], expected[finite], atol=TOL)


def check_sliders(spec, n_layers: int, n_heads: int, layer: int, head: int) -> None:
    p = params(spec)
    assert p["layer"]["bind"] == {"input": "range", "min": 0, "max": n_layers - 1, "step": 1, "name": "Layer "}
    assert p["head"]["bind"] == {"input": "range", "min": 0, "max": n_heads - 1, "step": 1, "name": "Head "}
    assert (p["layer"]["value"], p["head"]["value"]) == (layer, head)


def test_triangle_sends_every_layers_masked_scores(gpt):
    trace = gpt.trace("the cat sat")
    scores = stacked(trace, "attn_scores")  # (layers, heads, n, n), −∞ above the diagonal
    spec = masv.triangle(scores, trace.tokens, layer=2, head=3)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)  # plain JSON: no NaN or inf leaks into the spec
    check_rows(spec["datasets"]["scores"], scores, "layer", "head")
    check_sliders(spec, 3, 4, 2, 3)
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)
    n = len(trace.tokens)
    for r in spec["datasets"]["scores"]:  # exactly the cells above the diagonal are empty
        assert (np.isnan(decode(r["v"]).reshape(n, n)) == np.triu(np.ones((n, n), bool), 1)).all()
    # masked cells are drawn grey with the −∞ sign, and named in the tooltip / ARIA label
    bound = np.abs(scores[np.isfinite(scores)]).max()  # one colour range for every view
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == {"expr": "[-bound, bound]"}
    assert spec["datasets"]["scores"][0]["s_bound"] == pytest.approx(bound)  # read by "bound"
    assert params(spec)["bound"]["expr"] == "length(data('scores')) ? data('scores')[0].s_bound : 0"
    grey = [lyr for lyr in spec["layer"] if lyr.get("mark", {}).get("color") == styv.MASKED_GREY]
    assert grey and grey[0]["transform"][0] == {"filter": "!isValid(datum.v)"}


def test_out_of_range_views_are_clamped(gpt):
    trace = gpt.trace("ab")
    spec = masv.triangle(stacked(trace, "attn_scores"), trace.tokens, layer=99, head=7)
    assert (params(spec)["layer"]["value"], params(spec)["head"]["value"]) == (2, 3)


def test_two_masks_carry_both_runs(gpt):
    texts = "the cat sat"
    runs = [gpt.trace(texts, options=RunOptions(causal=c)) for c in (False, True)]
    bidirectional, causal = (stacked(t, "pattern") for t in runs)
    assert not np.allclose(bidirectional, causal)
    spec = masv.two_masks(bidirectional, causal, runs[0].tokens, layer=1, head=2)
    validate_jsonschema(spec, SCHEMA)
    check_rows(spec["datasets"]["bidirectional"], bidirectional, "layer", "head")
    check_rows(spec["datasets"]["causal"], causal, "layer", "head")
    check_sliders(spec, 3, 4, 1, 2)
    assert len(runs[0].tokens) <= mapv.SIDE_BY_SIDE and "hconcat" in spec  # short: side by side
    long = gpt.trace("x" * (mapv.SIDE_BY_SIDE + 1))
    p = stacked(long, "pattern")
    assert "vconcat" in masv.two_masks(p, p, long.tokens)  # long: one above the other


def test_padded_batch_keeps_each_sentence_and_pad_scores(gpt):
    ids = [gpt.encode("the cat sat"), gpt.encode("a dog")]
    demo = padding_demo(gpt.model, ids, [gpt.token_strings(i) for i in ids])
    patterns = stacked(demo.trace, "pattern")  # (layers, 2, heads, T, T)
    scores = np.stack([demo.trace["attn_scores", layer][1] for layer in range(3)])
    spec = masv.padded_batch(patterns, scores, demo.tokens, layer=0, head=1)
    validate_jsonschema(spec, SCHEMA)
    data = spec["datasets"]
    check_rows([{**r, "s": 0} for r in data["s1"]], patterns[:, :1], "layer", "s", "head")
    check_rows([{**r, "s": 0} for r in data["s2"]], patterns[:, 1:], "layer", "s", "head")
    check_rows(data["s2_scores"], scores, "layer", "head")
    short = len(ids[1])
    for r in data["s2_scores"]:  # every pad key is masked in every row of sentence 2
        assert np.isnan(decode(r["v"]).reshape(len(demo.tokens[1]), -1)[:, short:]).all()
    p = params(spec)
    assert p["tokens_b"]["value"][short:] == [f"{i} <pad>" for i in range(short, len(demo.tokens[1]))]
    check_sliders(spec, 3, 4, 0, 1)


def test_learner_text_stays_text_in_the_spec(gpt):
    trace = gpt.trace('<script>"\\')
    spec = masv.triangle(stacked(trace, "attn_scores"), trace.tokens)
    back = json.loads(json.dumps(spec))
    assert iv.spec_tokens(back) == token_labels(trace.tokens)  # as typed, not escaped
    assert any("<" in label for label in iv.spec_tokens(back))


def test_hidden_per_map_counts_the_triangle_in_every_head(gpt):
    trace = gpt.trace("the cat sat")
    n = len(trace.tokens)
    counts = mk.hidden_per_map(stacked(trace, "attn_scores"))
    want = int(torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).sum())
    assert counts.shape == (3, 4) and (counts == want).all()
    bidirectional = gpt.trace("the cat sat", options=RunOptions(causal=False))
    assert (mk.hidden_per_map(stacked(bidirectional, "attn_scores")) == 0).all()


def test_cells_fit_the_page():
    assert mapv.fit_cell(13, across=2) * 13 * 2 <= mapv.WIDTH
    assert mapv.fit_cell(64) * 64 <= mapv.WIDTH and mapv.fit_cell(1) == 44


def picture_pixels(url: str) -> np.ndarray:
    import base64
    import io

    from PIL import Image

    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_long_texts_travel_as_pictures(gpt):
    """Past instant_pictures.PICTURE_CELLS cells a map is one picture: scores red-blue on one range for
    every layer and head with masked cells grey, weights as instant_pictures' cividis pictures."""
    trace = gpt.trace("the cat sat on the mat by the door")  # 33 byte tokens
    n = len(trace.tokens)
    assert mapv.pictured(n) and not mapv.pictured(13)
    scores = stacked(trace, "attn_scores")
    spec = masv.triangle(scores, trace.tokens, layer=1, head=1)
    validate_jsonschema(spec, SCHEMA)
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # a picture is one mark
    rows = spec["datasets"]["scores"]
    assert [(r["layer"], r["head"]) for r in rows] == list(np.ndindex(3, 4)) and "v" not in rows[0]
    bound = mapv.abs_bound(scores)
    assert bound == np.abs(scores[np.isfinite(scores)]).max()
    grey = np.array([int(styv.MASKED_GREY[i:i + 2], 16) for i in (1, 3, 5)])
    hex_rgb = [np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)]) for c in ipic.RED_BLUE]
    for r in rows:
        pixels = picture_pixels(r["img"]).astype(int)  # (n, n, 3), one pixel per cell
        want = scores[r["layer"], r["head"]]
        assert pixels.shape == (n, n, 3)
        assert ((pixels == grey).all(-1) == np.isneginf(want)).all()
        top = np.unravel_index(np.argmax(np.where(np.isfinite(want), np.abs(want), -1)), want.shape)
        if np.abs(want[top]) == bound:  # the largest |score| of all maps takes an end colour
            end = hex_rgb[-1] if want[top] > 0 else hex_rgb[0]
            assert (pixels[top] == end).all()
        zero_colour = hex_rgb[5]  # white at 0: pixels grow redder with the score
        red = pixels[..., 0] - pixels[..., 2]
        finite = np.isfinite(want)
        assert np.corrcoef(red[finite], want[finite])[0, 1] > 0.9
        assert zero_colour.tolist() == [0xf7, 0xf7, 0xf7]
    legend = spec["layer"][1]["encoding"]["color"]["scale"]
    assert legend["domain"] == {"expr": "[-bound, bound]"} and legend["scheme"] == iv.DIVERGING_SCHEME
    assert spec["datasets"]["scores"][0]["s_bound"] == bound  # in the data: the spec is length-free
    patterns = stacked(trace, "pattern")
    pair = masv.two_masks(patterns, patterns, trace.tokens)
    validate_jsonschema(pair, SCHEMA)
    assert [r["img"] for r in pair["datasets"]["causal"]] == [
        ipic.picture(patterns[idx]) for idx in np.ndindex(3, 4)]


def test_the_sentences_maps_are_length_free(gpt):
    """The triangle and the two masks hold nothing of the sentence's length: sentences of
    3-16 tokens share one spec (a new one swaps the data), and each carries its own scores
    and weights, decoded as the browser decodes them."""
    from tests.support.length_free import check_length_free

    def traces(n):
        text = "abcdefghijklmnopqrstuvwxyz"[:n]  # a byte a token
        return (gpt.trace(text, options=RunOptions(causal=True)),
                gpt.trace(text, options=RunOptions(causal=False)))

    def triangle(n):
        causal, _ = traces(n)
        chart = masv.triangle(stacked(causal, "attn_scores"), causal.tokens, layer=1, head=2)
        check_rows(chart["datasets"]["scores"], stacked(causal, "attn_scores"), "layer", "head")
        check_sliders(chart, 3, 4, 1, 2)
        return chart, token_labels(causal.tokens)

    def pair(n):
        causal, free = traces(n)
        chart = masv.two_masks(stacked(free, "pattern"), stacked(causal, "pattern"), causal.tokens)
        check_rows(chart["datasets"]["bidirectional"], stacked(free, "pattern"), "layer", "head")
        check_rows(chart["datasets"]["causal"], stacked(causal, "pattern"), "layer", "head")
        return chart, token_labels(causal.tokens)

    built = check_length_free(triangle)
    assert built[13]["layer"][0]["encoding"]["x"]["scale"]["domain"] == {"expr": "sequence(0, ntok)"}
    check_length_free(pair)
    # the cap decides cells or a picture as the data does: 24 tokens still travel as cells
    assert not mapv.pictured(24) and mapv.pictured(25)
