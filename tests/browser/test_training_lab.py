"""The training lab in chromium: a tiny run trains to the end while the page polls on its own
(no click between), its attention map appears with the slider over training time, a long
run can be stopped, the two runs are compared by what differs, and a run opens in the lessons."""
from __future__ import annotations

import pytest

from tests.browser.conftest import SHOTS, assert_no_exception, wait_for_app

pytestmark = pytest.mark.browser


def _slider_to_start(page, label: str) -> None:
    main = page.locator('[data-testid="stMain"]')
    thumb = main.locator('[data-testid="stSlider"]', has_text=label).first.get_by_role("slider")
    thumb.focus()
    page.keyboard.press("Home")
    wait_for_app(page)


def test_train_watch_and_stop(server, page):
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
