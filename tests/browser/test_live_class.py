"""Issue #19, follow the teacher, in a real browser: three browser contexts on one server.

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

import pytest

from tests.browser.conftest import FAILED, wait_for_app
from tests.browser.live_class_browsers import (NOTICE_ENDED, SENTENCES, STAY_S, VIEW_MOVES_JS, WORDS,
                                               Browser, _followed, _join_typed, _move_view, _nav,
                                               _now_ms, _pick_model, _report, _type_text, _watch,
                                               end_class, start_class)
from tests.browser.text_fits import text_problems

pytestmark = pytest.mark.browser

# The bound: students follow within 2 s. Each follow is timed twice, in the pages
# themselves: from the teacher's action, and behind the teacher's own screen (the moment the
# teacher's page shows the same thing; a new page or sentence takes both pages a full run and a
# redraw, which on this shared 2-core machine under load takes seconds by itself). The test
# asserts that every follow happens and prints every delay; it asserts no time (the house rule:
# a shared, noisy machine makes timed assertions flaky): the delays are recorded in
# BENCHMARKS.md ("Following the teacher"). The waits are long (FOLLOW_WAIT_MS, in
# live_class_browsers.py) so that a slow follow is measured rather than cut off.


@pytest.fixture
def live_server(logged_server):
    """The worker's shared server (conftest): a class lives in the store, each browser here is
    a context of its own, and the log is read from where the test began."""
    return logged_server


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
    # A student's sidebar reads in full, at the desktop size: its buttons' labels are not cut
    # ("Explore on …"; tests/browser/text_fits.py)
    assert not text_problems(typed.page), text_problems(typed.page)

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
    end_class(teacher.page)
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
    paths = ("self-attention", "teacher")  # a lesson, and the teacher's page with no class
    learners = [Browser(browser, f"learner on /{path}") for path in paths]
    for learner, path in zip(learners, paths):  # both watched over the same seconds
        learner.page.goto(f"{url}/{path}")
    for learner in learners:
        wait_for_app(learner.page, timeout=90_000)
        learner.settle()
    learners[0].page.wait_for_timeout(1000)
    before = [len(learner.runs) for learner in learners]
    learners[0].page.wait_for_timeout(3500)
    for learner, path, n in zip(learners, paths, before):
        assert len(learner.runs) == n, f"/{path} with no class ran the script on its own"
        assert "Join a live class" in learner.sidebar()
        learner.close()


def test_a_teacher_whose_session_is_lost_keeps_the_class(live_server, browser):
    """What a teacher's browser sees after its replica died or the server restarted: a new
    session (here a new tab of the same browser), which finds the class it taught in the
    browser's cookie and drives it again; ending the class clears the cookie."""
    url, _ = live_server
    teacher, code = start_class(browser, url)
    cookie = lambda: {c["name"]: c["value"] for c in teacher.context.cookies()}.get("tfviz_teacher")  # noqa: E731
    teacher.page.wait_for_function("() => document.cookie.includes('tfviz_teacher=')", timeout=30_000)
    assert cookie().startswith(code.replace("-", "") + ".")
    again = teacher.context.new_page()  # a new session: nothing of the old one's state
    again.goto(f"{url}/masking")
    wait_for_app(again, timeout=90_000)
    again.wait_for_function("(c) => document.querySelector('[data-testid=\"stSidebar\"]')"
                            ".innerText.includes('Live class ' + c)", arg=code, timeout=60_000)
    again.goto(f"{url}/teacher")
    wait_for_app(again, timeout=90_000)
    end_class(again)
    again.wait_for_function("() => !document.cookie.includes('tfviz_teacher=')", timeout=30_000)
    assert cookie() is None
    teacher.close()
