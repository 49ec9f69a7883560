"""Readable for everyone (WCAG 2.2 AA): axe-core, run in chromium on every page of the app,
finds nothing of our own making, and on a phone's screen no chart runs past its edge.

Each page opens by its URL on the shared server; once its script run has ended and its charts
are drawn, axe-core (the npm package, a dev-only dependency that ``scripts/test.sh`` installs
into ``tests/.npm``) is injected and run with the WCAG 2.0, 2.1 and 2.2 A and AA rules. A
violation fails the test with its rule, its help text and the elements it found, except:

- Streamlit's own sidebar navigation (``stSidebarNav``, drawn by ``st.navigation``): its
  ``<ul data-testid="stSidebarNavItems">`` holds one ``<div>`` per section (rule ``list``:
  a list may hold only ``<li>``), and so each lesson's ``<li>`` sits in a ``<div>``, not in the
  list (rule ``listitem``, once per lesson: 24). That markup is Streamlit's (1.67), which a page
  cannot change, so those two rules are exempt *inside the sidebar navigation only*; anywhere
  else they count, and every other rule counts everywhere.

Then the same tab is narrowed to a phone (390 × 844) and every chart is measured for reflow
(WCAG 1.4.10, ``tests/browser/reflow.py``): it fits the width or scrolls inside its own box.

Where node or axe-core is missing the test is skipped with a message saying how to install
it, except in CI (``CI=true``), where a missing axe-core is a failure: the check must run there.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app
from tests.browser.reflow import CHARTS_ON_SHOW_JS, MEASURE_JS, PHONE, reflow_problems
from tests.browser.tabs_ahead import TabsAhead
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
AXE = Path(os.environ.get("TFVIZ_AXE", ROOT / "tests" / ".npm" / "node_modules" / "axe-core" / "axe.min.js"))
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
LESSONS = available()
QUERY = {"mixture-of-experts": "?model=moe-tiny"}  # as tests/browser/test_pages.py
# Pages that open with no chart on show (a chart behind a button or a tab does not count)
NO_CHART_AT_FIRST = {"home", "tokenizer", "exercises", "quiz", "teacher", "training-lab"}
# Pages whose widest chart is wider than a phone: there, some chart must scroll in its box
WIDER_THAN_A_PHONE = {"self-attention", "masking", "decoding", "long-sequences"}
# rule -> (where it is exempt, why): Streamlit's markup, not ours (module docstring)
EXEMPT = {
    "list": ('[data-testid="stSidebarNav"]', "Streamlit's sidebar navigation (st.navigation)"),
    "listitem": ('[data-testid="stSidebarNav"]', "Streamlit's sidebar navigation (st.navigation)"),
}

# Every chart on show drawn (a hidden tab's charts wait until it opens): each Vega-Lite
# element holds its SVG or canvas.
DRAWN_JS = """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
    .filter((box) => box.offsetParent !== null)
    .every((box) => box.querySelector('.vega-embed svg, .vega-embed canvas'))"""

# axe's violations, without the exempt nodes, as plain data
RUN_AXE_JS = """async ([tags, exempt]) => {
    const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                            resultTypes: ['violations']});
    const out = [];
    for (const v of result.violations) {
        const nodes = v.nodes.filter((node) => {
            if (!(v.id in exempt)) return true;
            const el = document.querySelector(node.target[node.target.length - 1]);
            return !(el && el.closest(exempt[v.id]));
        });
        if (nodes.length) out.push({id: v.id, impact: v.impact, help: v.help, count: nodes.length,
            nodes: nodes.slice(0, 4).map((node) => ({target: node.target.join(' '),
                html: node.html.slice(0, 200), why: node.failureSummary}))});
    }
    return {violations: out, passes: result.passes.length, version: axe.version,
            exempt: result.violations.filter((v) => v.id in exempt).map((v) => v.id)};
}"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    if AXE.is_file():
        return AXE.read_text()
    message = (f"axe-core is missing ({AXE}): `npm install --no-save --prefix tests/.npm axe-core@4.14.1` "
               "installs it (scripts/test.sh does, where npm is)")
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; in CI the accessibility check must run")
    pytest.skip(message)


def describe(violations: list[dict]) -> str:
    return "\n".join(f"- {v['id']} ({v['impact']}, {v['count']}×): {v['help']}\n" + "\n".join(
        f"    {n['target']}: {n['html']}\n      {n['why']}" for n in v["nodes"]) for v in violations)


def _address(server: str, lesson) -> str:
    return f"{server}/{'' if lesson.url == 'home' else lesson.url}{QUERY.get(lesson.url, '')}"


_AHEAD = TabsAhead(lambda server, lesson: _address(server, lesson))


@pytest.fixture(scope="module", autouse=True)
def _close_ahead():
    yield
    _AHEAD.close_all()


@pytest.fixture
def lesson_tab(browser, server, request):
    """This lesson's page; the next lesson's starts loading now, while axe reads this one."""
    tab = _AHEAD.take(browser, server, request)
    yield tab
    tab.close()


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.url for l in LESSONS])
def test_axe_finds_nothing_of_our_making_and_charts_reflow_on_a_phone(axe_source, lesson_tab, lesson):
    page = lesson_tab.page
    wait_for_app(page)
    assert_no_exception(page)
    if lesson.url not in NO_CHART_AT_FIRST:  # "every chart drawn" holds too before any has come
        page.wait_for_function(CHARTS_ON_SHOW_JS, timeout=60_000, polling=100)
    try:
        page.wait_for_function(DRAWN_JS, timeout=10_000, polling=100)
    except Exception:
        pass  # axe then checks what is drawn; a chart that never draws is test_pages' business
    page.add_script_tag(content=axe_source)
    found = page.evaluate(RUN_AXE_JS, [TAGS, {k: v[0] for k, v in EXEMPT.items()}])
    assert found["passes"] > 10  # axe really ran its rules on a real page
    assert not found["violations"], (
        f"axe-core {found['version']} on /{lesson.url}:\n{describe(found['violations'])}")

    page.set_viewport_size(PHONE)  # the same page on a phone: reflow (tests/browser/reflow.py)
    page.wait_for_timeout(300)
    try:
        page.wait_for_function(DRAWN_JS, timeout=10_000, polling=100)
    except Exception:
        pass
    found = page.evaluate(MEASURE_JS)
    assert found["width"] <= PHONE["width"], found
    assert bool(found["charts"]) == (lesson.url not in NO_CHART_AT_FIRST), found
    problems = reflow_problems(found)
    assert not problems, f"/{lesson.url} at {PHONE['width']} px:\n" + "\n".join(problems)
    # (A scroll bar, the cue, cannot be measured here: headless chromium hides scroll bars.)
    if lesson.url in WIDER_THAN_A_PHONE:
        assert any(c["scrolls"] for c in found["charts"]), f"/{lesson.url}: the widest chart scrolls"


def test_the_rules_catch_each_way_to_break_reflow():
    fits = {"kind": "stVegaLiteChart", "left": 16, "right": 374, "drawn": 358, "box": 358,
            "scrolls": False}
    assert reflow_problems({"width": 390, "page": 390, "charts": [fits]}) == []
    past = dict(fits, right=520)
    clipped = dict(fits, drawn=700)
    scrolling = dict(clipped, scrolls=True)
    assert "past the screen's edge" in reflow_problems({"width": 390, "page": 390, "charts": [past]})[0]
    assert "do not scroll" in reflow_problems({"width": 390, "page": 390, "charts": [clipped]})[0]
    assert reflow_problems({"width": 390, "page": 390, "charts": [scrolling]}) == []
    assert "scrolls sideways" in reflow_problems({"width": 390, "page": 620, "charts": [fits]})[0]
