"""The training lab (/training-lab) in AppTest: defaults per task, a tiny run trained to the end,
stop, two runs compared, a ready-made comparison's sentence with the runs' own numbers."""
from __future__ import annotations

import dataclasses
import time

import pytest

from tfviz.lab import comparisons as cmp
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import TASKS

PAGE = "23_training_lab.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _tiny(at, steps=10):
    at.select_slider(key="lab_steps").set_value(steps)
    at.select_slider(key="lab_d_model").set_value(16)
    at.select_slider(key="lab_heads").set_value(1)
    return _ok(at.run())


def _wait_for_runs(at, n, timeout=240):
    """Rerun the page (as the fragment's polling would) until ``n`` runs are kept."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        _ok(at.run())
        if len(at.session_state["lab_runs"] if "lab_runs" in at.session_state else []) >= n:
            return at
        time.sleep(0.3)
    raise AssertionError(f"fewer than {n} runs finished in {timeout} s")


def test_page_opens_with_the_reverse_default_and_tasks_load_their_defaults(app_page):
    at = _ok(app_page(PAGE))
    assert at.title[0].value == "Training lab"
    want = LabSettings.default("reverse")
    assert any(c.value.startswith(f"Will train: {want.describe()}.") for c in at.caption)
    at.selectbox(key="lab_task").set_value("order")
    _ok(at.run())
    order = LabSettings.default("order")
    assert at.select_slider(key="lab_steps").value == order.steps
    assert any(c.value.startswith(f"Will train: {order.describe()}.") for c in at.caption)
    assert any(TASKS["order"].blurb == m.value for m in at.markdown)


def test_mixture_of_experts_controls_and_every_position_choice(app_page):
    at = _ok(app_page(PAGE))
    at.selectbox(key="lab_experts").set_value(4)
    _ok(at.run())
    at.slider(key="lab_topk").set_value(2)
    for p in ("none", "rope", "alibi", "learned"):
        at.selectbox(key="lab_pos").set_value(p)
        _ok(at.run())
        assert any("MoE 4 experts top-2" in c.value for c in at.caption)


def test_train_a_tiny_run_to_the_end(app_page):
    at = _tiny(app_page(PAGE))
    _ok(at.button(key="lab_train").click().run())
    at = _wait_for_runs(at, 1)
    (run,) = at.session_state["lab_runs"]
    assert run.state == "done" and run.step == 10 and run.settings.d_model == 16
    assert at.get("vega_lite_chart")  # the curves and the attention map over training time
    assert any("Nothing trained yet" not in i.value for i in at.info)
    progress = at.get("progress")
    assert progress and "step 10 of 10" in progress[0].proto.text


def test_stop_a_long_run(app_page):
    at = _ok(app_page(PAGE))
    at.select_slider(key="lab_steps").set_value(1500)
    _ok(at.run())
    _ok(at.button(key="lab_train").click().run())
    _ok(at.button(key="lab_stop").click().run())
    at = _wait_for_runs(at, 1)
    (run,) = at.session_state["lab_runs"]
    assert run.state == "stopped" and run.step < 1500


def test_two_runs_are_compared_by_what_differs(app_page):
    at = _tiny(app_page(PAGE))
    at.selectbox(key="lab_task").set_value("order")
    _ok(at.run())
    _tiny(at)
    at.selectbox(key="lab_pos").set_value("none")
    _ok(at.button(key="lab_train").click().run())
    at = _wait_for_runs(at, 1)
    at.selectbox(key="lab_pos").set_value("sinusoidal")
    _ok(at.button(key="lab_train").click().run())
    at = _wait_for_runs(at, 2)
    table = at.dataframe[0].value
    assert list(table["run"]) == ["1: no positions", "2: sinusoidal positions"]
    runs = at.session_state["lab_runs"]
    assert list(table["held-out accuracy"]) == [f"{r.accuracy:.1%}" for r in runs]
    assert any(c.value == "They differ in: positional." for c in at.caption)
    _ok(at.button(key="lab_clear").click().run())
    assert at.session_state["lab_runs"] == []


def test_a_ready_made_comparison_says_its_measured_numbers(app_page, monkeypatch):
    real = cmp.COMPARISONS["positions"]
    tiny = tuple(s.replace(steps=5, d_model=16, n_heads=1) for s in real.settings)
    monkeypatch.setitem(cmp.COMPARISONS, "positions", dataclasses.replace(real, settings=tiny))
    at = _ok(app_page(PAGE))
    _ok(at.button(key="lab_cmp_positions").click().run())
    at = _wait_for_runs(at, 4)  # none, sines, Shaw's relative vectors, T5's bias
    runs = at.session_state["lab_runs"]
    assert [r.settings.positional for r in runs] == ["none", "sinusoidal", "relative", "t5_bias"]
    said = at.success[0].value
    assert said.startswith(f"**{real.title}.** {cmp.summarize(runs)} ")
    assert f"no positions: {runs[0].accuracy:.0%} held-out after 5 steps" in said
    assert f"; Shaw relative positions: {runs[2].accuracy:.0%} held-out after 5 steps" in said
    assert f"; T5 bias positions: {runs[3].accuracy:.0%} held-out after 5 steps" in said
    # the notice only if these runs show it: no positions near a guess (50%), each of the three
    # with positions clearly ahead (5 points, or level and at 95% first); after 5 steps they rarely are
    none = runs[0].accuracy
    first = [next((c.step for c in r.checkpoints if c.accuracy >= 0.95), None) for r in runs]

    def ahead(i: int) -> bool:
        acc = runs[i].accuracy
        return acc >= none + 0.05 or (abs(acc - none) < 0.05 and first[i] is not None
                                      and (first[0] is None or first[i] < first[0]))

    assert (real.notice in said) == (abs(none - 0.5) <= 0.1 and all(ahead(i) for i in (1, 2, 3)))
    if real.notice not in said:
        assert said.endswith(real.observed(runs))


def test_the_residual_comparison_says_its_gradients_and_draws_them(app_page, monkeypatch):
    """The residual button trains its two runs (shortened here); the sentence carries each
    run's first/last layer gradient ratio, and section 5 draws each layer's gradient norm with
    the runs' own numbers; the toggle builds a run without the skip path."""
    from tests.app.specs import instant_charts

    real = cmp.COMPARISONS["residual"]
    short = tuple(s.replace(steps=10) for s in real.settings)
    monkeypatch.setitem(cmp.COMPARISONS, "residual", dataclasses.replace(real, settings=short))
    at = _ok(app_page(PAGE))
    at.toggle(key="lab_residual").set_value(False)
    _ok(at.run())
    assert any(c.value.startswith("Will train: ") and "no residuals" in c.value for c in at.caption)
    _ok(at.button(key="lab_cmp_residual").click().run())
    at = _wait_for_runs(at, 2)
    runs = at.session_state["lab_runs"]
    assert [(r.settings.n_layers, r.settings.residual) for r in runs] == [(6, True), (6, False)]
    said = at.success[0].value
    assert said.startswith(f"**{real.title}.** {cmp.summarize(runs)} {cmp.gradients(runs)}")
    assert "with residuals: " in said and "no residuals: " in said
    (data,) = [data for spec, data in instant_charts(at) if spec["description"].startswith("The gradient norm")]
    rows = next(iter(data.values()))
    last = runs[1].checkpoints[-1]
    mine = rows[(rows["run"] == "2: no residuals") & (rows["checkpoint"] == len(runs[1].checkpoints) - 2)]
    assert list(mine["layer"]) == list(range(6))
    assert list(mine["norm"]) == [float(f"{max(float(v), 1e-12):.4g}") for v in last.grad_norms]
    # the newest run has no residuals: the lessons explain a block with them, so it stays here
    assert at.button(key="lab_open").disabled


# (AppTest itself cannot send a select box an option that is not in its list, so those are
# covered by tfviz.ui.pickers.stable_select's own tests and by LabSettings' bounds.)
@pytest.mark.parametrize("key, value", [("lab_heads", 3), ("lab_steps", 10**9), ("lab_lr", 0.5),
                                        ("lab_layers", 9), ("lab_seed", -5)])
def test_a_forged_value_in_the_state_never_reaches_the_runner(app_page, key, value):
    at = _ok(app_page(PAGE))
    at.session_state[key] = value  # as a stale or forged state would be
    _ok(at.run())
    (will,) = [c.value for c in at.caption if c.value.startswith("Will train:")]
    assert at.session_state[key] != value and not at.warning  # a valid choice again
    fields = {"lab_heads": "n_heads", "lab_steps": "steps", "lab_lr": "lr", "lab_layers": "n_layers",
              "lab_seed": "seed"}
    valid = LabSettings.default("reverse", **{fields[key]: at.session_state[key]})
    assert will.startswith(f"Will train: {valid.describe()}.")


def test_a_full_server_shows_the_place_in_the_queue_and_a_queued_run_can_be_cancelled(app_page, monkeypatch):
    import threading

    from tfviz.ui.lab import lab_runner

    runner = lab_runner()  # the page's own runner (st.cache_resource: one per process)
    runner.prune(alive=lambda session: False)  # runs other tests in this process left going
    assert runner.join(timeout=60) and runner.counts() == (0, 0)
    gate = threading.Event()

    def blocked(settings, log, stop, threads):  # two other learners hold both places
        log.update(state="running")
        while not gate.wait(0.01) and not stop.is_set():
            pass
        log.update(state="stopped" if stop.is_set() else "done")
        return log.view()

    monkeypatch.setattr(runner, "_train", blocked)
    try:
        for i in range(runner.max_running):
            runner.submit(f"other-{i}", LabSettings.default("copy"))
        at = _tiny(app_page(PAGE))
        _ok(at.button(key="lab_train").click().run())
        assert any("you are number 1 in the queue" in i.value for i in at.info)
        assert any(c.value == f"On this server now: {runner.max_running} training, 1 waiting."
                   for c in at.caption)
        _ok(at.button(key="lab_stop").click().run())
        assert "(cancelled)" in at.get("progress")[0].proto.text
        assert at.session_state["lab_runs"] == []  # nothing trained, nothing to compare
    finally:
        gate.set()
        for i in range(runner.max_running):
            runner.drop(f"other-{i}")
        assert runner.join(timeout=60)
