"""The training lab in chromium: a tiny run trains to the end while the page polls on its own
(no click between), its attention map appears with the slider over training time, and a long
run can be stopped."""
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
