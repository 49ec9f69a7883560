"""Two learners at once, a page that fails, and a live class run from the projector, in a real
browser."""
from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import OutboundGuard, assert_no_exception, wait_for_app
from tests.support.serve import streamlit_server

pytestmark = pytest.mark.browser


def _open(browser, url):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    guard = OutboundGuard()
    context.route("**/*", guard)
    page = context.new_page()
    page.goto(url)
    wait_for_app(page)
    return context, page, guard


def _model_shown(page) -> str:
    box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first
    return box.locator("input").first.input_value()


def test_two_sessions_see_only_their_own_text_and_settings(server, browser):
    ctx_a, a, guard_a = _open(browser, f"{server}/self-attention?text=the+cat+sat+on+the+mat&model=gpt-tiny")
    ctx_b, b, guard_b = _open(browser, f"{server}/self-attention?text=a+robot+reached+the+lake&model=bert-tiny&layer=1")
    # each changes its own text while the other is open
    a.locator('[data-testid="stSidebar"] textarea').fill("the dog ran to the park")
    a.keyboard.press("Control+Enter")
    a.wait_for_timeout(300)
    wait_for_app(a)
    b.reload()
    wait_for_app(b)
    assert b.locator('[data-testid="stSidebar"] textarea').input_value() == "a robot reached the lake"
    assert "bert-tiny" in _model_shown(b) and "model=bert-tiny" in b.url
    assert a.locator('[data-testid="stSidebar"] textarea').input_value() == "the dog ran to the park"
    assert "gpt-tiny" in _model_shown(a) and "model=gpt-tiny" in a.url
    for page in (a, b):
        assert_no_exception(page)
    ctx_a.close()
    ctx_b.close()
    assert not guard_a.outside and not guard_b.outside


def test_a_failing_page_shows_a_friendly_message_and_others_keep_working(browser, tmp_path):
    log = tmp_path / "server.log"
    with streamlit_server(env={"TFVIZ_FAULT_PAGE": "masking"}, log_path=log) as (url, _, _):
        context, page, guard = _open(browser, f"{url}/masking")
        body = page.inner_text('[data-testid="stMain"]')
        assert "Sorry, something went wrong" in body
        assert "Traceback" not in body and "RuntimeError" not in body
        assert page.locator('[data-testid="stException"]').count() == 0
        page.locator('[data-testid="stSidebarNav"] a', has_text="Multi-head").first.click()
        page.wait_for_url("**/multi-head**")
        wait_for_app(page)
        assert_no_exception(page)
        assert "Sorry, something went wrong" not in page.inner_text('[data-testid="stMain"]')
        context.close()
        assert not guard.outside
    assert "page 'masking' failed" in log.read_text()


def test_unknown_page_in_url_lands_on_a_working_page(server, page):
    page.goto(f"{server}/no-such-lesson?layer=999999&head=-1")
    wait_for_app(page)
    assert_no_exception(page)


# -- a live class run from the projector, in chromium -----------------------------------------

def _main(pg) -> str:
    return pg.inner_text('[data-testid="stMain"]')


def _wait_text(pg, text: str, where: str = "stMain", timeout: float = 30_000) -> None:
    pg.wait_for_function(f"(t) => document.querySelector('[data-testid=\"{where}\"]')"
                         ".innerText.includes(t)", arg=text, timeout=timeout)


def _metric(pg, label: str) -> str:
    box = pg.locator('[data-testid="stMetric"]', has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _wait_metric(pg, label: str, value: str, timeout: float = 30_000) -> None:
    deadline = time.monotonic() + timeout / 1000
    while _metric(pg, label) != value:
        assert time.monotonic() < deadline, (label, _metric(pg, label), value)
        pg.wait_for_timeout(250)


def test_a_teacher_runs_a_class_from_the_projector(logged_server, browser):
    """The buttons a teacher clicks, in order: start, (students scan and join), ask a box,
    start its countdown, reveal, reset, end (which asks, naming what is not downloaded), and
    the answers of the ended class downloaded and read back."""
    import csv
    import io

    import cv2
    import numpy as np

    from tests.browser.live_class_browsers import Browser, start_class
    from tests.browser.test_downloads import _download
    from tfviz.classroom.store import open_store
    from tfviz.exercises.registry import EXERCISES, make_instance

    url, log = logged_server
    teacher, code = start_class(browser, url)
    plain = code.replace("-", "")
    pg = teacher.page
    link = f"{url}/?join={plain}"

    # The QR code as chromium draws it decodes to the class's address; the code and the address
    # are there in words, and the card names itself for a screen reader.
    qr = pg.locator(".tfviz-join-qr img")
    qr.wait_for(timeout=30_000)
    assert qr.get_attribute("alt") == f"QR code: open {link} to join class {code}"
    shot = cv2.imdecode(np.frombuffer(qr.screenshot(), np.uint8), cv2.IMREAD_GRAYSCALE)
    assert min(shot.shape) >= 200, shot.shape  # drawn large, not a thumbnail
    assert cv2.QRCodeDetector().detectAndDecode(shot)[0] == link
    card = pg.locator(".tfviz-join").inner_text()
    assert code in card and link in card
    assert "opens only on this computer" in _main(pg)  # the test server is 127.0.0.1

    # A student scans: the link opens the exercises in the class.
    exercise = next(iter(EXERCISES))
    inst = make_instance(exercise, None)
    first, second = (f.name for f in inst.answer_fields[:2])
    student = Browser(browser, "student").open(f"{url}/exercises?join={plain}")
    _wait_text(student.page, f"Following class {code}", "stSidebar", 60_000)
    _wait_metric(pg, "Here now", "1")

    # "I'm lost", counted for the teacher.
    student.page.locator('[data-testid="stSidebar"] [data-testid="stCheckbox"]',
                         has_text="I'm lost").locator("label").click()
    _wait_metric(pg, "I'm lost", "1")

    # Ask the first box; the student's sidebar names it.
    pick = pg.get_by_role("combobox", name="Question", exact=True)
    pick.click()
    pick.fill(f"· {first}")  # the list is long: type to narrow it
    pg.get_by_role("option", name=f"{EXERCISES[exercise].title} · {first}", exact=True).click()
    pg.get_by_role("button", name="Ask it").click()
    _wait_text(pg, f"Asked: {EXERCISES[exercise].title} · {first}")
    _wait_text(student.page, "Your teacher asks:", "stSidebar", 30_000)

    # A countdown, which the student's page counts down by itself.
    pg.get_by_role("button", name="Start the countdown").click()
    _wait_text(pg, "left")
    timer = student.page.locator('[data-testid="stSidebar"] [role="timer"]')
    timer.wait_for(timeout=30_000)  # the follower's next run (at most its 10 s timer)
    before = timer.inner_text()
    student.page.wait_for_function("(t) => document.querySelector('[role=\"timer\"]')"
                                   ".innerText !== t", arg=before, timeout=5_000)
    assert re.fullmatch(r"0:[0-5]\d left|1:00 left", timer.inner_text()), timer.inner_text()

    # The student answers the box (wrong); the results stay hidden until revealed.
    def answer(box: str, text: str, n: int) -> None:
        field = student.page.get_by_role("textbox", name=inst.field(box).label, exact=True)
        form = student.page.locator('[data-testid="stMain"] [data-testid="stForm"]').filter(
            has=field)
        form.get_by_role("textbox").fill(text)
        form.get_by_role("button", name="Check").click()
        student.page.wait_for_function(
            "([t, n]) => document.querySelector('[data-testid=\"stMain\"]').innerText"
            ".split(t).length - 1 >= n", arg=["Saved for your class's dashboard", n],
            timeout=60_000)

    def wrong(box: str) -> str:  # the right shape, every number off by 1.5
        return " ".join(repr(float(x) + 1.5) for x in np.ravel(inst.field(box).expected))

    answer(first, wrong(first), 1)
    _wait_text(pg, "Results hidden: 1 answered")
    pg.get_by_role("button", name="Reveal the results").click()
    _wait_text(pg, "0 of 1 right")

    # Reset the question (it asks first): its answer goes.
    pg.get_by_role("button", name="Reset this question").click()
    pg.get_by_role("button", name="Yes, reset it").click()
    _wait_text(pg, "1 answer forgotten")
    store = open_store()  # the server's own store (tests/conftest.py)
    cookie = {c["name"]: c["value"] for c in teacher.context.cookies()}["tfviz_teacher"]
    key = cookie.partition(".")[2]
    assert store.summary(plain, key) == ()

    # Another answer, to the second box; End asks, naming it as not downloaded.
    answer(second, wrong(second), 1)  # the first box's word may have gone with the reset
    deadline = time.monotonic() + 30
    while not [r for r in store.summary(plain, key) if r.step == second]:
        assert time.monotonic() < deadline, "the second answer never reached the store"
        time.sleep(0.2)
    pg.get_by_role("button", name="End the live class").click()
    _wait_text(pg, "1 answer has not been downloaded")
    pg.get_by_role("button", name="Keep teaching").click()
    name, got = _download(pg, "Every answer (CSV)", log)
    assert name == f"live-class-{plain}-answers.csv"
    assert [(r["box"], r["correct"]) for r in csv.DictReader(io.StringIO(got))] == [
        (second, "false")]
    pg.get_by_role("button", name="End the live class").click()
    _wait_text(pg, "you have downloaded every answer")
    pg.get_by_role("button", name="Yes, end the class").click()
    _wait_text(pg, f"Class {code} has ended")
    _wait_text(student.page, "ended this live session", "stSidebar", 30_000)

    # The ended class's answers, downloaded again from the same page, are the store's.
    name, got = _download(pg, "Every answer (CSV)", log)
    rows = list(csv.DictReader(io.StringIO(got)))
    assert [(r["box"], r["correct"], r["time"]) for r in rows] == [
        (r["box"], str(r["correct"]).lower(), r["time"]) for r in store.export_rows(plain, key)]
    for b in (teacher, student):
        assert not b.errors, (b.name, b.errors)
        assert b.page.locator('[data-testid="stException"]').count() == 0
        b.close()
