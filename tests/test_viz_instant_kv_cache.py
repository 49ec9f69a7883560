"""Lesson 16's instant charts: valid Vega-Lite, one row of weights per (step, layer, head) holding
the analysis' numbers, and a step slider over every step."""
import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tests.app.specs import unpacked
from tfviz.experiments import kv_cache as kc
from tfviz.viz import instant_kv_cache as ikv

SCHEMA = load_schema()


@pytest.fixture(scope="module")
def run():
    gpt = tfviz.load("gpt-tiny")
    side = kc.side_by_side(gpt, gpt.encode("the dog"), 5)
    labels = gpt.token_strings(list(side.prompt_ids + side.cached_ids))
    return side, labels


def test_steps_chart_is_valid_and_carries_every_row(run):
    side, labels = run
    spec = ikv.steps_chart(side.steps, side.rows, labels, (3, 4, 16), step=4)
    validate_jsonschema(spec, SCHEMA)
    step = next(p for p in spec["params"] if p["name"] == "step")
    assert (step["value"], step["bind"]["max"]) == (4, 4)
    rows = spec["datasets"]["weights"]
    assert len(rows) == 5 * 3 * 4
    for r in rows:
        np.testing.assert_allclose(unpacked(r["v"]), side.rows[r["step"]][r["layer"], r["head"]],
                                   atol=5e-5 + 1e-9)
    info = spec["datasets"]["timing"][::2]  # two rows per step, the cached run first
    assert [i["run"] for i in info] == [ikv.RUNS[0]] * 5
    assert [i["t"] for i in info] == [2, 3, 4, 5, 6]
    assert [i["shape"] for i in info] == [f"3 × 2 × 4 × {t} × 16" for t in range(2, 7)]
    assert len(spec["datasets"]["strips"]) == 3 * 2 * 6  # K and V strips of every layer, 6 positions


def test_cost_chart_is_valid(run):
    spec = ikv.cost_chart([16, 32], [1.0, 1.1], [1.2, 1.9], [10, 20], [30, 90])
    validate_jsonschema(spec, SCHEMA)
    assert len(spec["datasets"]["cost"]) == 4
