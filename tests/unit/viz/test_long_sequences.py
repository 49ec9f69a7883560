"""Lesson 17's charts: the mask grids, the reach grid (one cell per number of layers and
position), the cost chart's reference curves, the what-if's maps and Linformer's views (every
layer and head at once), all as Vega-Lite dicts checked against the schema."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tests.app.specs import param_values, unpacked
from tfviz.model.masks import reach_by_layer, sparse_pattern
from tests.support.charts import rows_of
from tfviz.viz.long_sequences import (ERROR_NAMES, cost_chart, linformer_views, mask_chart,
                                      reach_chart, whatif_maps)

SCHEMA = load_schema()


def _valid(spec: dict) -> dict:
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    return spec


def test_mask_chart_carries_every_cell():
    mask = sparse_pattern("sliding", 6, window=1)
    spec = _valid(mask_chart(mask, "sliding window"))
    (row,) = rows_of(spec)
    np.testing.assert_array_equal(unpacked(row["v"]).reshape(6, 6), mask)
    # by hand: a window of 1 allows the diagonal and both neighbours, 6 + 2 · 5 = 16 pairs
    assert "16 of the 36 pairs may read" in spec["description"]
    assert spec["encoding"]["color"]["scale"]["range"] == ["#f2f2f2", "#1f4e79"]


def test_reach_strip_holds_every_layer_and_colours_both_kinds():
    rows = np.asarray(reach_by_layer("sliding", 10, 3, window=2))
    spec = _valid(reach_chart(rows))
    data = rows_of(spec)
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
                                                   window=2)), 5)
    reached = [d["position"] for d in rows_of(middle) if d["reached"] == "yes"]
    assert reached == [3, 4, 5, 6, 7]  # an encoder's query 5 reads 2 on each side
    assert middle["encoding"]["x"]["axis"]["title"] == "position (the query is position 5)"


def test_cost_chart_references_pass_through_the_last_measured_point():
    ns, full, window = (100, 200, 400), (1.0, 3.0, 20.0), (0.5, 0.9, 2.0)
    spec = _valid(cost_chart(ns, full, window, "time (ms)"))
    data = rows_of(spec)
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
    assert spec["layer"][1]["transform"] == [{"filter": "datum.curve == 'measured'"}]


def test_whatif_maps_carry_every_layer_and_head_of_both_runs():
    rng = np.random.default_rng(0)
    full, sparse = rng.dirichlet(np.ones(4), size=(2, 2, 3, 4))  # two runs of (L, H, n, n)
    spec = _valid(whatif_maps(full, sparse, ["the", "the", "cat", "sat"], "BigBird", layer=1, head=2))
    assert param_values(spec)["layer"] == 1 and param_values(spec)["head"] == 2
    for name, maps in (("full", full), ("sparse", sparse)):
        rows = spec["datasets"][name]
        assert [(r["layer"], r["head"]) for r in rows] == [(l, h) for l in range(2) for h in range(3)]
        for r in rows:  # sent to 4 decimals
            np.testing.assert_allclose(unpacked(r["v"]).reshape(4, 4), maps[r["layer"], r["head"]],
                                       atol=5e-5 + 1e-12)
    assert spec["datasets"]["full"][0]["tokens"].split("\x1f") == ["0 the", "1 the", "2 cat", "3 sat"]
    titles = [v["title"]["text"] for v in spec["hconcat"]]
    assert titles == ["full", "BigBird"]


def test_linformer_views_carry_every_layer_and_the_errors_at_k():
    rng = np.random.default_rng(1)
    maps = rng.dirichlet(np.ones(2), size=(2, 3, 5))  # (L, H, n, k = 2)
    pooled, best = rng.random((2, 5)), rng.random((2, 5))
    spec = _valid(linformer_views(maps, pooled, best, list("abcde"), layer=1))
    rows = spec["datasets"]["maps"]
    for r in rows:
        np.testing.assert_allclose(unpacked(r["v"]).reshape(5, 2), maps[r["layer"], r["head"]],
                                   atol=5e-5 + 1e-12)
    errors = spec["datasets"]["errors"]
    for name, want in zip(ERROR_NAMES, (pooled, best)):
        for layer in range(2):
            got = [e["error"] for e in errors if e["method"] == name and e["layer"] == layer]
            np.testing.assert_allclose(got, want[layer], atol=5e-5 + 1e-12)
    assert spec["datasets"]["chosen"] == [{"k": 2}]
    assert param_values(spec)["at"] == [[pooled[0, 1], best[0, 1]], [pooled[1, 1], best[1, 1]]]
    assert param_values(spec)["pooled"] == ["0", "1"]
    # the pooled line is the palette's vermillion, as the page's caption names it
    assert spec["vconcat"][1]["layer"][0]["encoding"]["color"]["scale"]["range"][0] == "#D55E00"
