"""Reflow on a phone (WCAG 2.2 AA, 1.4.10): students follow the teacher on their phones. At
390 × 844 CSS pixels (a common phone) no chart may run past the screen's edge, where it would
be clipped and out of reach: each one fits the width, or scrolls sideways inside its own box
(``tfviz/ui/assets/readable.css``), with its scroll bar as the cue that more lies beyond.

Measured on the pages with the widest charts: the tour, self-attention, masking and decoding.
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import OutboundGuard, assert_no_exception, wait_for_app
from tests.browser.test_accessibility import DRAWN_JS

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}
PAGES = ["tour", "self-attention", "masking", "decoding"]

CHARTS_ON_SHOW_JS = """() => Array.from(document.querySelectorAll(
        '[data-testid="stVegaLiteChart"], [data-testid="stPlotlyChart"]'))
    .some((box) => box.offsetParent !== null)"""

# Every chart on the page that has a size (a hidden tab's have none): where its box ends, and
# whether what it draws is wider than its box and, if so, whether the box scrolls sideways.
MEASURE_JS = """() => {
    const W = document.documentElement.clientWidth;
    const out = [];
    for (const box of document.querySelectorAll('[data-testid="stVegaLiteChart"], [data-testid="stPlotlyChart"], [data-testid="stImage"]')) {
        const r = box.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        const drawn = box.querySelector('.vega-embed svg, .vega-embed canvas, .main-svg, img');
        const wide = drawn ? drawn.getBoundingClientRect().width : r.width;
        const x = getComputedStyle(box).overflowX;
        out.push({kind: box.dataset.testid, left: Math.round(r.left), right: Math.round(r.right),
                  drawn: Math.round(wide), box: Math.round(box.clientWidth),
                  scrolls: (x === 'auto' || x === 'scroll') && box.scrollWidth > box.clientWidth});
    }
    return {width: W, page: document.documentElement.scrollWidth, charts: out};
}"""


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE, is_mobile=False, device_scale_factor=1)
    guard = OutboundGuard()
    context.route("**/*", guard)
    page = context.new_page()
    yield page
    context.close()
    assert not guard.outside, guard.outside[:5]


@pytest.mark.parametrize("url", PAGES)
def test_no_chart_runs_past_the_edge_of_a_phone(server, phone, url):
    phone.goto(f"{server}/{url}")
    wait_for_app(phone)
    assert_no_exception(phone)
    # Every page here draws charts: wait for the first before "every chart drawn", which an
    # empty page also passes (decoding's charts came after its first elements once in CI).
    phone.wait_for_function(CHARTS_ON_SHOW_JS, timeout=60_000, polling=100)
    phone.wait_for_function(DRAWN_JS, timeout=30_000, polling=100)
    phone.wait_for_timeout(300)
    found = phone.evaluate(MEASURE_JS)
    width, charts = found["width"], found["charts"]
    assert width <= PHONE["width"] and charts, found
    past = [c for c in charts if c["right"] > width + 1 or c["left"] < -1]
    assert not past, f"charts past the screen's edge ({width} px): {past}"
    clipped = [c for c in charts if c["drawn"] > c["box"] + 1 and not c["scrolls"]]
    assert not clipped, f"charts wider than their box that do not scroll: {clipped}"
    # (Its scroll bar, the cue, cannot be measured here: headless chromium hides scroll bars.)
    assert any(c["scrolls"] for c in charts), "the widest charts scroll inside their box"
    assert found["page"] <= width + 1, f"the page itself scrolls sideways: {found['page']} px"
