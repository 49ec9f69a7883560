"""The training lab in chromium: a tiny run trains to the end while the page polls on its own
(no click between), its attention map appears with the slider over training time, a long
run can be stopped, the two runs are compared by what differs (and by each layer's gradient,
whose checkpoint slider repaints in the browser), a run opens in the lessons, and the lab's
link to lesson 15, whose fine-tune shares its queue, trains every way there (a short budget:
the server runs with TFVIZ_FINETUNE_STEPS)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import SHOTS, Runs, assert_no_exception, wait_for_app

pytestmark = pytest.mark.browser


GRAD_TITLE_JS = ("() => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                 ".map(e => e.textContent).filter(t => t.startsWith('Gradient norm per layer'))")


def _slider_to_start(page, label: str) -> None:
    main = page.locator('[data-testid="stMain"]')
    thumb = main.locator('[data-testid="stSlider"]', has_text=label).first.get_by_role("slider")
    thumb.focus()
    page.keyboard.press("Home")
    wait_for_app(page)


def test_train_watch_and_stop(server, page):
    runs = Runs(page)
    page.goto(f"{server}/training-lab")
    wait_for_app(page)
    assert_no_exception(page)
    _slider_to_start(page, "Steps")  # 10 steps
    _slider_to_start(page, "d_model")  # width 16
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Train", exact=True).click()
    # The fragment polls once a second by itself; the run's end redraws the page with its map.
    page.get_by_text("Attention forming").wait_for()
    main.locator(".vega-bind input[type='range']").first.wait_for(timeout=120_000)
    assert "step 10 of 10" in page.inner_text("body")
    assert_no_exception(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.get_by_text("Attention forming").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "23_training_lab_trained.png"), full_page=True)

    thumb = main.locator('[data-testid="stSlider"]', has_text="Steps").first.get_by_role("slider")
    thumb.focus()
    page.keyboard.press("End")  # 1500 steps
    wait_for_app(page)
    main.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("(running)").first.wait_for(timeout=60_000)
    main.get_by_role("button", name="Stop", exact=True).click()
    page.get_by_text("(stopped)").first.wait_for(timeout=60_000)
    assert_no_exception(page)
    # Compare: once the stopped run is collected, section 5 draws both runs' curves, each named
    # by the one setting that differs (the legend), and says what differs.
    page.wait_for_function(
        "() => { const t = Array.from(document.querySelectorAll('[data-testid=\"stMain\"] .vega-embed svg text'))"
        ".map(e => e.textContent); return t.includes('1: steps 10') && t.includes('2: steps 1500'); }",
        timeout=120_000, polling=250)
    assert "They differ in: steps." in page.inner_text('[data-testid="stMain"]')
    assert_no_exception(page)
    # Each layer's gradient norm, both runs: the checkpoint slider under it moves the view in
    # the browser (its title names the step) without a script run.
    page.wait_for_function(f"() => ({GRAD_TITLE_JS})().length === 1", timeout=60_000)
    wait_for_app(page)
    last = page.evaluate(GRAD_TITLE_JS)[0]
    chart = main.locator(".vega-embed").filter(has_text="Gradient norm per layer")
    asked = runs.asked()
    chart.locator("input[name='checkpoint']").focus()
    page.keyboard.press("Home")
    page.wait_for_function(f"(t) => ({GRAD_TITLE_JS})()[0] !== t", arg=last, timeout=10_000)
    assert page.evaluate(GRAD_TITLE_JS)[0].startswith("Gradient norm per layer, after ")
    page.wait_for_timeout(500)
    assert runs.asked() == asked  # a view, not a rerun: the browser asked the server for nothing
    labels = chart.locator("svg [aria-label]").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert any("1: steps 10" in label for label in labels)  # (the stopped run, if it made a step)
    assert_no_exception(page)


def test_open_a_run_in_the_lessons(server, page):
    """A finished run's "Open in the lessons" makes it the sidebar's model; the self-attention
    page then draws its maps over the run's own held-out row (<bos> … <sep> …)."""
    page.goto(f"{server}/training-lab")
    wait_for_app(page)
    _slider_to_start(page, "Steps")  # 10 steps
    _slider_to_start(page, "d_model")  # width 16
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Train", exact=True).click()
    opener = main.get_by_role("button", name="Open in the lessons")
    opener.wait_for(timeout=120_000)
    wait_for_app(page)
    opener.click()
    wait_for_app(page)
    name = "my run 1: reverse, 2 layers × 2 heads"
    sidebar = page.locator('[data-testid="stSidebar"]')
    model_box = sidebar.get_by_role("combobox", name="Model")
    assert model_box.input_value() == name  # the sidebar's model box shows the run
    assert sidebar.locator("textarea").first.input_value().startswith("<bos> ")
    assert "model=my-run&" in page.url or page.url.endswith("model=my-run")  # never the run itself
    main.get_by_role("link", name="Self-attention, step by step").click()
    page.get_by_role("heading", name="Self-attention, step by step").wait_for()
    wait_for_app(page)
    main.locator(".vega-bind input[type='range']").first.wait_for(timeout=60_000)
    assert model_box.input_value() == name
    # The charts are drawn as SVG with ARIA labels naming the run's tokens.
    labels = main.locator("svg [aria-label]").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert any("<sep>" in label for label in labels), labels[:5]
    assert_no_exception(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    model_box.scroll_into_view_if_needed()  # the sidebar's model and text beside the page
    page.screenshot(path=str(SHOTS / "23_training_lab_opened.png"))


def test_lesson_15_from_the_lab_fine_tunes_every_way(server, page):
    """The lab names lesson 15 for pretrained / from scratch; there, with every way ticked, the
    fine-tune (TFVIZ_FINETUNE_STEPS steps a way on this server) ends in its table, both charts
    (every way a point; every way a curve of held-out checks) and the sentences on prompt and
    prefix tuning and on pretraining."""
    from tfviz.training.finetune import MODES

    page.goto(f"{server}/training-lab")
    wait_for_app(page)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("link", name="Lesson: 15 · BERT and pretraining").click()
    page.get_by_role("heading", name="BERT and pretraining").wait_for()
    wait_for_app(page)
    for mode in MODES:
        box = main.get_by_role("checkbox", name=mode, exact=True)
        if not box.is_checked():
            box.check(force=True)  # Streamlit draws its own box over the input
            wait_for_app(page)
    main.get_by_role("button", name="Fine-tune", exact=True).click()
    # the pretraining sentence (a paragraph; its function's docstring, under "Show the code", has the words too)
    main.locator("p", has_text="numbers trained, with no pretraining) the same").wait_for(timeout=240_000)
    wait_for_app(page)
    text = main.inner_text()
    assert "Prompt tuning (" in text and "prefix tuning (" in text
    titles = page.evaluate("() => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                           ".map(e => e.textContent)")
    assert "Numbers trained vs held-out accuracy" in titles and "Held-out accuracy while training" in titles
    curves = main.locator(".vega-embed").filter(has_text="Held-out accuracy while training")
    labels = curves.locator("svg [aria-label]").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert all(any(f"way: {m}" in label for label in labels) for m in MODES), labels[:5]
    assert_no_exception(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    curves.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "15_bert_fine_tune_every_way.png"))
