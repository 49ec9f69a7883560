"""Issue #19, follow the teacher, in a real browser: three browser contexts on one fresh server.

The teacher starts a live class on /teacher and reads the join code off the page; one student
opens a ``?join=CODE`` link, the other types the code into the sidebar. The teacher changes the
page, the sentence and the layer and head of an instant chart; the students' pages follow (URL
path, the sidebar's text, the charts' bound inputs), and the delays are measured in the pages
themselves. One student explores on their own and catches up; a student's browser cannot move
the class; ending the class leaves the students a friendly notice. AppTest (tests/app/) runs no
JavaScript, so only a browser shows that the view moved in the teacher's browser reaches the
students' charts.
"""
from __future__ import annotations

import re
import statistics
import time

import pytest

from tests.browser.conftest import OutboundGuard, wait_for_app
from tests.browser.test_sidebar_text import FAILED, _count_finished_runs
from tests.support.serve import streamlit_server

pytestmark = pytest.mark.browser

# The bound: students follow within 2 s. Each follow is timed twice, in the pages
# themselves: from the teacher's action, and behind the teacher's own screen (the moment the
# teacher's page shows the same thing; a new page or sentence takes both pages a full run and a
# redraw, which on this shared 2-core machine under load takes seconds by itself). The test
# asserts that every follow happens and prints every delay; it asserts no time (the house rule:
# a shared, noisy machine makes timed assertions flaky): the delays are recorded in
# BENCHMARKS.md ("Following the teacher"). The waits are long (FOLLOW_WAIT_MS) so that a slow
# follow is measured rather than cut off.
FOLLOW_WAIT_MS = 30_000
STAY_S = 3.0  # poll interval (1 s) + the bound: a detached student would have moved by then
CODE_RE = re.compile(r"\b([2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4})\b")
# Words every model read in training, so that each is one token on the charts' axes.
SENTENCES = ("the cat rested near the lake", "the dog jumped over the boat", "how are you")
WORDS = ("lake", "boat")

# Where a page is: URL path, the sidebar's text, and the first bound input of each view key
# (the top chart's; charts far below follow when scrolled near, tfviz.ui.views).
WHERE_JS = """() => {
    const first = (k) => { const el = document.querySelector(`[data-testid="stMain"] .vega-bind input[name="${k}"]`);
                           return el ? el.value : null; };
    const box = document.querySelector('[data-testid="stSidebar"] textarea');
    const model = document.querySelector('[data-testid="stSidebar"] [data-testid="stSelectbox"] input');
    return {path: location.pathname, text: box ? box.value : null, model: model ? model.value : null,
            layer: first('layer'), head: first('head')};
}"""
# Notes, in the page itself, the first moment it is where ``want`` says (``word``: a chart shows
# that word; ``charts``: the charts and their inputs are drawn). The time is the page's clock,
# so waiting on one page after another does not add the first wait to the second's time.
FOLLOWED_JS = """(want) => {
    window.__followedAt = null;
    const where = %s;
    const tick = () => {
        const now = where();
        const drawn = Array.from(document.querySelectorAll('[data-testid="stMain"] .vega-embed text'));
        const ok = Object.entries(want).every(([k, v]) =>
            k === 'word' ? drawn.some((e) => e.textContent.includes(v)) :  // the charts show it
            k === 'charts' ? now.layer !== null : now[k] === v);
        if (ok) window.__followedAt = Date.now();
        else setTimeout(tick, 20);
    };
    tick();
}""" % WHERE_JS
# On a failed wait: the address, the view script's keys, how often the follower's view script
# ran, and every chart's layer/head inputs (a catch-up once kept the old layer in CI).
DIAGNOSE_JS = """() => ({href: location.href,
    view: window.__tfvizViews ? JSON.stringify(window.__tfvizViews.view) : null,
    viewMoves: window.__tfvizViewMoves || 0,
    inputs: Array.from(document.querySelectorAll('[data-testid="stMain"] .vega-bind input'))
        .filter((e) => e.name === 'layer' || e.name === 'head').map((e) => `${e.name}=${e.value}`).join(' '),
    charts: document.querySelectorAll('[data-testid="stMain"] .vega-embed').length,
    state: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state'),
    main: document.querySelector('[data-testid="stMain"]').innerText.slice(0, 600),
    sidebar: document.querySelector('[data-testid="stSidebar"]').innerText.slice(-300)})"""
VIEW_MOVES_JS = "() => window.__tfvizViewMoves || 0"  # how often the follower's script ran
NOTICE_ENDED = "Your teacher has ended this live session."


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("live_class") / "streamlit.log"
    with streamlit_server(log_path=log) as (url, proc, _):
        yield url, log
        assert proc.poll() is None, f"server died; log:\n{log.read_text()[-3000:]}"


class Browser:
    """One browser context: a teacher's, a student's or a lone learner's."""

    def __init__(self, browser, name: str):
        self.name = name
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.guard = OutboundGuard()
        self.context.route("**/*", self.guard)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.runs = _count_finished_runs(self.page)

    def open(self, url: str) -> "Browser":
        self.page.goto(url)
        wait_for_app(self.page, timeout=90_000)
        return self

    def where(self) -> dict:
        return self.page.evaluate(WHERE_JS)

    def sidebar(self) -> str:
        return self.page.inner_text('[data-testid="stSidebar"]')

    def settle(self) -> None:
        self.page.wait_for_function("() => document.querySelector('[data-testid=\"stApp\"]')"
                                    "?.getAttribute('data-test-script-state') === 'notRunning'",
                                    timeout=90_000, polling=100)

    def close(self) -> None:
        self.context.close()
        assert not self.guard.outside, (self.name, self.guard.outside[:5])


def _watch(pages, want: dict) -> None:
    for b in pages:
        b.page.evaluate(FOLLOWED_JS, want)


def _arrived(b: Browser, what: str) -> float:
    """When ``b`` got where it was watched to go (ms, wall clock)."""
    try:
        b.page.wait_for_function("() => window.__followedAt !== null", timeout=FOLLOW_WAIT_MS,
                                 polling=100)
    except Exception as exc:
        raise AssertionError(f"{b.name} did not get there ({what}): it is at {b.where()}; "
                             f"{b.page.evaluate(DIAGNOSE_JS)}") from exc
    return b.page.evaluate("window.__followedAt")


def _followed(students, t0_ms: float, what: str, delays: list, teacher: Browser | None = None) -> None:
    """Waits until every watched student is where it should be; records (what, who, seconds
    from the action, seconds behind the teacher's screen). ``teacher``: watched too."""
    shown = _arrived(teacher, what) if teacher else t0_ms
    for s in students:
        at = _arrived(s, what)
        delays.append((what, s.name, (at - t0_ms) / 1000, max(at - max(shown, t0_ms), 0) / 1000))


def _now_ms() -> float:
    return time.time() * 1000  # the browsers' Date.now() is the same wall clock


def start_class(browser, url: str) -> tuple[Browser, str]:
    """A teacher's browser that started a live class on /teacher, and the join code it shows."""
    teacher = Browser(browser, "teacher").open(f"{url}/teacher")
    teacher.page.get_by_role("button", name="Start a live class").click()
    teacher.page.wait_for_function("(re) => new RegExp(re).test(document.querySelector("
                                   "'[data-testid=\"stMain\"]').innerText)", arg=CODE_RE.pattern,
                                   timeout=60_000)
    return teacher, CODE_RE.search(teacher.page.inner_text('[data-testid="stMain"]')).group(1)


def _type_text(b: Browser, text: str) -> None:
    box = b.page.locator('[data-testid="stSidebar"] textarea')
    box.fill(text)
    b.page.keyboard.press("Control+Enter")


def _move_view(teacher: Browser, key: str, presses: int) -> str:
    """The teacher moves the first chart's ``key`` input by ``presses`` steps; its new value."""
    el = teacher.page.locator(f'[data-testid="stMain"] .vega-bind input[name="{key}"]').first
    el.focus()
    for _ in range(presses):
        teacher.page.keyboard.press("ArrowRight")
    return el.input_value()


def _nav(b: Browser, title: str, url: str) -> None:
    b.page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    b.page.wait_for_url(f"**/{url}**")


def _pick_model(b: Browser, name: str) -> None:
    b.page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    b.page.get_by_role("option", name=name, exact=True).click()


def _join_typed(b: Browser, code: str) -> None:
    box = b.page.locator('[data-testid="stSidebar"] [data-testid="stTextInput"]',
                         has_text="Join a live class").locator("input")
    box.fill(code)
    box.press("Enter")


def _report(delays: list) -> list[float]:
    print("\nfollow delays: from the teacher's action / behind the teacher's own screen")
    for what, who, d, lag in delays:
        print(f"  {what:<34} {who:<7} {d:5.2f} s / {lag:5.2f} s")
    raw, lags = [d[2] for d in delays], [d[3] for d in delays]
    print(f"  n={len(raw)}  from the action: median {statistics.median(raw):.2f} s, max "
          f"{max(raw):.2f} s;  behind the teacher: median {statistics.median(lags):.2f} s, max "
          f"{max(lags):.2f} s  (the issue asks for 2 s)")
    return lags


def test_students_follow_the_teacher_detach_catch_up_and_cannot_drive(live_server, browser):
    url, log = live_server
    start = len(log.read_text(errors="replace"))
    delays: list = []

    # -- the teacher starts a class; the code is read off the page -----------------------------
    teacher, code = start_class(browser, url)

    # -- two students: a ?join= link, and the code typed into the sidebar ----------------------
    linked = Browser(browser, "linked").open(f"{url}/?join={code.replace('-', '')}")
    typed = Browser(browser, "typed").open(url)
    _join_typed(typed, code.lower())  # as a student might type it
    for s in (linked, typed):
        s.page.wait_for_function("(c) => document.querySelector('[data-testid=\"stSidebar\"]')"
                                 ".innerText.includes('Following class ' + c)", arg=code,
                                 timeout=60_000)
    students = (linked, typed)

    # -- the teacher changes page, sentence, and the view of an instant chart ------------------
    want = {"path": "/self-attention", "charts": True}
    _watch((teacher, *students), want)
    t0 = _now_ms()
    _nav(teacher, "Self-attention", "self-attention")
    _followed(students, t0, "page -> /self-attention", delays, teacher)
    wait_for_app(teacher.page)

    for s in (teacher, *students):  # the charts are drawn before the view is moved
        s.page.wait_for_selector('[data-testid="stMain"] .vega-bind input[name="head"]',
                                 timeout=90_000)
    _watch((teacher, *students), {"path": "/self-attention", "text": SENTENCES[0], "word": WORDS[0]})
    t0 = _now_ms()
    _type_text(teacher, SENTENCES[0])
    _followed(students, t0, "sentence", delays, teacher)
    wait_for_app(teacher.page)
    teacher.page.wait_for_selector('[data-testid="stMain"] .vega-bind input[name="head"]',
                                   timeout=90_000)

    t0 = _now_ms()
    layer = _move_view(teacher, "layer", 1)
    head = _move_view(teacher, "head", 2)
    assert (layer, head) == ("1", "2")
    _watch(students, {"path": "/self-attention", "text": SENTENCES[0], "layer": layer, "head": head})
    _followed(students, t0, "view: layer 1, head 2", delays)  # the teacher's input moved at t0

    _watch((teacher, *students), {"path": "/multi-head", "text": SENTENCES[0], "layer": layer,
                                  "head": head})
    t0 = _now_ms()
    _nav(teacher, "Multi-head", "multi-head")  # the view goes with the teacher to a new page
    _followed(students, t0, "page -> /multi-head, same view", delays, teacher)
    wait_for_app(teacher.page)
    assert teacher.where() == {"path": "/multi-head", "text": SENTENCES[0], "model": "gpt-tiny",
                               "layer": layer, "head": head}
    # No rerun loops: a teacher who is not moving runs nothing (the view is reported only when
    # it changes), a student polls about once a second.
    teacher.settle()
    teacher.page.wait_for_timeout(1000)
    runs = [len(b.runs) for b in (teacher, *students)]
    moves = [s.page.evaluate(VIEW_MOVES_JS) for s in students]
    teacher.page.wait_for_timeout(3000)
    runs = [len(b.runs) - n for b, n in zip((teacher, *students), runs)]
    print(f"\nscript runs in 3 s, idle: teacher {runs[0]}, students {runs[1:]}")
    assert runs[0] == 0 and max(runs[1:]) <= 6, runs
    # The follower draws its view script on every poll; the browser runs it once per teacher
    # move, so a student's own slider is not pulled back every second.
    assert moves[0] > 0 and [s.page.evaluate(VIEW_MOVES_JS) for s in students] == moves

    # -- one student explores; the teacher moves on; only the other follows --------------------
    typed.page.get_by_role("button", name="Explore on my own").click()
    typed.page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                                 ".innerText.includes('Exploring on your own')", timeout=60_000)
    typed.settle()
    stayed = typed.where()
    teacher.page.wait_for_selector('[data-testid="stMain"] .vega-bind input[name="head"]',
                                   timeout=90_000)
    _watch((teacher, linked), {"path": "/multi-head", "text": SENTENCES[1], "word": WORDS[1]})
    t0 = _now_ms()
    _type_text(teacher, SENTENCES[1])
    _followed([linked], t0, "sentence (one student exploring)", delays, teacher)
    wait_for_app(teacher.page)
    teacher.page.wait_for_selector('[data-testid="stMain"] .vega-bind input[name="layer"]',
                                   timeout=90_000)
    t0 = _now_ms()
    layer = _move_view(teacher, "layer", 1)
    assert layer == "2"
    _watch([linked], {"path": "/multi-head", "text": SENTENCES[1], "layer": layer, "head": head})
    _followed([linked], t0, "view: layer 2 (one exploring)", delays)
    typed.page.wait_for_timeout(STAY_S * 1000)
    assert typed.where() == stayed, "the exploring student was moved by the teacher"

    # Catch up: back to where the teacher is now (not measured against the bound: the student
    # asked, and the teacher's move is long past).
    _watch([typed], {"path": "/multi-head", "text": SENTENCES[1], "layer": layer, "head": head})
    t0 = _now_ms()
    typed.page.get_by_role("button", name="Catch up").click()
    _followed([typed], t0, "catch up", catch_up := [])
    assert "Following class" in typed.sidebar()

    # -- a student's browser cannot drive ------------------------------------------------------
    typed.settle()
    teacher_was, linked_was = teacher.where(), linked.where()
    _type_text(typed, SENTENCES[2])
    typed.page.wait_for_function("(t) => document.querySelector('[data-testid=\"stSidebar\"] "
                                 "textarea').value === t", arg=SENTENCES[2], timeout=60_000)
    typed.settle()
    _nav(typed, "Masking", "masking")
    wait_for_app(typed.page)
    typed.page.wait_for_timeout(STAY_S * 1000)
    assert typed.where()["path"] == "/masking"  # the student went where they liked...
    assert teacher.where() == teacher_was  # ...and neither the teacher
    assert linked.where() == linked_was  # nor the other student moved

    # -- the model follows too; a student who joins late takes it in the join's own run ---------
    _watch(students, {"path": "/multi-head", "text": SENTENCES[1], "model": "bert-tiny"})
    t0 = _now_ms()
    _pick_model(teacher, "bert-tiny")
    _followed(students, t0, "model -> bert-tiny", delays)  # the teacher's box changed at t0
    wait_for_app(teacher.page)
    typed.page.get_by_role("button", name="Leave class").click()
    typed.page.wait_for_selector('[data-testid="stSidebar"] [data-testid="stTextInput"] input',
                                 timeout=60_000)
    typed.settle()
    _pick_model(typed, "gpt-tiny")
    wait_for_app(typed.page)
    assert teacher.where()["model"] == "bert-tiny"  # the student's own choice stays theirs
    _watch([typed], {"path": "/multi-head", "text": SENTENCES[1], "model": "bert-tiny"})
    _join_typed(typed, code)
    _followed([typed], _now_ms(), "rejoin", [])
    typed.settle()
    assert typed.page.locator('[data-testid="stException"]').count() == 0

    # -- the teacher ends the class: the students are told, kindly -----------------------------
    _nav(teacher, "Teacher", "teacher")
    wait_for_app(teacher.page)
    teacher.page.get_by_role("button", name="End the live class").click()
    for s in students:  # the notice, the join box back, and no follower left
        try:
            s.page.wait_for_function(
                "(t) => { const side = document.querySelector('[data-testid=\"stSidebar\"]').innerText;"
                " return side.includes(t) && side.includes('Join a live class') &&"
                " !side.includes('Following class'); }", arg=NOTICE_ENDED, timeout=30_000)
        except Exception as exc:
            raise AssertionError(f"{s.name}: {s.sidebar()[-400:]}") from exc
        s.settle()
        assert s.page.locator('[data-testid="stException"]').count() == 0

    print(f"\ncatch up took {catch_up[0][2]:.2f} s")
    lags = _report(delays)
    for b in (teacher, *students):
        assert not b.errors, (b.name, b.errors)
        b.close()
    problems = FAILED.findall(log.read_text(errors="replace")[start:])
    assert not problems, log.read_text(errors="replace")[start:][-3000:]
    assert len(lags) == len(delays)  # every follow happened; how fast is printed above


def test_a_page_without_a_class_runs_nothing_on_a_timer(live_server, browser):
    """Ordinary learners pay nothing for live classes: no fragment on a timer, no run at all
    while they read (a student's follower is the only live code that polls)."""
    url, _ = live_server
    learner = Browser(browser, "learner")
    for path in ("self-attention", "teacher"):  # a lesson, and the teacher's page with no class
        learner.open(f"{url}/{path}")
        learner.settle()
        learner.page.wait_for_timeout(1000)
        before = len(learner.runs)
        learner.page.wait_for_timeout(3500)
        assert len(learner.runs) == before, f"/{path} with no class ran the script on its own"
        assert "Join a live class" in learner.sidebar()
    learner.close()

