"""Lesson 13's instant charts (tfviz.viz.encdec): valid Vega-Lite, view controls bound
to labelled inputs, and the numbers sent equal the model's (reverse-encdec's translation of a
source, checked against one full trace in tests/unit/decoding/test_seq2seq.py)."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import encdec as ed
from tfviz.config import preset
from tfviz.decoding.seq2seq import translate
from tfviz.viz.kit import instant as iv
from tfviz.viz import encdec as ie
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.style import token_labels
from tests.support.length_free import LENGTHS, check_length_free, without_data

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # values travel rounded to DIGITS decimals


def decode(packed: str) -> np.ndarray:
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


@pytest.fixture(scope="module", params=["hello", "a", "abcdefghijkl"])
def run(request):
    b = tfviz.load("reverse-encdec")
    return b, translate(b, request.param)


def decoder_spec(b, t, **view):
    read = b.token_strings(t.decoder_ids)
    notes = ed.step_notes(b.config, read, b.token_strings(t.new_ids), [s.probs[0] for s in t.steps],
                          len(t.source_ids))
    best = ed.anti_diagonal_head(t.cross_attention())
    return ie.decoder_chart(t.self_attention(), t.cross_attention(), read, t.source_tokens, notes,
                            [b.token_strings(s.candidates) for s in t.steps],
                            [s.probs for s in t.steps],
                            [s.candidates.index(s.chosen) for s in t.steps],
                            (best.layer, best.head), **view), notes


def test_encoder_chart_sends_every_layer_and_head_and_the_memory(run):
    b, t = run
    L, H, n, _ = t.enc_patterns.shape
    spec = ie.encoder_chart(t.enc_patterns, t.memory, t.source_tokens, layer=1, head=2)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert (p["layer"]["value"], p["head"]["value"]) == (1, 2)
    assert p["layer"]["bind"]["max"] == L - 1 and p["head"]["bind"]["max"] == H - 1
    assert p["layer"]["bind"]["input"] == "range" and p["layer"]["bind"]["name"] == "Layer "
    assert iv.spec_tokens(spec) == token_labels(t.source_tokens)
    rows = {(r["layer"], r["head"]): r["v"] for r in spec["datasets"]["enc"]}
    assert sorted(rows) == [(layer, h) for layer in range(L) for h in range(H)]
    for (layer, h), packed in rows.items():
        np.testing.assert_allclose(decode(packed).reshape(n, n), t.enc_patterns[layer, h], atol=TOL)
    memory, = spec["datasets"]["memory"]
    np.testing.assert_allclose(decode(memory["v"]).reshape(t.memory.shape), t.memory, atol=TOL)
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # cells carry ARIA labels


def test_decoder_chart_grows_row_by_row_with_the_models_numbers(run):
    b, t = run
    L, H, T, _ = t.self_attention().shape
    n = len(t.source_ids)
    spec, notes = decoder_spec(b, t, step=2, layer=1, head=3)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert p["step"]["value"] == 2  # the chart draws min(step, T): the expression si
    assert p["si"]["expr"] == "max(1, min(step, ntok))"
    assert p["step"]["bind"] == {"input": "range", "min": 1, "max": length_cap(T), "step": 1,
                                 "name": "Step "}  # the layout's; the view script fits it to T
    assert (p["layer"]["value"], p["head"]["value"]) == (1, 3)
    best = ed.anti_diagonal_head(t.cross_attention())
    first = spec["datasets"]["self"][0]  # what follows the source rides in the data
    assert (first["s_open_layer"], first["s_open_head"]) == (best.layer, best.head)  # opens there
    assert iv.spec_tokens(spec) == token_labels(b.token_strings(t.decoder_ids))
    assert spec["datasets"]["cross"][0]["src"].split(iv.SEPARATOR) == token_labels(t.source_tokens)
    own = {(r["layer"], r["head"]): decode(r["v"]).reshape(T, T) for r in spec["datasets"]["self"]}
    cross = {(r["layer"], r["head"]): decode(r["v"]).reshape(T, n) for r in spec["datasets"]["cross"]}
    above = np.triu(np.ones((T, T), bool), 1)
    for layer in range(L):
        for h in range(H):
            assert np.isnan(own[layer, h][above]).all()  # masked: sent empty, drawn grey
            np.testing.assert_allclose(own[layer, h][~above], t.self_attention()[layer, h][~above], atol=TOL)
            np.testing.assert_allclose(cross[layer, h], t.cross_attention()[layer, h], atol=TOL)
            for s, step in enumerate(t.steps):  # row s is what step s + 1 computed
                np.testing.assert_allclose(cross[layer, h][s], step.cross_rows[layer, h], atol=TOL)
                np.testing.assert_allclose(own[layer, h][s, :s + 1], step.self_rows[layer, h], atol=TOL)
    sent = spec["datasets"]["notes"]
    for s, lines in enumerate(notes):
        mine = [r["text"] for r in sent if r["step"] == s + 1]
        assert " ".join(" ".join(mine).split()) == " ".join(" ".join(lines).split())
        assert all(len(line) <= ie.NOTE_CHARS for line in mine)
    bars = spec["datasets"]["next"]
    shown = len(t.steps[0].candidates)  # the rank axis names rows (si - 1) * shown onwards
    assert p["candidates"]["expr"] == (f"slice(pluck(data('next'), 'token'), (si - 1) * {shown}, "
                                       f"si * {shown})")
    for s, step in enumerate(t.steps):
        mine = [r for r in bars if r["step"] == s + 1]
        assert mine == bars[s * shown:(s + 1) * shown]
        assert [r["token"] for r in mine] == b.token_strings(step.candidates)
        np.testing.assert_allclose([r["p"] for r in mine], step.probs, atol=TOL)
        assert [r["written"] for r in mine].count("written") == 1
        assert mine[step.candidates.index(step.chosen)]["written"] == "written"
    # the maps keep the rows up to the step, and the self-attention map the keys that exist
    text = json.dumps(spec)
    assert '"filter": "datum.row < si && datum.col < si"' in text
    assert '"filter": "datum.row < si"' in text and '"filter": "datum.row == si - 1"' in text


def test_decoder_chart_opens_where_a_link_says_and_stays_in_range(run):
    b, t = run
    cap = length_cap(len(t.steps))  # the slider's range is the layout's
    assert params(decoder_spec(b, t, step=99)[0])["step"]["value"] == cap
    assert params(decoder_spec(b, t, step=0)[0])["step"]["value"] == 1


def source_of(n: int) -> list[int]:
    """A source of ``n`` letters as ids, the 16 letters stepped through five at a time (as ids
    it may be longer than a learner can type: 17 and 24 letters lay out another cap)."""
    letters = list(range(4, 20))  # a..p
    return [letters[(i * 5) % 16] for i in range(n)]


@pytest.fixture(scope="module")
def runs():
    b = tfviz.load("reverse-encdec")
    assert b.token_strings(source_of(3)) == ["a", "f", "k"]
    return b, {n: translate(b, source_of(n)) for n in LENGTHS}


def test_encoder_chart_is_length_free(runs):
    """Sources of 3-16 letters share one spec (a new source swaps the data), 17 and 24 another,
    and each carries its own maps, memory and colour range."""
    b, translations = runs

    def build(n):
        t = translations[n]
        chart = ie.encoder_chart(t.enc_patterns, t.memory, t.source_tokens, layer=1, head=2)
        for r in chart["datasets"]["enc"]:
            np.testing.assert_allclose(decode(r["v"]).reshape(n, n), t.enc_patterns[r["layer"], r["head"]],
                                       atol=TOL)
        memory, = chart["datasets"]["memory"]
        np.testing.assert_allclose(decode(memory["v"]).reshape(n, -1), t.memory, atol=TOL)
        bound = chart["datasets"]["enc"][0]["s_bound"]
        assert bound == round(float(np.abs(t.memory).max()), 4)
        return chart, token_labels(t.source_tokens)

    built = check_length_free(build)
    attn, mem = built[8]["vconcat"]
    assert attn["width"] == {"step": ie.SOURCE_CELL} and mem["height"] == {"step": 22}
    assert mem["layer"][0]["encoding"]["color"]["scale"]["domain"] == {"expr": "[-bound, bound]"}
    assert mem["layer"][0]["encoding"]["x"]["scale"]["domain"] == list(range(b.config.d_model))


def test_decoder_chart_is_length_free(runs):
    """The decoder chart follows two lengths, the source's (n) and its steps' (T): charts share
    a spec exactly when both share a cap. Each carries its own maps, candidates and head."""
    b, translations = runs

    def build(n):
        t = translations[n]
        T = len(t.steps)
        chart, _ = decoder_spec(b, t)
        own = {(r["layer"], r["head"]): decode(r["v"]).reshape(T, T) for r in chart["datasets"]["self"]}
        cross = {(r["layer"], r["head"]): decode(r["v"]).reshape(T, n) for r in chart["datasets"]["cross"]}
        below = np.tril(np.ones((T, T), bool))
        for (layer, h), m in own.items():
            np.testing.assert_allclose(m[below], t.self_attention()[layer, h][below], atol=TOL)
            np.testing.assert_allclose(cross[layer, h], t.cross_attention()[layer, h], atol=TOL)
        assert [r["token"] for r in chart["datasets"]["next"]] == [
            tok for s in t.steps for tok in b.token_strings(s.candidates)]
        return chart, token_labels(b.token_strings(t.decoder_ids)), (length_cap(T), length_cap(n))

    built = check_length_free(build)
    assert {len(translations[n].steps) for n in LENGTHS} != {len(translations[3].steps)}
    own, cross = built[8]["vconcat"][1]["hconcat"]
    assert own["width"] == cross["width"] == {"step": ie.STEP_CELL}
    assert cross["layer"][0]["encoding"]["x"]["scale"]["domain"] == {"expr": "sequence(0, nsrc)"}


def test_decoder_chart_of_a_longer_answer_lays_out_its_own_cap():
    """Answers of 17-24 steps (a model that does not stop) share a layout of their own: the
    trained model stops within 16 steps on every source, so these maps are made up."""
    rng = np.random.default_rng(0)

    def chart(T, n=5):
        maps = rng.random((2, 4, T, T))
        maps[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] = np.nan
        return ie.decoder_chart(maps, rng.random((2, 4, T, n)), ["<bos>"] + ["a"] * (T - 1),
                                list("abcde")[:n], [["note"]] * T, [["a", "b"]] * T,
                                [[0.6, 0.4]] * T, [0] * T, (0, 0))

    specs = {T: without_data(chart(T)) for T in (6, 16, 17, 24)}
    assert specs[6] == specs[16] != specs[17] == specs[24]


def test_architectures_chart_draws_each_models_masks():
    kinds = ed.architectures({n: preset(n) for n in ("bert-tiny", "gpt-tiny", "reverse-encdec")})
    src, tgt = ["a", "b", "c", "d"], ["<bos>", "d", "c", "b"]
    spec = ie.architectures_chart([(k.name, k.masks) for k in kinds], src, tgt)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    assert [g["title"]["text"] for g in spec["hconcat"]] == [k.name for k in kinds]
    assert params(spec)["src"]["value"] == src and params(spec)["tgt"]["value"] == tgt
    for p, kind in enumerate(kinds):
        for m, (what, allowed) in enumerate(kind.masks):
            rows = spec["datasets"][f"mask{p}{m}"]
            got = np.zeros(allowed.shape, bool)
            for r in rows:
                got[r["row"], r["col"]] = r["allowed"]
                assert r["v"] == ("may attend" if r["allowed"] else "−∞ (masked)")
            np.testing.assert_array_equal(got, allowed)
            assert len(rows) == allowed.size
    cross = spec["hconcat"][2]["hconcat"][2]  # queries from the decoder, keys from the source
    assert cross["encoding"]["y"]["axis"]["labelExpr"] == "tgt[datum.value]"
    assert cross["encoding"]["x"]["axis"]["labelExpr"] == "src[datum.value]"
