"""Every lesson is reached through the navigation and shows no exception; the text and the
model follow the learner from page to page. (Each lesson opened by its URL, with a screenshot
and one interaction, is tests/browser/test_every_page.py.)"""
from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
LESSONS = available()

def test_navigation_reaches_every_lesson(server, page):
    page.goto(server)
    wait_for_app(page)
    for lesson in LESSONS:
        page.locator('[data-testid="stSidebarNav"] a', has_text=lesson.title).first.click()
        if lesson.url != "home":
            page.wait_for_url(f"**/{lesson.url}**")
        wait_for_app(page)
        assert_no_exception(page)


def test_text_and_model_survive_page_changes_and_live_in_the_url(server, page):
    page.goto(f"{server}/tour?model=bert-tiny&text=the+cat+sat&layer=1")
    wait_for_app(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Multi-head").first.click()
    page.wait_for_url("**/multi-head**")
    wait_for_app(page)
    assert "model=bert-tiny" in page.url and "text=the+cat+sat" in page.url
    assert page.locator('[data-testid="stSidebar"] textarea').input_value() == "the cat sat"


def test_a_lessons_own_url_finds_the_server_at_the_first_try(server, page):
    """Opened at /tour, Streamlit's frontend would first look for its server at /tour (a 404,
    then 100 ms of waiting); tfviz.ui.index_page tells it the base, so it asks / at once."""
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "_stcore/" in r.url else None)
    page.goto(f"{server}/self-attention?layer=1")
    wait_for_app(page)
    health = [u for u in asked if u.endswith("_stcore/health")]
    assert health == [f"{server}/_stcore/health"], asked
    assert not [u for u in asked if "/self-attention/_stcore/" in u], asked
    assert page.evaluate("window.__streamlit.BACKEND_BASE_URL") == f"{server}/"
    page.locator('[data-testid="stSidebarNav"] a', has_text="Multi-head").first.click()
    page.wait_for_url("**/multi-head**")  # the navigation works as before
    wait_for_app(page)
    assert_no_exception(page)


def test_self_attention_sends_every_tab_and_its_views_switch_without_a_run(server, page):
    """All three tabs arrive with the page; choosing a tab or a layer runs nothing on the
    server, and the first tab's numbers follow the chosen layer once it is shown again (a
    hidden chart follows when it comes into sight: step 2's drawn sentence)."""
    import tfviz
    from tfviz.analysis import attention as att
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    every = att.all_queries(tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT))
    titles_js = "() => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))" \
                ".map(e => e.textContent)"
    page.goto(f"{server}/self-attention?layer=1&head=2&query=3")
    wait_for_app(page)
    # step 1's three tabs (five charts), then steps 3 and 4's cosines and maps
    page.wait_for_function("() => document.querySelectorAll('.vega-embed svg').length === 7",
                           timeout=30_000)
    page.evaluate("""() => { const app = document.querySelector('[data-testid="stApp"]');
        window.__runs = 0; new MutationObserver((rs) => { for (const r of rs)
            if (r.oldValue === 'running') window.__runs++; })
        .observe(app, {attributes: true, attributeOldValue: true,
                       attributeFilter: ['data-test-script-state']}); }""")
    label = every.tokens[3]
    assert f"q for 3 {label} (layer 1, head 2)" in page.evaluate(titles_js)
    page.get_by_role("tab", name="Flying arrows").click()
    assert page.get_by_role("tab", name="Flying arrows").get_attribute("aria-selected") == "true"
    arrows = page.locator('[data-testid="stVegaLiteChart"]').filter(has_text="looks").first
    arrows.locator('.vega-bind input[name="layer"]').focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title"
                           " text')).some(e => e.textContent === t)",
                           arg=f"Where 3 {label} looks (layer 2, head 2)", timeout=10_000)
    page.wait_for_function("() => location.search.includes('layer=2')", timeout=10_000)
    # back on the first tab, step 2 follows: its sentence names layer 2's best key and weight
    page.get_by_role("tab", name="One query, step by step").click()
    weights = every.weights[2, 2, 3]
    page.wait_for_function(
        "([start, end]) => Array.from(document.querySelectorAll('.vega-embed text'))"
        ".some(e => e.textContent.startsWith(start) && e.textContent.endsWith(end))",
        arg=[f"The key with the most weight is {int(weights.argmax())} ",
             f"α = {weights.max():.4f}"], timeout=10_000)
    assert page.evaluate("window.__runs") == 0  # a tab and a layer: not one script run
    # The address changed: every colour legend's gradient still names this page
    # (Vega writes url(ADDRESS#gradient_0); an old address is another document, a blank bar).
    refs = page.evaluate("""() => Array.from(document.querySelectorAll(
        '.vega-embed svg [fill^="url("], .vega-embed svg [stroke^="url("]'))
        .map((e) => e.getAttribute('fill') || e.getAttribute('stroke'))""")
    assert refs, "self-attention draws colour legends"
    here = page.evaluate("location.href")
    assert all(r.startswith("url(#") or f"{here}#" in r for r in refs), (here, refs[:3])
    assert_no_exception(page)
