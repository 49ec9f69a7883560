"""The exercises' flying arrows in chromium: lesson 5's chart (``self_attention.arrows``), drawn
through ``drawing.vega`` once the worked solution is open. It opens on the word the exercise
asks about, its head and word are sliders under it, moving the word slider redraws it in the
browser, and its numbers sit under it as a table."""
from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app
from tfviz.exercises import make_instance
from tfviz.viz.kit.style import token_labels

pytestmark = pytest.mark.browser

CHART = '[data-testid="stMain"] [data-testid="stVegaLiteChart"]'


def test_the_exercise_arrows_open_on_the_asked_word_and_follow_the_slider(server, page):
    inst = make_instance("causal-mask")  # "the cat sat": no asked word, so the last one
    words = token_labels(inst.arrows.tokens)
    page.goto(f"{server}/exercises")
    wait_for_app(page, timeout=180_000)
    picker = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').first
    picker.locator("input").click()
    page.keyboard.type(inst.title[:12])
    page.get_by_role("option", name=inst.title, exact=True).click()
    wait_for_app(page)
    page.get_by_role("button", name="📖 Full worked solution").click()
    wait_for_app(page)
    assert_no_exception(page)
    chart = page.locator(CHART).first
    chart.locator("svg").first.wait_for(timeout=60_000)
    text = chart.inner_text()
    assert f"Where {words[-1]} looks" in text, text
    slider = chart.locator('input[type="range"][name="query"]')
    assert slider.count() == 1 and slider.input_value() == str(len(words) - 1)
    slider.fill("0")  # the first word may see only itself: one line, weight 1
    page.wait_for_function(
        "([sel, t]) => document.querySelector(sel)?.innerText.includes(t)",
        arg=[CHART, f"Where {words[0]} looks"], timeout=30_000)
    assert page.get_by_text("The numbers as a table").count() >= 1
