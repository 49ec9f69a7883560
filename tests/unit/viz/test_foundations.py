"""Lessons 1-4 figures: right data, titles, axis labels with token strings, safe HTML."""
import json

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import lookup, pipeline, positions
from tfviz.experiments import rope
from tfviz.tokenizer import train_bpe
from tfviz.viz import lookup as vlookup
from tfviz.viz import pipeline as vpipeline
from tfviz.viz import positions as vpositions
from tfviz.viz.kit import instant as iv
from tfviz.viz import tokens as vtokens
from tfviz.viz.kit.style import token_labels


@pytest.fixture(scope="module")
def trace():
    return tfviz.load("gpt-tiny").trace("the cat sat")


# ----- token chips -----------------------------------------------------------------------------

def test_chips_escape_every_token():
    out = vtokens.token_chips_html(["<script>alert(1)</script>", "a&b", "</w>", "'"], [1, 2, 3, 4])
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "a&amp;b" in out and "&lt;/w&gt;" in out and "&#x27;" in out
    assert out.count("<span title=") == 4


def test_chips_show_ids_and_colour_repeats_alike():
    out = vtokens.token_chips_html(["the", "cat", "the"], [7, 9, 7])
    for i in ("7", "9"):
        assert f">{i}</span>" in out
    c7 = vtokens.chip_colour(7)
    assert out.count(f"background:{c7}") == 2
    assert vtokens.chip_colour("low") == vtokens.chip_colour("low")
    assert vtokens.chip_colour("low") in vtokens.CHIP_COLOURS


def test_chips_mark_unknown_and_highlighted():
    out = vtokens.token_chips_html(["a", "z"], unknown=[False, True], highlight=[True, False])
    assert "dashed" in out and "unknown" in out and "2px solid #333" in out


def test_segmentation_and_bpe_tables_follow_the_history():
    h = train_bpe("low low lower <b>", num_merges=2, top_k=5)
    step = h.steps[1]
    seg = vtokens.segmentation_html(step.segmentation, step.word_freqs, step.changed)
    assert "&lt;b&gt;" in seg and "<b>low ×2</b> ✱" in seg
    rows = vtokens.pair_table(step.pair, step.count, step.runners_up)
    assert rows[0] == {"pair": "l + o", "count": 3, "chosen": "✔ merged"}  # low×2 + lower×1
    assert {r["pair"] for r in rows[1:]} >= {"o + w"}
    assert vtokens.merge_table(h.merges, 2) == [
        {"step": 1, "merge": "l + o", "new symbol": "lo"},
        {"step": 2, "merge": "lo + w", "new symbol": "low"}]


# ----- tour charts -----------------------------------------------------------------------------

def _tour_spec(spec: dict) -> dict:
    """A tour chart (a plain dict): valid Vega-Lite, JSON as it is, and no top-level data,
    which Streamlit would turn into Arrow through pyarrow, importing pandas (tfviz.viz.pipeline)."""
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema.core import load_schema

    validate_jsonschema(spec, load_schema())
    json.dumps(spec, allow_nan=False)
    assert "data" not in spec and "datasets" not in spec
    return spec


def test_predictions_chart_data_and_title(trace):
    preds = pipeline.top_predictions(trace.logits[-1], 5, str)
    spec = _tour_spec(vpipeline.predictions_chart(preds, title="next?"))
    assert spec["title"] == "next?"
    for layer in spec["layer"]:  # the bars and their numbers, each with the rows
        rows = layer["data"]["values"]
        assert [r["probability"] for r in rows] == [p for _, _, p in preds]
        assert [r["id"] for r in rows] == [i for i, _, _ in preds]
        assert layer["encoding"]["y"]["sort"] == [f"{t}  (id {i})" for i, t, _ in preds]
    bars = spec["layer"][0]["encoding"]
    assert bars["x"]["title"] == "probability" and bars["y"]["title"] == "next token"
    assert spec["layer"][1]["encoding"]["text"]["format"] == ".3f"


def test_rnn_chart_has_both_panels_and_a_slider_of_its_own():
    rows = pipeline.rnn_vs_transformer(range(2, 41))
    spec = _tour_spec(vpipeline.rnn_vs_transformer_chart(rows, shown=13))
    (panels,) = spec["hconcat"]
    assert panels["facet"]["column"]["field"] == "measure"
    assert panels["data"]["values"] == rows
    # the slider picks the longest sentence drawn, from 4 to the longest row; it starts at
    # ``shown`` (kept within those ends), and the rows are filtered by it in the browser
    (pick,) = spec["params"]
    assert (pick["value"], pick["bind"]["min"], pick["bind"]["max"]) == (13, 4, 40)
    assert panels["transform"] == [{"filter": f"datum.n <= {pick['name']}"}]
    low = _tour_spec(vpipeline.rnn_vs_transformer_chart(rows, shown=2))["params"][0]["value"]
    high = _tour_spec(vpipeline.rnn_vs_transformer_chart(rows, shown=99))["params"][0]["value"]
    assert (low, high) == (4, 40)
    assert {r["measure"] for r in rows} == {pipeline.STEPS, pipeline.PATH}
    assert panels["spec"]["encoding"]["x"]["title"] == "sentence length n (tokens)"


# ----- positions charts ------------------------------------------------------------------------

def _param(spec: dict, name: str):
    return next(p["value"] for p in spec["params"] if p["name"] == name)


def _matrix(spec: dict, name: str = "matrix", index: int = 0) -> np.ndarray:
    """The matrix a heatmap carries (``instant_matrix.matrix_rows`` / ``stack_rows``), as numbers."""
    rows = spec["datasets"][name]
    packed = rows[index]["v"]
    return np.array([np.nan if v == "" else float(v) for v in packed.split(",")])


def test_embedding_heatmap_is_the_trace(trace):
    spec = vpositions.vectors_heatmap(trace["hook_embed"], trace.tokens, title="E rows")
    embed = trace["hook_embed"]
    # packed to instant.DIGITS = 4 decimals: within 5e-5 of the trace
    np.testing.assert_allclose(_matrix(spec).reshape(embed.shape), embed, atol=5e-5)
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)  # in the data: length-free
    # the colour range is ±the largest |value| of the rows, computed here by torch (a maximum of
    # the same numbers: nothing rounded)
    assert spec["datasets"]["matrix"][0]["s_bound"] == pytest.approx(
        float(torch.tensor(embed).abs().max()), rel=1e-6)
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == {"expr": "[-bound, bound]"}
    assert spec["title"] == "E rows" and spec["layer"][0]["encoding"]["x"]["axis"]["title"] == "dimension"
    assert spec["description"]
    counted = vpositions.vectors_heatmap(embed, trace.tokens, title="Your {n} tokens")
    assert counted["title"] == {"text": {"expr": '"Your " + ntok + " tokens"'}}


def _byte_bundle():
    from tfviz.bundle import Bundle
    from tfviz.config import preset
    from tfviz.model import Transformer
    from tfviz.tokenizer.byte import ByteTokenizer

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    return Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)


def test_the_embedding_lessons_sentence_charts_are_length_free():
    """The rows of the embeddings and positions, the model-without-positions maps and ALiBi's
    penalty: sentences of 3-16 tokens share one spec (a new one swaps the data), and each
    chart carries its own sentence's numbers and labels."""
    from tests.support.length_free import check_length_free

    bundle = _byte_bundle()
    letters = "abcdefghijklmnopqrstuvwxyz"

    def rows(n):
        trace = bundle.trace(letters[:n])  # a byte a token
        chart = vpositions.vectors_heatmap(trace["hook_pos_embed"], trace.tokens,
                                           title="Position vectors of your {n} tokens")
        np.testing.assert_allclose(_matrix(chart).reshape(n, -1), trace["hook_pos_embed"], atol=5e-5)
        return chart, token_labels(trace.tokens)

    check_length_free(rows)

    def permuted(n):
        order = np.arange(n)[::-1]
        original, moved = np.random.default_rng(n).normal(size=(2, n, 12))
        chart = vpositions.permutation_map(original, moved, order, list(letters[:n]))
        np.testing.assert_allclose(_matrix(chart).reshape(n, 12), original[order], atol=5e-5)
        bound = max(np.abs(original).max(), np.abs(moved).max())
        assert chart["datasets"]["matrix"][0]["s_bound"] == pytest.approx(bound)
        return chart, [f"{letters[i]} (was {i})" for i in order]

    check_length_free(permuted, past_cap=False)  # 24 rows of 24 px fit its 600 px: one layout

    def penalty(n):
        shown = min(n, vpositions.ALIBI_TOKENS)
        slopes, bias = positions.alibi(4, shown)
        chart = vpositions.alibi_figure(bias, slopes, list(letters[:shown]))
        for r in chart["datasets"]["bias"]:
            np.testing.assert_allclose(_matrix(chart, "bias", r["head"]).reshape(shown, shown),
                                       bias[r["head"]], atol=5e-5)
        assert chart["datasets"]["bias"][0]["s_low"] == pytest.approx(-slopes.max() * (shown - 1))
        return chart, token_labels(letters[:shown]), vpositions.ALIBI_TOKENS

    check_length_free(penalty)


def test_the_rope_charts_hold_nothing_of_the_vectors_in_their_spec():
    """Another sentence gives other q and k (and another distance to its last token): the
    pairs' planes and the score lines keep their spec and swap their data."""
    from tests.support.length_free import without_data

    rng = np.random.default_rng(0)
    turned = []
    for scale in (1.0, 5.0):
        q, k = rng.normal(size=(2, 8)) * scale
        spec = vpositions.rope_turn_figure(q, -q, k, k, 3, 1)
        first = spec["datasets"]["rows"][0]
        for i in range(4):  # each plane's range: 1.15 × its longest arrow (torch's norm)
            longest = max(float(torch.linalg.vector_norm(torch.tensor(v[2 * i:2 * i + 2])))
                          for v in (q, k))
            assert first[f"s_b{i}"] == pytest.approx(1.15 * longest)
        turned.append(without_data(spec))
    assert turned[0] == turned[1]
    lines = [vpositions.rope_chart(rope.rope_scores(np.ones(4), np.arange(4.0), d, [d, d + 4]),
                                   model_point={"query position": d, "distance": d,
                                                "q·k after rotation": 1.0})
             for d in (2, 7)]
    assert without_data(lines[0]) == without_data(lines[1])


def test_pe_heatmap_and_similarity_chart():
    table = positions.sinusoid_table(10, 8)
    spec = vpositions.pe_heatmap(table, title="PE")
    np.testing.assert_allclose(_matrix(spec).reshape(10, 8), table, atol=5e-5)  # 4 decimals
    rect = spec["layer"][0]["encoding"]
    assert rect["color"]["scale"]["domain"] == [-1.0, 1.0] and rect["y"]["axis"]["title"] == "position k"
    sims = positions.similarity_by_distance(table)
    chart = vpositions.similarity_chart({"sine": sims})
    rows = chart["datasets"]["rows"]
    np.testing.assert_allclose([r["cosine similarity"] for r in rows], sims, atol=5e-5)
    assert chart["encoding"]["y"]["title"] == "cosine similarity"


def test_rope_and_alibi_figures():
    rows = rope.rope_scores(np.ones(4), np.arange(4.0), 2, [2, 6])
    spec = vpositions.rope_chart(rows, model_point={"query position": 2, "distance": 2,
                                                     "q·k after rotation": 1.5})
    data = spec["datasets"]["rows"]
    np.testing.assert_allclose([d["q·k after rotation"] for d in data],
                               [r["q·k after rotation"] for r in rows], atol=5e-5)
    assert spec["datasets"]["model"][0]["q·k after rotation"] == 1.5
    slopes, bias = positions.alibi(2, 3)
    spec = vpositions.alibi_figure(bias, slopes, ["a", "b", "c"])
    assert len(spec["hconcat"]) == 2
    np.testing.assert_allclose(_matrix(spec, "bias", 1).reshape(3, 3), bias[1], atol=5e-5)
    assert [r["head"] for r in spec["datasets"]["bias"]] == [0, 1]
    assert iv.spec_tokens(spec) == ["0 a", "1 b", "2 c"]
    assert spec["datasets"]["bias"][0]["s_low"] == -0.125  # head 0: m = 1/16, 2 tokens apart
    assert spec["hconcat"][0]["title"]["text"] == "head 0: m = 0.0625"


def test_rope_turn_figure_draws_each_pair_before_and_after():
    q, k = np.arange(8.0), -np.arange(8.0)
    spec = vpositions.rope_turn_figure(q, q + 1, k, k * 0.5, 3, 1, pairs=(0, 2))
    assert [p["title"]["text"] for p in spec["hconcat"]] == ["pair 0", "pair 2"]
    rows = spec["datasets"]["rows"]
    pair2 = {r["series"]: (r["x"], r["y"]) for r in rows if r["pair"] == 2}
    assert pair2 == {"q before": (4.0, 5.0), "q turned": (5.0, 6.0),
                     "k before": (-4.0, -5.0), "k turned": (-2.0, -2.5)}
    assert {r["when"] for r in rows if r["vector"] == "q"} == {"before", "turned at position 3"}


def test_position_cosine_heatmap_frames_the_trained_rows():
    cosine = np.corrcoef(np.random.default_rng(0).normal(size=(6, 16)))
    spec = vpositions.position_cosine_heatmap(cosine, 4, title="C")
    np.testing.assert_allclose(_matrix(spec).reshape(6, 6), cosine, atol=5e-5)
    frame = spec["layer"][-1]
    assert frame["mark"]["stroke"] == "black" and frame["data"]["values"] == [{"a": 0, "b": 3}]


def test_permutation_maps_put_rows_in_the_new_order():
    original = np.arange(12.0).reshape(3, 4)
    order = np.array([2, 0, 1])
    left = vpositions.permutation_map(original, original[order] + 1, order, ["a", "b", "<b>"], dims=2)
    right = vpositions.permutation_map(original, original[order] + 1, order, ["a", "b", "<b>"], dims=2,
                                       reordered_first=True)
    np.testing.assert_allclose(_matrix(left).reshape(3, 2), original[order][:, :2])
    np.testing.assert_allclose(_matrix(right).reshape(3, 2), original[order][:, :2] + 1)
    assert iv.spec_tokens(left) == ["<b> (was 2)", "a (was 0)", "b (was 1)"]  # drawn as typed
    bound = lambda s: s["datasets"]["matrix"][0]["s_bound"]  # noqa: E731
    assert bound(left) == bound(right) == 10.0  # one colour scale for both


# ----- lookup charts ---------------------------------------------------------------------------

def test_lookup_figures():
    t = lookup.toy_table()
    q = np.array([1.0, 0.5])
    soft = lookup.soft_lookup(q, t.keys, t.values)
    hard = lookup.hard_lookup(q, t.keys, t.values)
    plane = vlookup.key_plane(t.names, t.keys, q, soft.weights)
    keys = plane["datasets"]["rows"]
    np.testing.assert_allclose([r["x"] for r in keys], t.keys[:, 0], atol=5e-5)
    np.testing.assert_allclose([r["weight"] for r in keys], soft.weights, atol=5e-5)
    assert [r["key"] for r in keys] == list(t.names)
    assert plane["datasets"]["query"][0]["x"] == 1.0 and plane["title"] == "Keys and your query"
    spec = vlookup.weights_chart(t.names, soft.weights, hard.weights)
    rows = spec["datasets"]["rows"]
    soft_rows = [r["weight"] for r in rows if r["lookup"] == vlookup.SOFT]
    hard_rows = [r["weight"] for r in rows if r["lookup"] == vlookup.HARD]
    np.testing.assert_allclose(soft_rows, soft.weights, atol=5e-5)
    assert hard_rows == hard.weights.tolist()
    sweep = lookup.temperature_sweep(q, t.keys, t.values, [0.1, 1.0])
    fig = vlookup.sweep_chart(sweep, current=1.0)
    data = fig["datasets"]["rows"]
    assert [r["temperature"] for r in data] == [0.1, 1.0]
    np.testing.assert_allclose([r["weight on best key"] for r in data],
                               [r["weight on best key"] for r in sweep], atol=5e-5)
    assert fig["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    assert fig["datasets"]["current"] == [{"temperature": 1.0, "label": "your τ = 1"}]


def _colours_of(spec, field: str) -> dict:
    """{value: colour} of every colour encoding of ``field`` in a spec, at any depth."""
    found = {}
    if isinstance(spec, dict):
        colour = spec.get("color")
        if isinstance(colour, dict) and colour.get("field") == field:
            found.update(zip(colour["scale"]["domain"], colour["scale"]["range"]))
        for value in spec.values():
            found.update(_colours_of(value, field))
    elif isinstance(spec, list):
        for value in spec:
            found.update(_colours_of(value, field))
    return found


def test_lesson_4s_two_charts_give_each_meaning_one_colour():
    from tfviz.analysis.lookup import effective_counts
    from tfviz.reference import softmax
    from tfviz.viz.lookup import lookup_weights
    from tfviz.viz.kit.style import MEANINGS

    t = lookup.toy_table()
    soft = lookup.soft_lookup([1.0, 0.5], t.keys, t.values)
    hard = lookup.hard_lookup([1.0, 0.5], t.keys, t.values)
    toy = vlookup.weights_chart(t.names, soft.weights, hard.weights)  # section 1
    patterns = softmax(np.random.default_rng(0).normal(size=(1, 1, 3, 3)))  # (L, H, n, n)
    model = lookup_weights(patterns, ["a", "b", "c"], effective_counts(patterns))  # section 2
    meant = {vlookup.SOFT: MEANINGS["attention"], vlookup.HARD: MEANINGS["hard lookup"]}
    assert _colours_of(toy, "lookup") == _colours_of(model, "lookup") == meant
    assert MEANINGS["attention"] != MEANINGS["hard lookup"]


def test_positions_and_lookup_charts_are_valid_vega_lite(trace):
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema.core import load_schema

    t = lookup.toy_table()
    q = np.array([1.0, 0.5])
    soft = lookup.soft_lookup(q, t.keys, t.values)
    slopes, bias = positions.alibi(2, 3)
    table = positions.sinusoid_table(6, 4)
    specs = [
        vpositions.vectors_heatmap(trace["hook_embed"], trace.tokens, title="E"),
        vpositions.pe_heatmap(table, title="PE"),
        vpositions.similarity_chart({"sine": positions.similarity_by_distance(table)}),
        vpositions.rope_chart(rope.rope_scores(np.ones(4), np.arange(4.0), 2, [2, 6]),
                              model_point={"query position": 2, "distance": 2, "q·k after rotation": 1.0}),
        vpositions.position_cosine_heatmap(np.eye(5), 3, title="C"),
        vpositions.rope_turn_figure(np.ones(8), np.ones(8), np.ones(8), np.ones(8), 1, 0),
        vpositions.alibi_figure(bias, slopes, ["a", "b", "c"]),
        vpositions.permutation_map(np.eye(3), np.eye(3), np.array([2, 0, 1]), ["a", "b", "c"]),
        vlookup.key_plane(t.names, t.keys, q, soft.weights),
        vlookup.weights_chart(t.names, soft.weights, lookup.hard_lookup(q, t.keys, t.values).weights),
        vlookup.sweep_chart(lookup.temperature_sweep(q, t.keys, t.values, [0.1, 1.0]), current=1.0),
    ]
    schema = load_schema()
    for spec in specs:
        validate_jsonschema(json.loads(json.dumps(spec)), schema)  # as the browser receives it
        assert spec["description"]
