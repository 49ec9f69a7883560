"""Lesson 17's charts: the reach grid (one cell per number of layers and position), the cost
chart's reference curves, the attention maps and the two error lines."""
import numpy as np
import pytest

from tfviz.model.masks import reach_by_layer
from tfviz.viz.long_sequences import attention_map, cost_chart, error_chart, reach_chart


def test_reach_strip_holds_every_layer_and_colours_both_kinds():
    rows = np.asarray(reach_by_layer("sliding", 10, 3, window=2))
    spec = reach_chart(rows).to_dict()
    data = spec["data"]["values"]
    assert len(data) == rows.size
    # by hand: a window of 2 lets the last token (9) reach 2 more positions per layer
    for layer in (1, 2, 3):
        reached = [d["position"] for d in data if d["layers"] == layer and d["reached"] == "yes"]
        assert reached == list(range(9 - 2 * layer, 10))
    scale = spec["encoding"]["color"]["scale"]
    assert set(scale["domain"]) == {d["reached"] for d in data} == {"yes", "no"}
    assert spec["height"] == {"step": 22}  # 22 px a row per number of layers, axes on top
    assert spec["encoding"]["x"]["axis"]["title"] == "position (the query is position 9)"
    middle = reach_chart(np.asarray(reach_by_layer("sliding", 10, 1, query=5, causal=False,
                                                   window=2)), 5).to_dict()
    reached = [d["position"] for d in middle["data"]["values"] if d["reached"] == "yes"]
    assert reached == [3, 4, 5, 6, 7]  # an encoder's query 5 reads 2 on each side
    assert middle["encoding"]["x"]["axis"]["title"] == "position (the query is position 5)"


def test_cost_chart_references_pass_through_the_last_measured_point():
    ns, full, window = (100, 200, 400), (1.0, 3.0, 20.0), (0.5, 0.9, 2.0)
    spec = cost_chart(ns, full, window, "time (ms)").to_dict()
    data = [r for layer in spec["layer"] for r in layer["data"]["values"]]
    measured = {(r["kind"], r["n"]): r["value"] for r in data if r["curve"] == "measured"}
    assert measured[("full", 400)] == 20.0 and measured[("sliding window", 100)] == 0.5
    for kind, curve, top, power in (("full", "reference ∝ n²", 20.0, 2),
                                    ("sliding window", "reference ∝ n·w", 2.0, 1)):
        ref = [r for r in data if r["curve"] == curve]
        assert {r["kind"] for r in ref} == {kind}
        for r in ref:  # by hand: top · (n / 400)^power
            assert r["value"] == pytest.approx(top * (r["n"] / 400) ** power)
        assert max(ref, key=lambda r: r["n"])["value"] == pytest.approx(top)
    assert spec["layer"][0]["encoding"]["strokeDash"]["field"] == "curve"


def test_attention_map_labels_tokens_and_keeps_the_weights():
    w = np.array([[1.0, 0.0], [0.25, 0.75]])
    spec = attention_map(w, ["the", "the"], "full").to_dict()
    rows = spec["data"]["values"]
    assert [(r["query"], r["key"], r["weight"]) for r in rows] == [
        ("0 the", "0 the", 1.0), ("0 the", "1 the", 0.0), ("1 the", "0 the", 0.25),
        ("1 the", "1 the", 0.75)]


def test_error_chart_draws_both_methods():
    spec = error_chart((1, 2), (1.5, 1.2), (0.3, 0.0)).to_dict()
    rows = spec["data"]["values"]
    methods = [r["method"] for r in rows]
    assert methods == ["mean-pooled keys and values (untrained)"] * 2 + [
        "closest rank-k map (truncated SVD)"] * 2
    # the pooled line is the palette's vermillion, as the page's caption names it
    assert spec["encoding"]["color"]["scale"]["range"][0] == "#D55E00"
    assert sorted(r["error"] for r in rows) == [0.0, 0.3, 1.2, 1.5]
