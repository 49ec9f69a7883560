"""The training lab's charts as Vega-Lite dicts: the curves carry each run's binned loss and
held-out accuracy; the attention chart carries every checkpoint, example, layer and head of a
real run, and its expert chart every layer, each checked against the run's own numbers."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tests.app.specs import param_values, unpacked
from tfviz.lab.settings import LabSettings
from tfviz.lab.train import RunLog, train
from tfviz.viz import lab as lv
from tests.support.charts import rows_of

SCHEMA = load_schema()


def _valid(spec: dict) -> dict:
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    return spec


@pytest.fixture(scope="module")
def moe_run():
    """A tiny MoE run of the reverse task: 2 layers, 2 heads, 2 experts, 10 steps."""
    s = LabSettings.default("reverse").replace(steps=10, d_model=16, n_experts=2, top_k=1)
    return train(s, RunLog(s))


def test_curves_carry_the_binned_loss_and_the_accuracy():
    losses = [4.0, 2.0, 3.0, 1.0] * 200  # 800 steps: bins of 3, at most MAX_POINTS of them
    spec = _valid(lv.curves_chart(("1: lr 0.01", "2: lr 0.001"), (losses, (2.0, 1.0)),
                                  ((0, 800), (0, 2)), ((0.1, 0.5), (0.2, 0.25)), chance=0.1))
    loss = rows_of(spec, "loss")
    first = [r for r in loss if r["run"] == "1: lr 0.01"]
    assert len(first) == 267 and first[0] == {"run": "1: lr 0.01", "step": 3, "loss": 3.0}
    assert first[1]["loss"] == pytest.approx((1.0 + 4.0 + 2.0) / 3, abs=5e-5)
    assert [r["loss"] for r in loss if r["run"] == "2: lr 0.001"] == [2.0, 1.0]
    assert rows_of(spec, "accuracy")[-1] == {"run": "2: lr 0.001", "step": 2, "accuracy": 0.25}
    assert rows_of(spec, "chance") == [{"chance": 0.1}]
    assert spec["hconcat"][0]["encoding"]["color"]["scale"]["domain"] == ["1: lr 0.01", "2: lr 0.001"]


def test_attention_forming_carries_every_map_of_the_run(moe_run):
    run = moe_run
    steps = tuple(c.step for c in run.checkpoints)
    spec = _valid(lv.attention_forming(tuple(c.patterns for c in run.checkpoints), steps,
                                       run.shown_tokens, layer=1, head=1))
    rows = spec["datasets"]["maps"]
    n_ckpt, n_ex = len(run.checkpoints), len(run.shown_tokens)
    assert len(rows) == n_ckpt * n_ex * 2 * 2
    longest = max(len(t) for t in run.shown_tokens)
    for r in rows[::7]:
        want = run.checkpoints[r["checkpoint"]].patterns[r["example"]][r["layer"], r["head"]]
        t = want.shape[-1]
        got = unpacked(r["v"]).reshape(longest, longest)
        np.testing.assert_allclose(got[:t, :t], want, atol=5e-5 + 1e-6)  # sent to 4 decimals
        assert np.isnan(got[t:]).all() and np.isnan(got[:, t:]).all()  # past a shorter example
    values = param_values(spec)
    assert values["checkpoint"] == n_ckpt - 1 and values["layer"] == 1 and values["head"] == 1
    assert values["steps"] == list(steps)
    assert values["extokens"][0][:2] == [f"0 {run.shown_tokens[0][0]}", f"1 {run.shown_tokens[0][1]}"]


def test_attention_forming_sends_pictures_past_its_budget():
    maps = np.full((2, 2, 30, 30), 1 / 30)
    patterns = [[maps, maps]] * 40  # 40 · 2 · 4 · 900 cells: more than VALUE_CELLS
    spec = _valid(lv.attention_forming(patterns, range(40), [["a"] * 30, ["b"] * 30]))
    row = spec["datasets"]["maps"][0]
    assert "img" in row and "v" not in row and row["img"].startswith("data:image/png;base64,")


def test_expert_load_carries_every_layer(moe_run):
    run = moe_run
    loads = tuple(c.expert_load for c in run.checkpoints)
    spec = _valid(lv.expert_load_chart(tuple(c.step for c in run.checkpoints), loads))
    rows = rows_of(spec)
    assert len(rows) == len(loads) * 2 * 2
    for r in rows:
        c = [c.step for c in run.checkpoints].index(r["step"])
        assert r["share"] == pytest.approx(loads[c][r["layer"], int(r["expert"].split()[1])], abs=5e-5)
    for c, load in enumerate(loads):  # each layer's first choices share out every token
        np.testing.assert_allclose(load.sum(-1), 1, atol=1e-6)  # float64 shares of whole counts
