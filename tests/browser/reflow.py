"""Reflow on a phone (WCAG 2.2 AA, 1.4.10): students follow the teacher on their phones. At
390 × 844 CSS pixels (a common phone) no chart may run past the screen's edge, where it would
be clipped and out of reach: each one fits the width, or scrolls sideways inside its own box
(``tfviz/ui/assets/readable.css``), with its scroll bar as the cue that more lies beyond.

``tests/browser/test_every_page.py`` checks every page this way, in the same tab that axe
has just read: the tab is narrowed to the phone's size, so no page is loaded twice. Narrowing a
drawn page and opening it at that size meet the same rules: the stylesheet's phone rules are
media queries, and Vega redraws a chart that fits its container when the container changes.
"""
from __future__ import annotations

PHONE = {"width": 390, "height": 844}

# Is any chart on show yet (a page whose charts have not come passes "every chart drawn")?
CHARTS_ON_SHOW_JS = """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
    .some((box) => box.offsetParent !== null)"""

# Every chart on the page that has a size (a hidden tab's have none): where its box ends, and
# whether what it draws is wider than its box and, if so, whether the box scrolls sideways.
MEASURE_JS = """() => {
    const W = document.documentElement.clientWidth;
    const out = [];
    for (const box of document.querySelectorAll('[data-testid="stVegaLiteChart"], [data-testid="stImage"]')) {
        const r = box.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        const drawn = box.querySelector('.vega-embed svg, .vega-embed canvas, img');
        const wide = drawn ? drawn.getBoundingClientRect().width : r.width;
        const x = getComputedStyle(box).overflowX;
        out.push({kind: box.dataset.testid, left: Math.round(r.left), right: Math.round(r.right),
                  drawn: Math.round(wide), box: Math.round(box.clientWidth),
                  scrolls: (x === 'auto' || x === 'scroll') && box.scrollWidth > box.clientWidth});
    }
    return {width: W, page: document.documentElement.scrollWidth, charts: out};
}"""


def reflow_problems(found: dict) -> list[str]:
    """What breaks reflow in one :data:`MEASURE_JS` reading: a chart past the screen's edge, a
    chart wider than its box that does not scroll, a page that scrolls sideways."""
    width, charts = found["width"], found["charts"]
    problems = []
    past = [c for c in charts if c["right"] > width + 1 or c["left"] < -1]
    if past:
        problems.append(f"charts past the screen's edge ({width} px): {past}")
    clipped = [c for c in charts if c["drawn"] > c["box"] + 1 and not c["scrolls"]]
    if clipped:
        problems.append(f"charts wider than their box that do not scroll: {clipped}")
    if found["page"] > width + 1:
        problems.append(f"the page itself scrolls sideways: {found['page']} px on a {width} px screen")
    return problems

