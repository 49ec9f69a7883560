"""Two learners at once, and a page that fails, in a real browser."""
from __future__ import annotations

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
