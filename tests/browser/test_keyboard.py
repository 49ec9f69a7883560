"""The keyboard alone (WCAG 2.2 AA, 2.1.1 Keyboard and 2.4.7 Focus Visible): a learner who
cannot use a mouse reaches every view control of a lesson with Tab, moves layer, head and
token with the arrow keys, and steps through presenter view.

Nothing here clicks or calls ``focus()``: the page gets key presses only, from the top.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app

pytestmark = pytest.mark.browser
MOST_TABS = 120  # the sidebar's controls and links come first; a lesson's views follow

# What has the focus: a short name, whether it shows on screen and whether it draws a focus
# ring (an outline or a box shadow that differs from the same element without focus is not
# measurable here; a visible outline or shadow is).
FOCUSED_JS = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
    return {tag: e.tagName.toLowerCase(), name: e.getAttribute('name') || '',
            label: (e.getAttribute('aria-label') || e.innerText || '').slice(0, 40),
            value: e.value === undefined ? null : String(e.value),
            shown: r.width > 0 && r.height > 0, ring: ring,
            view: !!e.closest('.vega-bind')};
}"""


def tab_to(page, name: str, seen: list) -> dict:
    """Press Tab until a chart's view input called ``name`` has the focus."""
    for _ in range(MOST_TABS):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED_JS)
        if now:
            seen.append(now)
            if now["view"] and now["name"] == name:
                return now
    raise AssertionError(f"{MOST_TABS} presses of Tab never reached the {name!r} input; "
                         f"the last stops: {seen[-6:]}")


def view(page) -> dict:
    query = parse_qs(urlparse(page.evaluate("location.href")).query)
    return {k: int(v[0]) for k, v in query.items() if k in ("layer", "head", "query")}


def arrow(page, focused: dict, upper: int) -> int:
    """Move the focused range input one step with an arrow key, down at its top end."""
    before = int(focused["value"])
    key, after = ("ArrowRight", before + 1) if before < upper else ("ArrowLeft", before - 1)
    page.keyboard.press(key)
    assert page.evaluate("() => document.activeElement.value") == str(after)
    return after


def test_tab_reaches_the_views_and_the_arrows_move_layer_head_and_token(server, page):
    import tfviz
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    cfg = tfviz.load(DEFAULT_MODEL).config
    n = len(tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT).tokens)
    page.goto(f"{server}/self-attention")
    wait_for_app(page)
    page.wait_for_selector('.vega-bind input[name="query"]', timeout=30_000)
    seen: list = []
    moved = {}
    for name, upper in (("layer", cfg.n_layers - 1), ("head", cfg.n_heads - 1), ("query", n - 1)):
        focused = tab_to(page, name, seen)
        moved[name] = arrow(page, focused, upper)
        page.wait_for_function("([k, v]) => new URLSearchParams(location.search).get(k) === String(v)",
                               arg=[name, moved[name]], timeout=10_000)
    assert view(page) == moved
    # the first chart (q, k and v of one query) names the view the keys chose
    title = f"(layer {moved['layer']}, head {moved['head']})"
    page.wait_for_function("([start, end]) => Array.from(document.querySelectorAll("
                           "'.vega-embed g.role-title text')).some(e => e.textContent.startsWith(start)"
                           " && e.textContent.endsWith(end))",
                           arg=[f"q for {moved['query']} ", title], timeout=10_000)
    hidden = [s for s in seen if not s["shown"]]
    assert not hidden, f"Tab stopped on elements that are not on the screen: {hidden[:5]}"
    unringed = [s for s in seen if not s["ring"]]
    assert not unringed, f"focus without a visible ring: {unringed[:5]}"
    assert len(seen) >= 4 and sum(s["view"] for s in seen) >= 3
    assert_no_exception(page)


def test_presenter_view_steps_by_keyboard(server, page):
    page.goto(f"{server}/masking?present=1")
    wait_for_app(page)
    page.wait_for_function("() => window.__tfvizPresent && window.__tfvizPresent.slides().length > 2",
                           timeout=30_000)
    slides = page.evaluate("window.__tfvizPresent.slides()")
    assert page.evaluate("window.__tfvizPresent.at()") == 1
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__tfvizPresent.at() === 2", timeout=5_000)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__tfvizPresent.at() === 3", timeout=5_000)
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => window.__tfvizPresent.at() === 2", timeout=5_000)
    assert f"2 / {len(slides)}" in page.inner_text("#tfviz-present-bar")
    # the slide bar's buttons are reachable with Tab and pressed with Enter
    for _ in range(MOST_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Next step":
            break
    else:
        raise AssertionError("Tab never reached the slide bar's Next step button")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.__tfvizPresent.at() === 3", timeout=5_000)
    page.keyboard.press("Escape")  # leaves presenter view: the whole page again
    page.wait_for_function("() => !document.querySelector('#tfviz-present-bar')", timeout=30_000)
    assert "present=1" not in page.evaluate("location.href")
    assert_no_exception(page)
