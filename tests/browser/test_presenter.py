"""Presenter view (issue #19) in chromium at 1280×720, the size of a common projector.

For every lesson 1-19: one page load of ``/<lesson>?present=1&slide=2`` (the link's slide must
open first), then ← to slide 1 and PageDown through every slide, as a presentation clicker
would (PageDown scrolls a slide taller than the screen before it moves on). On each slide:

- exactly one slide shows (the script's grouping is recomputed here from the page itself: the
  main block's children, cut at every ``st-key-tfviz-step-*`` container), the sidebar is
  hidden and the slide bar names the slide;
- nothing overflows the document sideways;
- every visible chart (Vega-Lite, plotly, image) lies inside the screen horizontally and is not
  clipped by any container with its own overflow;
- every visible text is at least 24 px: each element with a text node of its own (HTML, and
  SVG ``<text>`` of the charts), its computed font size times the scale its SVG or any CSS
  transform applies on screen. CSS ``zoom`` would hide from that measure, so the test fails
  if any element uses it.

What is *not* measured: text painted on a canvas (a Vega chart of more than 1,500 marks
draws on one; the count is reported, and the default sentence draws none), and text inside
closed expanders or unselected tabs (not on the screen). ``st.dataframe`` also paints on a
canvas, so a visible one fails the test: presenter view draws tables with
``tfviz.ui.widgets.table`` instead, as HTML.

A slide taller than the screen may scroll vertically; the test prints how many do.
"""
from __future__ import annotations

import time

import pytest

from tests.browser.conftest import SHOTS, OutboundGuard, assert_no_exception, wait_for_app
from tfviz.ui.errors import FRIENDLY_ERROR
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1280, "height": 720}
MIN_TEXT = 24  # px
LESSONS = [lesson for lesson in available() if lesson.number is not None and 1 <= lesson.number <= 19]
QUERY = {"mixture-of-experts": "&model=moe-tiny"}  # as tests/browser/test_pages.py

STEP = '[class*="st-key-tfviz-step-"]'

# The slide as this test sees it, independently of the presenter script: which children of
# the main block are visible, and whether they form exactly one slide.
SLIDES_JS = """(STEP) => {
  const block = document.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
  const groups = [[]];
  for (const el of block.children) {
    if (el.matches(STEP) || el.querySelector(':scope > ' + STEP)) groups.push([]);
    groups[groups.length - 1].push(el);
  }
  const shown = (el) => el.getClientRects().length > 0;
  const visible = groups.map((g, i) => g.some(shown) ? i : -1).filter((i) => i >= 0);
  return {count: groups.length, visible, steps: document.querySelectorAll(STEP).length};
}"""

READY_JS = """() => {  // the visible charts are drawn
  const shown = (el) => el.getClientRects().length > 0;
  const main = document.querySelector('[data-testid="stMain"]');
  const vega = Array.from(main.querySelectorAll('[data-testid="stVegaLiteChart"]')).filter(shown);
  const plots = Array.from(main.querySelectorAll('[data-testid="stPlotlyChart"]')).filter(shown);
  return vega.every((c) => c.querySelector('.vega-embed svg.marks, .vega-embed canvas.marks')) &&
         plots.every((c) => c.querySelector('.js-plotly-plot .main-svg'));
}"""

# Everything measured on the slide on screen (the slide scrolls inside stMain: elements below
# the fold are measured too).
MEASURE_JS = """([MIN]) => {
  const problems = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const box = main.getBoundingClientRect();
  const right = box.left + main.clientWidth;  // inside the vertical scroll bar
  const root = document.documentElement;
  const name = (el) => {
    const t = (el.getAttribute && (el.getAttribute('data-testid') || el.getAttribute('class'))) || '';
    return `${el.tagName.toLowerCase()}${t ? '.' + String(t).split(' ')[0] : ''}`;
  };
  const text = (el) => (el.textContent || '').trim().slice(0, 40);
  const seen = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
      el.getClientRects().length > 0;
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  if (sidebar && seen(sidebar)) problems.push('the sidebar is visible');
  if (root.scrollWidth > root.clientWidth + 1) problems.push(`the document is ${root.scrollWidth} px wide`);
  if (main.scrollWidth > main.clientWidth + 1) problems.push(`the lesson is ${main.scrollWidth} px wide, ${main.clientWidth} px shown`);
  for (const el of [main, ...main.querySelectorAll('*')]) {
    if (getComputedStyle(el).zoom !== '1') { problems.push(`CSS zoom on ${name(el)}: measure it`); break; }
  }
  // Charts: inside the screen sideways, and not clipped by a container of their own.
  let canvases = 0;
  const charts = Array.from(main.querySelectorAll('.vega-embed, .js-plotly-plot, img, [data-testid="stDataFrame"]')).filter(seen);
  for (const c of charts) {
    if (c.matches('[data-testid="stDataFrame"]')) {
      problems.push('st.dataframe (a canvas at 14 px): draw it with tfviz.ui.widgets.table');
      continue;
    }
    if (c.matches('.vega-embed') && c.querySelector('canvas.marks')) canvases += 1;
    const r = c.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > right + 0.5) {
      problems.push(`${name(c)} "${text(c)}" spans x ${Math.round(r.left)}..${Math.round(r.right)}, the screen ${Math.round(box.left)}..${Math.round(right)}`);
      continue;
    }
    for (let a = c.parentElement; a && a !== main; a = a.parentElement) {
      const s = getComputedStyle(a), q = a.getBoundingClientRect();
      const clipsX = s.overflowX !== 'visible', clipsY = s.overflowY !== 'visible';
      if ((clipsX && (r.left < q.left - 1 || r.right > q.right + 1)) ||
          (clipsY && (r.top < q.top - 1 || r.bottom > q.bottom + 1))) {
        problems.push(`${name(c)} "${text(c)}" (${Math.round(r.width)}×${Math.round(r.height)}) is clipped by ${name(a)} (${Math.round(q.width)}×${Math.round(q.height)})`);
        break;
      }
    }
  }
  // Text: every element with a text node of its own, at its size on screen.
  const shrink = (a) => {  // the scale a CSS transform of an HTML element applies
    const t = getComputedStyle(a).transform;
    if (!t || t === 'none') return 1;
    const m = new DOMMatrix(t);
    return Math.hypot(m.a, m.b);
  };
  const small = new Map(), cut = new Map();
  const scope = [main, document.getElementById('tfviz-present-bar')].filter(Boolean);
  for (const top of scope) {
    for (const el of [top, ...top.querySelectorAll('*')]) {
      if (!Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      if (el.closest('.katex-mathml, script, style, title, desc')) continue;  // not drawn
      if (!seen(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.width <= 1 && r.height <= 1) continue;  // visually hidden (screen-reader text)
      let scale = 1;  // what SVG and CSS transforms make of the computed size on screen
      if (el instanceof SVGElement) {  // getScreenCTM: the SVG's own and every CSS transform
        const m = el.getScreenCTM(); if (m) scale = Math.hypot(m.a, m.b);
      } else for (let a = el; a; a = a.parentElement) scale *= shrink(a);
      const px = parseFloat(getComputedStyle(el).fontSize) * scale;
      for (const a of [el, el.parentElement]) {  // a text cut short, or scrolling sideways
        if (!a || a instanceof SVGElement || a === main) continue;
        if (getComputedStyle(a).overflowX !== 'visible' && a.scrollWidth > a.clientWidth + 1) {
          const key = `${name(a)} shows ${a.clientWidth} of ${a.scrollWidth} px`;
          if (!cut.has(key)) cut.set(key, text(el));
          break;
        }
      }
      if (px < MIN - 0.05) {
        const key = `${name(el)} at ${px.toFixed(1)} px`;
        if (!small.has(key)) small.set(key, text(el));
      }
    }
  }
  for (const [key, t] of small) problems.push(`text "${t}" (${key})`);
  for (const [key, t] of cut) problems.push(`text "${t}" cut: ${key}`);
  // Formulas, tables and code that scroll sideways inside their own box (KaTeX's display
  // box and a wide table's wrapper do): their right end is off the screen.
  for (const el of main.querySelectorAll('.katex-display, [data-testid="stTable"], [data-testid="stTable"] *, pre')) {
    if (seen(el) && getComputedStyle(el).overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 4) {  // KaTeX's italic overhang: 2-3 px
      problems.push(`${name(el)} "${text(el)}" scrolls sideways: ${el.clientWidth} of ${el.scrollWidth} px shown`);
    }
  }
  // Colour bars: a gradient legend whose fill no longer resolves draws nothing.
  for (const el of main.querySelectorAll('.vega-embed svg [fill^="url("]')) {
    if (seen(el) && !/^url\(['"]?#/.test(el.getAttribute('fill'))) {
      problems.push(`a colour bar's fill points at ${el.getAttribute('fill').slice(0, 60)}`);
      break;
    }
  }
  // Axis labels that run into each other (24 px labels on an axis sized for 14 px ones).
  const axes = main.querySelectorAll('.vega-embed g.role-axis, .js-plotly-plot g.xaxislayer-above, .js-plotly-plot g.yaxislayer-above');
  for (const axis of axes) {
    if (!seen(axis)) continue;
    const labels = Array.from(axis.querySelectorAll(axis.matches('.role-axis') ? 'g.role-axis-label text' : 'text'))
        .filter((t) => t.textContent.trim() && seen(t)).map((t) => [t, t.getBoundingClientRect()]);
    // Labels side by side along their lines overlap as soon as their boxes do. Labels next
    // to each other across their lines (a vertical axis's, or a horizontal axis's turned
    // ones) overlap when their lines come closer than 0.85 em: a line's box is ~1.3 em high
    // and has air above and below, a turned label's box more (it is the box of a slanted line).
    const spread = (f) => Math.max(...labels.map(([, r]) => f(r))) - Math.min(...labels.map(([, r]) => f(r)));
    const vertical = spread((r) => r.top + r.bottom) > spread((r) => r.left + r.right);
    const angle = (t) => { const m = /rotate\(\s*(-?[\d.]+)/.exec(t.getAttribute('transform') || '');
                           return m ? +m[1] : 0; };
    const em = (t) => { const m = t.getScreenCTM(); return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); };
    for (let i = 0; i + 1 < labels.length; i++) {
      const [ta, a] = labels[i], [tb, b] = labels[i + 1];
      const turn = Math.abs(Math.sin(angle(ta) * Math.PI / 180)) > 0.1;
      let clash;
      if (vertical && !turn) clash = Math.abs((a.top + a.bottom) - (b.top + b.bottom)) / 2 < 0.85 * em(ta);
      else if (!vertical && turn) clash = Math.abs((a.left + a.right) - (b.left + b.right)) / 2 *
          Math.abs(Math.sin(angle(ta) * Math.PI / 180)) < 0.85 * em(ta);
      else clash = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
      if (clash) {
        problems.push(`axis labels "${text(ta)}" and "${text(tb)}" run into each other`);
        break;
      }
    }
  }
  return {problems, canvases, tall: main.scrollHeight > main.clientHeight + 1,
          at: window.__tfvizPresent ? window.__tfvizPresent.at() : null,
          bar: (document.querySelector('#tfviz-present-bar .tfviz-where') || {}).textContent || ''};
}"""


class _Tab:
    """A 1280×720 page in a context of its own, guarded like conftest's ``page``."""

    def __init__(self, browser, url: str | None = None):
        self.context = browser.new_context(viewport=VIEWPORT)
        self.guard = OutboundGuard()
        self.context.route("**/*", self.guard)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.opened = time.perf_counter()
        if url:
            self.page.goto(url, wait_until="commit")  # the rest loads while we do other things

    def close(self) -> None:
        self.context.close()
        assert not self.guard.outside, f"requests left localhost: {self.guard.outside[:5]}"


_AHEAD: dict[str, _Tab] = {}  # lesson URL -> its page, opened while the lesson before was tested


def _address(server: str, lesson) -> str:
    return f"{server}/{lesson.url}?present=1&slide=2{QUERY.get(lesson.url, '')}"


@pytest.fixture(scope="module", autouse=True)
def _close_ahead():
    yield
    while _AHEAD:
        _AHEAD.popitem()[1].context.close()


@pytest.fixture
def lesson_tab(browser, server, request):
    """This lesson's page, opened at ``?present=1&slide=2``; and the next selected lesson's
    page starts loading now, so that its load overlaps this lesson's checks (a page load is
    most of a lesson's time: Streamlit's frontend, the script run, the charts)."""
    lesson = request.node.callspec.params["lesson"]
    tab = _AHEAD.pop(lesson.url, None) or _Tab(browser, _address(server, lesson))
    items = request.session.items
    later = [item for item in items[items.index(request.node) + 1:]
             if getattr(item, "originalname", None) == request.node.originalname]
    if later:
        upcoming = later[0].callspec.params["lesson"]
        _AHEAD.setdefault(upcoming.url, _Tab(browser, _address(server, upcoming)))
    yield tab
    tab.close()


@pytest.fixture
def projector(browser):
    tab = _Tab(browser)
    yield tab.page
    tab.close()


LOADED_JS = """(STEP) => {  // the number of steps, once the run is over and all are slides
  const app = document.querySelector('[data-testid="stApp"]'), p = window.__tfvizPresent;
  if (!app || app.getAttribute('data-test-script-state') === 'running' || !p ||
      !document.querySelector('[data-testid="stMain"] h1')) return -1;
  const steps = document.querySelectorAll(STEP).length;
  return p.slides().length === steps + 1 ? steps : -1;
}"""


def _drawn(page) -> None:
    """Wait until the script run is over and every step is a slide, the same three times in a
    row 150 ms apart (a run can pause between two steps)."""
    counts: list[int] = []
    deadline = time.monotonic() + 90
    while len(counts) < 3 or len(set(counts[-3:])) > 1:
        assert time.monotonic() < deadline, f"the slides never settled: {counts[-8:]}"
        counts.append(page.evaluate(LOADED_JS, STEP))
        if counts[-1] < 0:
            counts.clear()
        page.wait_for_timeout(150)


def _settle(page) -> None:
    """Wait until the visible charts are drawn and the layout stopped moving."""
    page.wait_for_function(READY_JS, timeout=30_000, polling=100)
    page.evaluate("""() => new Promise((done) => {  // two frames without a change in height
        const main = document.querySelector('[data-testid="stMain"]');
        let last = -1, same = 0;
        const tick = () => { const h = main.scrollHeight;
            same = h === last ? same + 1 : 0; last = h;
            if (same >= 2) done(); else requestAnimationFrame(tick); };
        requestAnimationFrame(tick); })""")


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
    assert page.locator('[data-testid="stSidebar"]').get_by_text("Presenter view").is_visible()

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
