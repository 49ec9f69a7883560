"""The modern block's exercises (RoPE, RMSNorm, SwiGLU, a grouped-query cache) on /exercises in
chromium: picked in the exercise box, answered (a slip is diagnosed in words, the right answer
is accepted), their full worked solution opened; the page runs without an exception, draws the
exercise's formula and its tables, is clean under axe-core's WCAG 2.2 AA rules (with
test_every_page.py's exemptions for Streamlit's navigation) and reflows on a phone (390 px)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app
from tests.browser.reflow import MEASURE_JS, PHONE, reflow_problems
from tests.browser.test_every_page import EXEMPT, ON_A_PHONE, RUN_AXE_JS, TAGS, axe_source, describe
from tfviz.exercises import make_instance
from tfviz.exercises.fmt import fmt_values

pytestmark = pytest.mark.browser
__all__ = ["axe_source"]  # the fixture, shared with test_every_page.py

#: exercise id -> (a box, the slip's name whose answer is typed there, words of its diagnosis)
EXERCISES = {
    "rope": ("rotated", "sin_sign", "turned the wrong way"),
    "rmsnorm": ("output", "centred", "as LayerNorm does"),
    "swiglu": ("output", "no_down", "multiplies h by W_down"),
    "gqa-cache": ("per_token", "query_heads", "You counted the query heads"),
}


def _check(page, label: str, text: str) -> None:
    """Type ``text`` into the answer box labelled ``label`` and press its Check."""
    form = page.locator('[data-testid="stMain"] [data-testid="stForm"]',
                        has=page.locator('[data-testid="stTextInput"]', has_text=label))
    form.locator("input").fill(text)
    form.get_by_role("button", name="Check").click()
    wait_for_app(page)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_a_modern_exercise_in_the_browser(server, page, axe_source, exercise_id):
    inst = make_instance(exercise_id)
    page.goto(f"{server}/exercises")
    wait_for_app(page, timeout=180_000)
    picker = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').first
    picker.locator("input").click()
    page.keyboard.type(inst.title[:12])
    page.get_by_role("option", name=inst.title, exact=True).click()
    page.wait_for_function("t => document.querySelector('[data-testid=\"stMain\"] h2')"
                           "?.innerText.startsWith(t)", arg=inst.title, timeout=60_000)
    wait_for_app(page)
    assert_no_exception(page)
    main = page.inner_text('[data-testid="stMain"]')
    assert inst.prompt.split("\n")[0][:60] in main
    assert page.locator('[data-testid="stMain"] .katex').count() >= 1  # the formula is drawn
    assert page.locator('[data-testid="stMain"] [data-testid="stTable"]').count() >= 1

    name, slip, words = EXERCISES[exercise_id]
    box = inst.field(name)
    (mistake,) = [m for m in box.mistakes if m.name == slip]
    _check(page, box.label, fmt_values(mistake.values, 4).replace("−∞", "-inf"))
    main = page.inner_text('[data-testid="stMain"]')
    assert "we can tell what happened" in main and words in main, main[-1500:]
    _check(page, box.label, fmt_values(box.expected, 4))
    assert "✓ Correct" in page.inner_text('[data-testid="stMain"]')

    page.get_by_role("button", name="Full worked solution").click()
    wait_for_app(page)
    assert_no_exception(page)
    main = page.inner_text('[data-testid="stMain"]')
    for number, step in enumerate(inst.steps, start=1):
        assert f"Step {number} · {step.title}" in main
    assert "The answers" in main
    if axe_source is not None:
        page.add_script_tag(content=axe_source)
        found = page.evaluate(RUN_AXE_JS, [TAGS, {k: v[0] for k, v in EXEMPT.items()}])
        assert found["passes"] > 10
        assert not found["violations"], f"{exercise_id}:\n{describe(found['violations'])}"
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(500)
    if axe_source is not None:
        found = page.evaluate(RUN_AXE_JS, [ON_A_PHONE, {}])
        assert not found["violations"], f"{exercise_id} at 390 px:\n{describe(found['violations'])}"
    found = page.evaluate(MEASURE_JS)
    assert found["width"] <= PHONE["width"], found
    problems = reflow_problems(found)
    assert not problems, f"{exercise_id} at {PHONE['width']} px:\n" + "\n".join(problems)
    assert not page.js_errors, page.js_errors
