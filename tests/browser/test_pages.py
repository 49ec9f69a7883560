"""Every lesson opens by URL on a fresh server and via the navigation, shows no exception,
and one interaction redraws a chart. A screenshot per page is saved for review."""
from __future__ import annotations

import pytest

from tests.browser.conftest import SHOTS, assert_no_exception, wait_for_app
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
LESSONS = available()

CHART_STATE_JS = """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'))
    .map(c => c.outerHTML.length + ':' + (c.toDataURL ? c.toDataURL().length : 0))
    .concat(Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"] svg [aria-label]'))
    .map(e => e.getAttribute('aria-label')))
    .concat(Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stTable"], [data-testid="stMain"] [data-testid="stMarkdownContainer"], [data-testid="stMain"] [data-testid="stMetricValue"]')).map(e => e.innerText))
    .join('|')"""


# One interaction per page that should redraw something: (kind, label).
INTERACTIONS = {
    "home": ("link", "Start the tour"),
    "tour": ("slider", "Longest sentence on the chart"),
    "tokenizer": ("slider", "Step through the merges"),
    "embeddings": ("slider", "width d"),
    "attention-lookup": ("slider", "query, dimension 1"),
    "self-attention": ("view", "layer"),
    "scaling": ("view", "layer"),
    "multi-head": ("view", "layer"),
    "masking": ("toggle", "Switch the causal mask off"),
    "layernorm": ("view", "layer"),
    "feed-forward": ("view", "layer"),  # an instant view: the browser redraws, no rerun
    "mixture-of-experts": ("slider", "Experts per token"),
    "forward-walk": ("view", "step"),
    "encoder-decoder": ("view", "step"),  # the decoding step, in the browser
    "decoding": ("view", "step"),  # a generation step, in the browser
    "bert": ("view", "pos"),  # the masked position whose guesses show, in the browser
    "kv-cache": ("view", "step"),  # a generation step, in the browser
    "long-sequences": ("slider", "Window w"),
    "gqa": ("view", "layer"),  # the layer of the per-query-head maps, in the browser
    "vision": ("view", "head"),  # the head whose class-token attention is drawn, in the browser
    "exercises": ("button", "Hint"),
    "quiz": ("slider", "Number of questions"),
    "teacher": ("number", "Variants of each exercise"),
    "training-lab": ("slider", "Layers"),  # the "Will train: …" line names the new depth
}


def interact(page, kind: str, label: str) -> None:
    main = page.locator('[data-testid="stMain"]')
    if kind == "slider":
        thumb = main.locator('[data-testid="stSlider"]', has_text=label).first.locator('input[type="range"]')
        thumb.focus()
        page.keyboard.press("ArrowRight")
    elif kind == "view":  # a Vega input of an instant chart, by its view key
        main.locator(f'.vega-bind input[name="{label}"]').first.focus()
        page.keyboard.press("ArrowRight")
    elif kind == "toggle":
        main.locator('[data-testid="stCheckbox"]', has_text=label).first.locator("label").click()
    elif kind == "button":
        main.get_by_role("button", name=label).first.click()
    elif kind == "link":
        main.get_by_role("link", name=label).first.click()
    elif kind == "number":
        box = main.locator('[data-testid="stNumberInput"]', has_text=label).first
        box.get_by_role("button").last.click()  # the "+" step button
    else:  # pragma: no cover
        raise ValueError(kind)


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.url for l in LESSONS])
def test_lesson_by_url_then_interact(server, page, lesson):
    query = "?model=moe-tiny" if lesson.url == "mixture-of-experts" else ""
    path = "" if lesson.url == "home" else lesson.url
    page.goto(f"{server}/{path}{query}")
    wait_for_app(page)
    assert_no_exception(page)
    nav = page.locator('[data-testid="stSidebarNav"]')
    assert nav.count() == 1 and "Foundations" in nav.inner_text()  # the frame, not a bare page
    page.wait_for_function(  # charts draw after the script run ends: wait for every one on show
        """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
            .filter((box) => box.offsetParent !== null)
            .every((box) => box.querySelector('.vega-embed svg, .vega-embed canvas'))""",
        timeout=30_000)
    page.wait_for_timeout(500)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{lesson.file[:-3]}.png"), full_page=True)

    before = page.evaluate(CHART_STATE_JS)
    interact(page, *INTERACTIONS[lesson.url])
    # Wait for the change itself, not a fixed pause: on a loaded machine the rerun can start
    # later than any pause (a 300 ms pause made CI report "nothing changed" on masking).
    try:
        page.wait_for_function(f"(before) => ({CHART_STATE_JS})() !== before", arg=before,
                               timeout=60_000, polling=200)
    except Exception:
        pass  # reported by the assertion below, with the page in whatever state it reached
    wait_for_app(page)
    assert_no_exception(page)
    after = page.evaluate(CHART_STATE_JS)
    assert before != after, "the interaction did not change anything on the page"
    assert not page.js_errors, page.js_errors


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
    page.wait_for_function("() => document.querySelectorAll('.vega-embed svg').length === 5",
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
