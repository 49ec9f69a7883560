"""The training lab's induction task in AppTest: its default loads attention only with the
feed-forward toggle off, a short run draws the heads' scores and the two copies' losses with a
sentence made of the run's own numbers, and an attention-only run is not opened in the lessons."""
from __future__ import annotations

import numpy as np

from tests.app.specs import instant_charts
from tests.app.test_training_lab_page import _ok, _wait_for_runs
from tfviz.lab.induction import induction_summary
from tfviz.lab.settings import LabSettings

PAGE = "23_training_lab.py"


def test_induction_task_trains_and_draws_its_curves(app_page):
    at = _ok(app_page(PAGE))
    at.selectbox(key="lab_task").set_value("induction")
    _ok(at.run())
    want = LabSettings.default("induction")
    assert at.toggle(key="lab_ffn").value is False and not want.ffn
    assert any(c.value.startswith(f"Will train: {want.describe()}.") for c in at.caption)
    at.select_slider(key="lab_steps").set_value(25)
    _ok(at.run())
    at.button(key="lab_train").click()
    _ok(at.run())
    at = _wait_for_runs(at, 1)
    run = at.session_state["lab_runs"][-1]
    assert run.settings.task == "induction" and not run.settings.ffn
    probed = [c for c in run.checkpoints if c.induction is not None]
    assert len(probed) == len(run.checkpoints) >= 2
    spec, data = next((s, d) for s, d in instant_charts(at) if "induction score" in s["description"])
    scores = data["rows"]
    last = probed[-1].induction.induction  # (layers, heads)
    got = scores[scores["step"] == probed[-1].step].set_index("head")["score"]
    for (layer, head), v in np.ndenumerate(last):
        assert abs(got[f"L{layer}H{head}"] - v) < 6e-5
    assert any(c.value.startswith(induction_summary(probed)) for c in at.caption)
    assert at.button(key="lab_open").disabled  # attention only: not the lessons' block

