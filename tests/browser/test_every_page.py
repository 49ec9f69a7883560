"""Every lesson, opened once by its URL on this worker's logged server, then checked in that one
tab, in this order (a page load is most of a lesson's time, so the checks share it):

1. **By URL.** A deep link works: the page runs without an exception inside the app's frame
   (the sidebar navigation is there), and every chart on show draws. A screenshot per page is
   saved for review (``tests/screenshots``). Every chart offers its picture: a button under
   each, and the first one on show saves a real PNG with no script run.
2. **Readable for everyone (WCAG 2.2 AA).** axe-core (the npm package, a dev-only dependency
   that ``scripts/test.sh`` installs into ``tests/.npm``) is injected and run with the WCAG
   2.0, 2.1 and 2.2 A and AA rules on the page as it opened. A violation fails the test with its
   rule, its help text and the elements it found, except: Streamlit's own sidebar navigation
   (``stSidebarNav``, drawn by ``st.navigation``) holds one ``<div>`` per section in its
   ``<ul data-testid="stSidebarNavItems">`` (rule ``list``: a list may hold only ``<li>``), and
   so each lesson's ``<li>`` sits in a ``<div>``, not in the list (rule ``listitem``, once per
   lesson). That markup is Streamlit's (1.67), which a page cannot change, so those two rules
   are exempt *inside the sidebar navigation only*; anywhere else they count, and every other
   rule counts everywhere. Then the tab takes the sizes people use, 1280 × 800, 1400 × 900
   and 1920 × 1080: at each no heading breaks inside a word, no text is cut at its box's edge,
   the page does not scroll sideways and no chart runs past its box
   (``tests/browser/text_fits.py``). Then it is narrowed to a phone (390 × 844) and every chart is
   measured for reflow (WCAG 1.4.10, ``tests/browser/reflow.py``): it fits the width or scrolls
   inside its own box, and a box that scrolls can be reached by keyboard (axe's
   ``scrollable-region-focusable`` at that width). Where axe-core is missing,
   ``test_axe_core_is_installed`` says how to install it (skipped; in CI, ``CI=true``, a
   failure, and so is every page here: the check must run there); the other checks still run.
3. **One interaction redraws something** (the tab back at its desktop size).
4. **Hostile text** typed into the sidebar, one input after another. A page may answer with a
   notice, but the server's log must stay free of tracebacks and of the error boundary's
   "page/fragment ... failed" lines from the moment the page was opened: the friendly message
   hides a bug, it does not make one acceptable.

Each page gets a fresh browser context, so a session of its own; the next lesson's page already
loads in its own while this one is checked (tests/browser/tabs_ahead.py).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.conftest import (FAILED, SCRIPT_STATE_JS, SHOTS, Runs, assert_no_exception,
                                    wait_for_app, wait_idle)
from tests.browser.reflow import CHARTS_ON_SHOW_JS, MEASURE_JS, PHONE, reflow_problems
from tests.browser.tabs_ahead import TabsAhead
from tests.browser.text_fits import WIDTHS, problems_at
from tfviz.ui.lessons import available

pytestmark = pytest.mark.browser
LESSONS = available()
ROOT = Path(__file__).resolve().parents[2]
DESKTOP = {"width": 1400, "height": 1000}
QUERY = {"mixture-of-experts": "?model=moe-tiny",  # its token picker needs a model with experts
         "direct-attribution": "?model=llama-tiny"}  # a pre-LN model: gpt-tiny's logits do not split

# --- 1. by URL -------------------------------------------------------------------------------

# Every chart on show drawn (a hidden tab's charts wait until it opens): each Vega-Lite
# element holds its SVG or canvas.
DRAWN_JS = """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
    .filter((box) => box.offsetParent !== null)
    .every((box) => box.querySelector('.vega-embed svg, .vega-embed canvas'))"""

# --- 2. readable -----------------------------------------------------------------------------

AXE = Path(os.environ.get("TFVIZ_AXE", ROOT / "tests" / ".npm" / "node_modules" / "axe-core" / "axe.min.js"))
AXE_MISSING = (f"axe-core is missing ({AXE}): `npm install --no-save --prefix tests/.npm axe-core@4.14.1` "
               "installs it (scripts/test.sh does, where npm is)")
TAGS = {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}
# On a phone, where wide tables and charts scroll in boxes of their own: each such box can be
# reached and scrolled with the keyboard
ON_A_PHONE = {"type": "rule", "values": ["scrollable-region-focusable"]}
# Pages that open with no chart on show (a chart behind a button or a tab does not count)
NO_CHART_AT_FIRST = {"home", "tokenizer", "exercises", "quiz", "teacher", "training-lab"}
# Pages whose widest chart is wider than a phone: there, some chart must scroll in its box
WIDER_THAN_A_PHONE = {"self-attention", "masking", "decoding", "long-sequences"}
# rule -> (where it is exempt, why): Streamlit's markup, not ours (module docstring)
EXEMPT = {
    "list": ('[data-testid="stSidebarNav"]', "Streamlit's sidebar navigation (st.navigation)"),
    "listitem": ('[data-testid="stSidebarNav"]', "Streamlit's sidebar navigation (st.navigation)"),
}

# axe's violations, without the exempt nodes, as plain data
RUN_AXE_JS = """async ([only, exempt]) => {
    const result = await axe.run(document, {runOnly: only, resultTypes: ['violations']});
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


def describe(violations: list[dict]) -> str:
    return "\n".join(f"- {v['id']} ({v['impact']}, {v['count']}×): {v['help']}\n" + "\n".join(
        f"    {n['target']}: {n['html']}\n      {n['why']}" for n in v["nodes"]) for v in violations)


@pytest.fixture(scope="module")
def axe_source() -> str | None:
    """axe-core's source, or None where it is missing (a failure in CI, which must run it)."""
    if AXE.is_file():
        return AXE.read_text()
    if os.environ.get("CI") == "true":
        pytest.fail(AXE_MISSING + "; in CI the accessibility check must run")
    return None


def test_axe_core_is_installed(axe_source):
    """The one place a missing axe-core shows as a skip: the pages below run their other checks."""
    if axe_source is None:
        pytest.skip(AXE_MISSING)
    assert "axe" in axe_source[:2000]


# --- 3. one interaction ----------------------------------------------------------------------

CHART_STATE_JS = """() => Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'))
    .map(c => c.outerHTML.length + ':' + (c.toDataURL ? c.toDataURL().length : 0))
    .concat(Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"] svg [aria-label]'))
    .map(e => e.getAttribute('aria-label')))
    .concat(Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stTable"], [data-testid="stMain"] [data-testid="stMarkdownContainer"], [data-testid="stMain"] [data-testid="stMetricValue"]')).map(e => e.innerText))
    .join('|')"""

# One interaction per page that should redraw something: (kind, label).
INTERACTIONS = {
    "home": ("link", "Start the tour"),
    "tour": ("view", "longest"),  # the RNN chart's longest sentence, in the browser
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
    "logit-lens": ("view", "show"),  # the map's colour: top token's or final prediction's probability
    "direct-attribution": ("view", "which"),  # every part's bar or the heads' only, in the browser
    "activation-patching": ("view", "show"),  # share restored or logit difference, in the browser
    "induction-heads": ("number", "Random seed"),  # another random sequence, from the server
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


def wait_still(page, timeout: float = 10.0) -> None:
    """Until what CHART_STATE_JS reads stays the same for 300 ms (charts that redraw after the
    tab's size changed have done so): the interaction is then compared with a page at rest,
    not with one that is still redrawing by itself."""
    deadline = time.monotonic() + timeout
    last = page.evaluate(CHART_STATE_JS)
    while time.monotonic() < deadline:
        page.wait_for_timeout(300)
        now = page.evaluate(CHART_STATE_JS)
        if now == last:
            return
        last = now
    raise AssertionError("the page kept changing by itself after the tab's size was restored")


# --- 4. hostile text -------------------------------------------------------------------------

# Typed in this order: the selectors once broke on the *second* text change after a position
# was chosen, so the order matters as much as the inputs. Three texts, three paths through
# ``textinput.clean_text``: refused (empty and blank take the same branch), cut to 2,000
# characters, and kept as typed. The third holds every kind of hostile character at once, so
# each page draws all of them in chromium; tests/robustness/test_bad_input.py types each kind
# on its own, and more kinds, into every page's box (AppTest, the same server-side checks).
SEQUENCE = {
    "empty": "",
    "100000 x": "x" * 100_000,  # arrives, and is cut to its first 2,000 characters with a notice
    "rtl, zalgo, emoji, nul, escape, script": (
        "\u202eمرحبا بالعالم \u202bשלום עולם\u202c "
        "Z\u0351\u0300\u0336a\u0352\u0353l\u0316\u0317g\u0358o\u0321 👩\u200d💻 h\u0334e\u0335 "
        "a\x00b\x1b[31mc\x1b <script>alert(1)</script>"),
}
FRIENDLY = "Sorry, something went wrong"
# The sidebar's box shows the page's sentence (every page opens with one)
BOX_FILLED_JS = "() => !!document.querySelector('[data-testid=\"stSidebar\"] textarea')?.value"


def _wait_settled(pg, runs: Runs, after: int, seconds: float, where: tuple) -> None:
    """Until a run ended after ``after`` had, and the server says nothing runs or is about to
    (conftest's ``Runs.idle``, read off the websocket: no fixed pause needed)."""
    if not wait_idle(pg, runs, after, seconds):
        raise AssertionError(f"{where}: no end of the run; page state {pg.evaluate(SCRIPT_STATE_JS)},"
                             f" last websocket events {runs.events[-6:]}")


def _problems(pg, log, start: int) -> list[str]:
    found = [m.group(0) for m in FAILED.finditer(log.read_text(errors="replace")[start:])]
    if pg.locator('[data-testid="stException"]').count():
        found.append("Streamlit's exception element is on the page")
    if FRIENDLY in pg.inner_text('[data-testid="stMain"]'):
        found.append("the error boundary's friendly message is on the page")
    return found


def type_hostile_texts(pg, runs: Runs, log, start: int, where: str) -> None:
    """SEQUENCE typed into the sidebar's box, each committed and its run waited for; after each,
    nothing in the log since ``start`` and nothing on the page says a run failed."""
    box = pg.locator('[data-testid="stSidebar"] textarea')
    for name, text in SEQUENCE.items():
        before_value = box.input_value()
        ended, asked = runs.ended(), runs.asked()
        box.fill(text)
        # Checked before committing: after the run the box may hold the last text again (an
        # empty text is refused and the box shows what the page still uses).
        assert box.input_value() != before_value, (where, name, "the box refused the text")
        pg.keyboard.press("Control+Enter")
        deadline = time.monotonic() + 10  # the frame is sent as the key is handled
        while runs.asked() == asked and time.monotonic() < deadline:
            pg.wait_for_timeout(50)  # playwright records the sent frame while it waits
        if runs.asked() == asked:  # Ctrl+Enter can be lost on a loaded machine
            box.blur()  # leaving the box commits it too
        _wait_settled(pg, runs, ended, 90, (where, name))
        if name == "100000 x":  # kept, cut, and the learner is told so
            assert "kept its first 2,000 characters" in pg.inner_text('[data-testid="stSidebar"]')
            try:  # the notice can be drawn a frame before the box shows the cut text
                pg.wait_for_function("() => document.querySelector("
                                     "'[data-testid=\"stSidebar\"] textarea').value.length === 2000",
                                     timeout=10_000, polling=100)
            except Exception:
                pass  # reported by the assertion below
            assert len(box.input_value()) == 2000
        problems = _problems(pg, log, start)
        assert not problems, (where, name, problems, log.read_text(errors="replace")[start:][-3000:])
    assert "<script>alert(1)</script>" in box.input_value()  # the last input did arrive


# --- the walk --------------------------------------------------------------------------------

def _address(server: str, lesson) -> str:
    return f"{server}/{'' if lesson.url == 'home' else lesson.url}{QUERY.get(lesson.url, '')}"


@pytest.fixture(scope="module")
def ahead(logged_server):
    """Each lesson's tab: a fresh context (a session of its own), guarded against requests
    leaving localhost, its script runs read off the websocket and the server log's length noted
    before its page opens. The next lesson's page loads while this one is checked."""
    log = logged_server[1]

    def prepare(tab) -> None:
        tab.runs = Runs(tab.page)
        tab.log_start = len(log.read_text(errors="replace"))

    tabs = TabsAhead(_address, DESKTOP, prepare)
    yield tabs
    tabs.close_all()


@pytest.fixture
def tab(browser, logged_server, ahead, request):
    tab = ahead.take(browser, logged_server[0], request)
    yield tab
    tab.close()


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.url for l in LESSONS])
def test_lesson_by_url_readable_interactive_and_calm_under_hostile_text(logged_server, axe_source,
                                                                         tab, lesson):
    url, log = logged_server
    # The log from this page's opening on: it may also hold the lesson before's last lines,
    # as this page loaded while that one was checked (a failure there then shows here too).
    page, runs, start = tab.page, tab.runs, tab.log_start
    _wait_settled(page, runs, 0, 90, (lesson.url, "opening"))
    wait_for_app(page)

    # 1. by URL
    assert_no_exception(page)
    nav = page.locator('[data-testid="stSidebarNav"]')
    assert nav.count() == 1 and "Foundations" in nav.inner_text()  # the frame, not a bare page
    assert not _problems(page, log, start), (lesson.url, "on opening", _problems(page, log, start))
    if lesson.url not in NO_CHART_AT_FIRST:  # "every chart drawn" holds too before any has come
        page.wait_for_function(CHARTS_ON_SHOW_JS, timeout=60_000, polling=100)
    page.wait_for_function(DRAWN_JS, timeout=30_000)  # charts draw after the script run ends
    page.wait_for_timeout(500)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{lesson.file[:-3]}.png"), full_page=True)
    charts = page.locator(".vega-embed").count()
    if charts:  # each chart's picture (tfviz/ui/assets/view_sync.js: addSave)
        buttons = page.locator(".vega-embed > button.tfviz-save")
        assert buttons.count() == charts, (lesson.url, buttons.count(), charts)
        asked = runs.asked()
        with page.expect_download() as saved:
            buttons.filter(visible=True).first.click()
        png = Path(saved.value.path()).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, (lesson.url, len(png))
        assert saved.value.suggested_filename.endswith(".png")
        assert runs.asked() == asked, (lesson.url, "saving a picture ran the script")

    # 2. readable: axe on the page as it opened, then reflow on a phone
    if axe_source is not None:
        page.add_script_tag(content=axe_source)
        found = page.evaluate(RUN_AXE_JS, [TAGS, {k: v[0] for k, v in EXEMPT.items()}])
        assert found["passes"] > 10  # axe really ran its rules on a real page
        assert not found["violations"], (
            f"axe-core {found['version']} on /{lesson.url}:\n{describe(found['violations'])}")
    for size in WIDTHS:  # a laptop, a desktop, a wide screen (tests/browser/text_fits.py)
        problems = problems_at(page, size)
        assert not problems, (f"/{lesson.url} at {size['width']} × {size['height']}:\n"
                              + "\n".join(problems))
    page.set_viewport_size(PHONE)  # the same page on a phone: reflow (tests/browser/reflow.py)
    page.wait_for_timeout(300)
    try:
        page.wait_for_function(DRAWN_JS, timeout=10_000, polling=100)
    except Exception:
        pass
    if axe_source is not None:
        found = page.evaluate(RUN_AXE_JS, [ON_A_PHONE, {}])
        assert not found["violations"], (
            f"axe-core on /{lesson.url} at {PHONE['width']} px:\n{describe(found['violations'])}")
    found = page.evaluate(MEASURE_JS)
    assert found["width"] <= PHONE["width"], found
    assert bool(found["charts"]) == (lesson.url not in NO_CHART_AT_FIRST), found
    problems = reflow_problems(found)
    assert not problems, f"/{lesson.url} at {PHONE['width']} px:\n" + "\n".join(problems)
    # (A scroll bar, the cue, cannot be measured here: headless chromium hides scroll bars.)
    if lesson.url in WIDER_THAN_A_PHONE:
        assert any(c["scrolls"] for c in found["charts"]), f"/{lesson.url}: the widest chart scrolls"

    # 3. one interaction, back at the desktop size, on a page at rest
    page.set_viewport_size(DESKTOP)
    page.wait_for_function(DRAWN_JS, timeout=30_000, polling=100)
    wait_still(page)
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
    assert not tab.errors, tab.errors

    # 4. hostile text, on this lesson's page (home's link has led to the tour: back home)
    _wait_settled(page, runs, 0, 90, (lesson.url, "after the interaction"))
    if urlparse(page.url).path != urlparse(_address(url, lesson)).path:
        ended = runs.ended()
        page.goto(_address(url, lesson))
        _wait_settled(page, runs, ended, 90, (lesson.url, "opening again"))
        wait_for_app(page)  # the run's end reaches Python before React has drawn the sidebar
        page.wait_for_function(BOX_FILLED_JS, timeout=30_000, polling=100)
    type_hostile_texts(page, runs, log, start, lesson.url)
