"""Presenter view (issue #19) in chromium at 1280×720, the size of a common projector.

For every lesson 1-19: one page load of ``/<lesson>?present=1&slide=2`` (the link's slide must
open first), then ← to slide 1 and PageDown through every slide, as a presentation clicker
would (PageDown scrolls a slide taller than the screen before it moves on). On each slide:

- exactly one slide shows (the script's grouping is recomputed here from the page itself: the
  main block's children, cut at every ``st-key-tfviz-step-*`` container), the sidebar is
  hidden and the slide bar names the slide;
- nothing overflows the document sideways;
- every visible chart (Vega-Lite, image) lies inside the screen horizontally and is not
  clipped by any container with its own overflow;
- every visible text is at least 24 px: each element with a text node of its own (HTML, and
  SVG ``<text>`` of the charts), its computed font size times the scale its SVG or any CSS
  transform applies on screen. CSS ``zoom`` would hide from that measure, so the test fails
  if any element uses it.

What is *not* measured: text painted on a canvas (a Vega chart of more than 1,500 marks
draws on one; the count is reported, and the default sentence draws none), and text inside
closed expanders or unselected tabs (not on the screen). ``st.dataframe`` also paints on a
canvas, so a visible one fails the test: presenter view draws tables with
``tfviz.ui.tables.table`` instead, as HTML.

A slide taller than the screen may scroll vertically; the test prints how many do.
"""
from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SHOTS, assert_no_exception, wait_for_app
from tests.browser.presenter_measure import MEASURE_JS, MIN_TEXT, SLIDES_JS, STEP, _drawn, _settle
from tests.browser.tabs_ahead import Tab, TabsAhead
from tfviz.ui.errors import FRIENDLY_ERROR
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1280, "height": 720}
LESSONS = [lesson for lesson in available() if lesson.number is not None and 1 <= lesson.number <= 19]
QUERY = {"mixture-of-experts": "&model=moe-tiny"}  # as tests/browser/test_every_page.py


def _address(server: str, lesson) -> str:
    return f"{server}/{lesson.url}?present=1&slide=2{QUERY.get(lesson.url, '')}"


_AHEAD = TabsAhead(lambda server, lesson: _address(server, lesson), VIEWPORT)


@pytest.fixture(scope="module", autouse=True)
def _close_ahead():
    yield
    _AHEAD.close_all()


@pytest.fixture
def lesson_tab(browser, server, request):
    """This lesson's page, opened at ``?present=1&slide=2``; the next selected lesson's page
    starts loading now, so that its load overlaps this lesson's checks."""
    tab = _AHEAD.take(browser, server, request)
    yield tab
    tab.close()


@pytest.fixture
def projector(browser):
    tab = Tab(browser, viewport=VIEWPORT)
    yield tab.page
    tab.close()



@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.url for lesson in LESSONS])
def test_every_slide_of_a_lesson_reads_from_the_back_of_the_hall(lesson_tab, lesson):
    page, started = lesson_tab.page, time.perf_counter()
    _drawn(page)
    assert_no_exception(page)
    assert FRIENDLY_ERROR[:30] not in page.inner_text('[data-testid="stMain"]'), "the page failed"
    groups = page.evaluate(SLIDES_JS, STEP)
    n = groups["count"]
    assert n == groups["steps"] + 1, f"{groups['steps']} steps but {n} slides: a step inside a " \
                                     "column, tab or other container is not a slide"
    assert n >= 2, "a lesson has at least one step"
    assert page.evaluate("window.__tfvizPresent.at()") == 2, "the link's slide=2 opened elsewhere"
    assert groups["visible"] == [1], f"slide=2 shows groups {groups['visible']}"

    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # focus: body
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => window.__tfvizPresent.at() === 1", timeout=5_000)
    failures, tall = [], []
    for i in range(1, n + 1):
        _settle(page)
        groups = page.evaluate(SLIDES_JS, STEP)
        found = page.evaluate(MEASURE_JS, [MIN_TEXT])
        where = f"slide {i}/{n} ({found['bar']})"
        if groups["visible"] != [i - 1]:
            failures.append(f"{where}: groups {groups['visible']} visible, not just {i - 1}")
        if found["at"] != i or not found["bar"].startswith(f"{i} / {n}"):
            failures.append(f"{where}: the script says slide {found['at']}")
        failures += [f"{where}: {p}" for p in found["problems"]]
        if found["tall"]:
            tall.append(i)
        if i == n:
            break
        for _ in range(20):  # PageDown, as a clicker sends: scrolls a tall slide, then moves on
            page.keyboard.press("PageDown")
            if page.evaluate("window.__tfvizPresent.at()") == i + 1:
                break
        else:
            pytest.fail(f"{where}: 20 × PageDown never reached the next slide")
        assert f"slide={i + 1}" in page.url, page.url
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"present_{lesson.file[:-3]}.png"))
    print(f"\n{lesson.url}: {n} slides; {time.perf_counter() - started:.1f} s here, "
          f"{time.perf_counter() - lesson_tab.opened:.1f} s since its page was opened; taller "
          f"than the screen: {tall or 'none'}")
    assert not failures, "\n".join(failures[:40])
    assert not lesson_tab.errors, lesson_tab.errors


def test_the_normal_page_shows_every_step_and_escape_leaves_presenter_view(server, projector):
    """Without present=1 nothing of presenter view is there; with it, Esc brings the normal
    page back (through the sidebar toggle, a real rerun) and the URL loses the flag."""
    page = projector
    page.goto(f"{server}/scaling")
    wait_for_app(page)
    normal = page.evaluate(SLIDES_JS, STEP)
    assert normal["steps"] >= 3 and normal["visible"] == list(range(normal["count"]))
    assert page.evaluate("() => !window.__tfvizPresent && !document.getElementById('tfviz-present-bar')")
    assert page.locator('[data-testid="stSidebar"]').is_visible()
    # expect() retries for a few seconds: the sidebar's widgets can still be redrawing when the
    # page's run has just ended (seen once in a full run)
    expect(page.locator('[data-testid="stSidebar"]').get_by_text("Presenter view")).to_be_visible()

    page.goto(f"{server}/scaling?present=1&slide=99")  # past the end: the last slide
    wait_for_app(page)
    _drawn(page)
    assert page.evaluate("window.__tfvizPresent.at()") == normal["count"]
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => window.__tfvizPresent.at() === 3", timeout=5_000)
    assert "slide=3" in page.url
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.getElementById('tfviz-present-bar')", timeout=30_000)
    wait_for_app(page)
    after = page.evaluate(SLIDES_JS, STEP)
    assert after["visible"] == list(range(after["count"])), after
    assert "present=" not in page.url and "slide=" not in page.url, page.url
    assert page.locator('[data-testid="stSidebar"]').is_visible()
    assert_no_exception(page)
