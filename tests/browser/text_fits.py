"""Readable at the widths people use: at 1280 × 800 (a laptop), 1400 × 900 and 1920 × 1080 no
heading breaks inside a word ("Foundation / s"), no text is cut at its box's edge ("4 ·
Attention as so", "Explore on …"), the page does not scroll sideways, and no chart runs past
its box (``tests/browser/reflow.py``'s measure, which a phone's width also reads).

The text is measured in the page by ``tests/js/text_fits.js`` (browser code in a file of its
own, linted, its pure parts tested by node). It cannot see into a chart: Vega shortens a label
longer than its ``labelLimit`` itself, before drawing it on its SVG or canvas, so a chart's own
labels are the spec's business (``tfviz/viz``), not this measure's.

``tests/browser/test_every_page.py`` measures every page this way in the tab that its other
checks use: the tab is resized to each width, so no page is loaded again.
"""
from __future__ import annotations

import time
from pathlib import Path

from tests.browser.reflow import MEASURE_JS, reflow_problems

# In the order a tab opened at 1400 px visits them: each new width makes the charts that fill
# their column draw again, so the first costs only a new height
WIDTHS = ({"width": 1400, "height": 900}, {"width": 1280, "height": 800},
          {"width": 1920, "height": 1080})
SOURCE = (Path(__file__).resolve().parents[1] / "js" / "text_fits.js").read_text(encoding="utf-8")
# What is read as a heading, each word of which must sit on one line: the page's headings, the
# links to lessons (the welcome page's map, "Start the tour") and the sidebar's navigation
HEADINGS = ", ".join(["h1", "h2", "h3", "h4", '[data-testid="stNavSectionHeader"]'] + [
    f'[data-testid="{link}"] [data-testid="stMarkdownContainer"]'
    for link in ("stPageLink-NavLink", "stSidebarNavLink")])

# The module, imported once per page from its source (a blob URL: nothing leaves the machine),
# then run on the page as it is laid out now
MEASURE_TEXT_JS = """async ([source, headings]) => {
    if (!window.__tfvizTextFits) {
        const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
        window.__tfvizTextFits = await import(url);
        URL.revokeObjectURL(url);
    }
    return window.__tfvizTextFits.measure(document, headings);
}"""
# Two frames: the layout at the new size is done and Vega's resize observers have been called
FRAMES_JS = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def text_problems(page) -> list[str]:
    """What tests/js/text_fits.js finds on ``page`` at its present size, one line each."""
    return [f"{p['kind']}: {p['where']}: {p['text']!r}: {p['detail']}" if p["text"] else
            f"{p['kind']}: {p['where']}: {p['detail']}"
            for p in page.evaluate(MEASURE_TEXT_JS, [SOURCE, HEADINGS])]


def width_problems(page) -> list[str]:
    """Text and charts that do not fit, on ``page`` at its present size."""
    return text_problems(page) + reflow_problems(page.evaluate(MEASURE_JS))


def problems_at(page, size: dict, settle_s: float = 3.0) -> list[str]:
    """``page`` resized to ``size``, then what does not fit. A page that fits is measured
    once; one that shows a problem is measured again every half second for up to
    ``settle_s``, and only what is still there then counts (a chart that redraws for its new
    width, on a loaded machine, may be caught half-way)."""
    page.set_viewport_size(size)
    page.evaluate(FRAMES_JS)
    found = width_problems(page)
    deadline = time.monotonic() + settle_s
    while found and time.monotonic() < deadline:
        page.wait_for_timeout(500)
        found = width_problems(page)
    return found
