"""A timed fragment's late request, in a real browser: the lesson the browser shows stays drawn.

A student's follower is a fragment with ``run_every`` (a safety timer beside its long poll).
When the follower switches the page, a timed run the browser sent just before, naming the old
page, can reach the server after the new page's run; Streamlit ran it as the old page's, and the browser emptied
the lesson it had just drawn. ``tfviz.ui.errors.back_to_shown_page`` goes back to the page of
the last full run. AppTest sends no such request, so only a browser test can.
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import on_messages
from tests.browser.live_class_browsers import DIAGNOSE_JS, Browser, _nav, start_class

pytestmark = pytest.mark.browser


# Keeps the page's websocket where the test can send on it (Streamlit's own connection).
KEEP_SOCKET_JS = """(() => {
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) { window.__socket = this; return send.call(this, data); };
})();"""


def test_a_late_timed_run_for_the_page_just_left_does_not_blank_the_new_one(server, browser):
    """Sends exactly that late poll on the student's own websocket, then waits for the lesson
    to be drawn again (seen under load before the fix: a student's lesson stayed blank)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    teacher, code = start_class(browser, server)

    student = Browser(browser, "student")
    seen = {"pages": [], "timers": []}  # page hashes of the runs, timed fragments' ids

    def note(msg) -> None:
        if msg.WhichOneof("type") == "new_session":
            seen["pages"].append(msg.new_session.page_script_hash)
        elif msg.WhichOneof("type") == "auto_rerun":
            seen["timers"].append(msg.auto_rerun.fragment_id)

    on_messages(student.page, note)
    student.page.add_init_script(KEEP_SOCKET_JS)
    student.open(f"{server}/?join={code}")
    student.page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                                   ".innerText.includes('Following class')", timeout=60_000)
    student.settle()
    home, follower = seen["pages"][-1], seen["timers"][-1]

    _nav(student, "Self-attention", "self-attention")  # a student may look around
    student.page.wait_for_selector('[data-testid="stMain"] .vega-bind input[name="head"]',
                                   timeout=90_000)
    student.settle()
    assert seen["pages"][-1] != home

    late = BackMsg()
    late.rerun_script.page_script_hash = home  # the poll, as sent from the page just left
    late.rerun_script.fragment_id = follower
    late.rerun_script.is_auto_rerun = True
    late.rerun_script.query_string = f"join={code}"
    before = len(seen["pages"])
    student.page.evaluate("(bytes) => window.__socket.send(new Uint8Array(bytes))",
                          list(late.SerializeToString()))
    student.page.wait_for_timeout(3000)  # the late run, and whatever follows it
    assert home in seen["pages"][before:], "the late request was not run as the old page's"
    try:
        student.page.wait_for_function(
            "() => location.pathname === '/self-attention' && document.querySelector("
            "'[data-testid=\"stMain\"]').innerText.includes('Self-attention, step by step') && "
            "document.querySelector('[data-testid=\"stMain\"] .vega-bind input[name=\"head\"]')",
            timeout=30_000)
    except Exception as exc:
        raise AssertionError(f"the lesson stayed blank: {student.page.evaluate(DIAGNOSE_JS)}") from exc
    student.settle()
    assert student.page.locator('[data-testid="stException"]').count() == 0
    for b in (student, teacher):
        b.close()
