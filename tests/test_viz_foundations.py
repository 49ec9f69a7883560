"""Lessons 1-4 figures: right data, titles, axis labels with token strings, safe HTML."""
import json

import numpy as np
import pytest

import tfviz
from tfviz.analysis import lookup, pipeline, positions
from tfviz.experiments import rope
from tfviz.tokenizer import train_bpe
from tfviz.viz import lookup as vlookup
from tfviz.viz import pipeline as vpipeline
from tfviz.viz import positions as vpositions
from tfviz.viz import tokens as vtokens
from tfviz.viz.style import token_labels


def _records(chart):
    """The rows an altair chart was built from."""
    spec = chart.to_dict()
    (rows,) = spec["datasets"].values()
    return spec, rows


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


def test_rnn_chart_has_both_panels():
    rows = pipeline.rnn_vs_transformer(range(2, 6))
    spec = _tour_spec(vpipeline.rnn_vs_transformer_chart(rows))
    (panels,) = spec["hconcat"]
    assert panels["facet"]["column"]["field"] == "measure"
    assert panels["data"]["values"] == rows
    assert {r["measure"] for r in rows} == {pipeline.STEPS, pipeline.PATH}
    assert panels["spec"]["encoding"]["x"]["title"] == "sentence length n (tokens)"


# ----- positions figures -----------------------------------------------------------------------

def test_embedding_heatmap_is_the_trace(trace):
    fig = vpositions.vectors_heatmap(trace["hook_embed"], trace.tokens, title="E rows")
    np.testing.assert_allclose(fig.data[0].z, trace["hook_embed"], atol=1e-6)
    assert list(fig.layout.yaxis.ticktext) == token_labels(trace.tokens, escape=True)
    assert fig.layout.title.text == "E rows" and fig.layout.xaxis.title.text == "dimension"


def test_pe_heatmap_and_similarity_chart():
    table = positions.sinusoid_table(10, 8)
    fig = vpositions.pe_heatmap(table, title="PE")
    np.testing.assert_allclose(fig.data[0].z, table)
    assert fig.data[0].zmin == -1 and fig.layout.yaxis.title.text == "position k"
    sims = positions.similarity_by_distance(table)
    spec, rows = _records(vpositions.similarity_chart({"sine": sims}))
    np.testing.assert_allclose([r["cosine similarity"] for r in rows], sims)
    assert spec["encoding"]["y"]["title"] == "cosine similarity"


def test_rope_and_alibi_figures():
    rows = rope.rope_scores(np.ones(4), np.arange(4.0), 2, [2, 6])
    spec, data = _records(vpositions.rope_chart(rows))
    assert [d["q·k after rotation"] for d in data] == [r["q·k after rotation"] for r in rows]
    slopes, bias = positions.alibi(2, 3)
    fig = vpositions.alibi_figure(bias, slopes, ["a", "b", "c"])
    assert len(fig.data) == 2
    np.testing.assert_allclose(fig.data[1].z, bias[1])
    assert list(fig.data[0].y) == ["0 a", "1 b", "2 c"]
    assert fig.layout.annotations[0].text == "head 0: m = 0.0625"


def test_permutation_figures_put_rows_in_the_new_order():
    original = np.arange(12.0).reshape(3, 4)
    order = np.array([2, 0, 1])
    left, right = vpositions.permutation_figures(original, original[order] + 1, order,
                                                 ["a", "b", "<b>"], dims=2)
    np.testing.assert_allclose(left.data[0].z, original[order][:, :2])
    np.testing.assert_allclose(right.data[0].z, original[order][:, :2] + 1)
    assert list(left.layout.yaxis.ticktext) == ["&lt;b&gt; (was 2)", "a (was 0)", "b (was 1)"]
    assert left.data[0].zmin == right.data[0].zmin  # one colour scale for both


# ----- lookup figures --------------------------------------------------------------------------

def test_lookup_figures():
    t = lookup.toy_table()
    q = np.array([1.0, 0.5])
    soft = lookup.soft_lookup(q, t.keys, t.values)
    hard = lookup.hard_lookup(q, t.keys, t.values)
    plane = vlookup.key_plane(t.names, t.keys, q, soft.weights)
    np.testing.assert_allclose(plane.data[0].x, t.keys[:, 0])
    assert list(plane.data[0].text) == list(t.names)
    assert list(plane.data[1].x) == [1.0] and plane.layout.title.text == "Keys and your query"
    spec, rows = _records(vlookup.weights_chart(t.names, soft.weights, hard.weights))
    soft_rows = [r["weight"] for r in rows if r["lookup"] == vlookup.SOFT]
    hard_rows = [r["weight"] for r in rows if r["lookup"] == vlookup.HARD]
    np.testing.assert_allclose(soft_rows, soft.weights)
    assert hard_rows == hard.weights.tolist()
    sweep = lookup.temperature_sweep(q, t.keys, t.values, [0.1, 1.0])
    fig = vlookup.sweep_chart(sweep, current=1.0)
    assert list(fig.data[0].x) == [0.1, 1.0]
    assert list(fig.data[0].y) == [r["weight on best key"] for r in sweep]
    assert fig.layout.xaxis.type == "log" and len(fig.layout.shapes) == 1
