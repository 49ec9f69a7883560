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
from tfviz.viz.style import token_labels

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


def test_steps_chart_is_length_free():
    """Prompts of 3-16 tokens share one spec, whatever the number of steps the model takes
    before <eos> (here 5 at most): each chart carries its own prompt's and answer's tokens,
    its number of steps, and at each step the new query's row of weights, which a full
    recompute of the first t tokens (the trace's own last row, no cache) gives as well."""
    from tests.support.length_free import check_length_free
    from tfviz.trace import run_with_trace

    gpt = tfviz.load("gpt-tiny")
    long = gpt.encode("The animal didn't cross the street because it was too tired, and the dog "
                      "saw the bird on the mat by the door.")

    def build(n):
        side = kc.side_by_side(gpt, long[:n], 5, repeats=1)
        ids = list(side.prompt_ids + side.cached_ids)
        labels = gpt.token_strings(ids)
        chart = ikv.steps_chart(side.steps, side.rows, labels, (3, 4, 16), most=5)
        steps = len(side.steps)
        assert [s.t for s in side.steps] == list(range(n, n + steps))
        assert chart["datasets"]["weights"][0]["s_nsteps"] == steps
        for r in chart["datasets"]["weights"]:
            full = run_with_trace(gpt.model, ids[:n + r["step"]])  # no cache: t tokens read again
            np.testing.assert_allclose(unpacked(r["v"]), full["pattern", r["layer"]][r["head"], -1],
                                       atol=5e-5 + 1e-6)  # four decimals sent; the cached
            # run adds the same float32 products in another order (its row_gap, about 1e-7)
        t_read = n + steps - 1  # the tokens the last step read: the labels the chart counts
        return chart, token_labels(labels[:t_read]), ikv.steps_layout(n, 5)

    built = check_length_free(build)
    step = next(p for p in built[13]["params"] if p["name"] == "step")
    assert (step["value"], step["bind"]["max"]) == (1, 4)  # opens on step 1; the page fits it
    stepi = next(p for p in built[13]["params"] if p["name"] == "stepi")
    assert stepi["expr"] == "max(0, min(step, nsteps - 1))"
