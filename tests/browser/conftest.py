"""Browser tests: Debian chromium driven by playwright against a real streamlit server."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.serve import CHROMIUM, CHROMIUM_ARGS, is_local, streamlit_server

SHOTS = Path(__file__).resolve().parents[1] / "screenshots"

if not os.path.exists(CHROMIUM):  # the test command installs it; say so plainly if it is absent
    pytest.skip(f"{CHROMIUM} is missing: run `apt-get install -y chromium`", allow_module_level=True)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    with streamlit_server(log_path=log) as (url, proc, _):
        yield url
        assert proc.poll() is None, f"server died; log:\n{log.read_text()[-3000:]}"


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class OutboundGuard:
    """Records every request the page makes; anything not on localhost is a failure."""

    def __init__(self):
        self.outside: list[str] = []

    def __call__(self, route):
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()


def on_messages(pg, handle) -> None:
    """Calls ``handle(msg)`` with every Streamlit message (a ``ForwardMsg``) that page ``pg``
    receives on its websocket, read from the socket itself rather than from the page."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    def frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = ForwardMsg()
            try:
                msg.ParseFromString(bytes(payload))
            except Exception:  # not one of Streamlit's messages
                return
            handle(msg)

    pg.on("websocket", lambda ws: ws.on("framereceived", frame))


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    guard = OutboundGuard()
    context.route("**/*", guard)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.guard = guard
    pg.js_errors = errors
    yield pg
    context.close()
    assert not guard.outside, f"requests left localhost: {guard.outside[:5]}"


# The app's own script state: 'initial', 'running', then 'notRunning' when a run has ended. (The
# status widget this used to read is not in the DOM while a script runs with the minimal toolbar,
# so a page could be measured half drawn: seen on /kv-cache, 2 of 5 steps at 0.4 s, all at 4.4 s.)
IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!document.querySelector('[data-testid="stMain"] h1, [data-testid="stMain"] [data-testid="stAlert"]') &&
           !!document.querySelector('[data-testid="stSidebar"] textarea') &&
           !!app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def wait_for_app(pg, timeout: float = 60_000) -> None:
    """Wait until the script run finished: title and shared controls drawn, nothing running.
    Checked twice with a pause between, so a run that is about to start is not missed."""
    for _ in range(2):
        pg.wait_for_function(IDLE_JS, timeout=timeout, polling=100)
        pg.wait_for_timeout(250)


def assert_no_exception(pg) -> None:
    assert pg.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in pg.inner_text("body")
