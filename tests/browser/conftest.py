"""Browser tests: Debian chromium driven by playwright against a real streamlit server."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.serve import CHROMIUM, CHROMIUM_ARGS, is_local, streamlit_server

SHOTS = Path(__file__).resolve().parents[1] / "screenshots"
# A server log's lines that say a run failed: a traceback, or the error boundary's own line.
FAILED = re.compile(r"Traceback|(page|fragment) '[^']*' failed")

if not os.path.exists(CHROMIUM):  # the test command installs it; say so plainly if it is absent
    pytest.skip(f"{CHROMIUM} is missing: run `apt-get install -y chromium`", allow_module_level=True)


@pytest.fixture(scope="session")
def logged_server(tmp_path_factory):
    """(url, log file) of this test process's one streamlit server, shared by every browser
    module that needs no environment of its own: a server start and its first, cold page runs
    are paid once per worker. Each test opens its pages in fresh browser contexts, so each gets
    sessions of its own; a test that reads the log reads from where its own test began."""
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    # lesson 15's fine-tune, pressed in test_training_lab.py, trains 20 steps a way, not 400
    with streamlit_server(env={"TFVIZ_FINETUNE_STEPS": "20"}, log_path=log) as (url, proc, _):
        yield url, log
        assert proc.poll() is None, f"server died; log:\n{log.read_text()[-3000:]}"


@pytest.fixture(scope="session")
def server(logged_server):
    return logged_server[0]


@pytest.fixture(scope="session")
def folder_server(tmp_path_factory):
    """(url, gpt2's parameter count) of this test process's one server whose ``TFVIZ_MODELS``
    holds four random Hugging Face folders, made by transformers, and whose Hugging Face cache is
    empty: "gpt2" and "bert" (2 layers × 2 heads, d = 32: test_checkpoint_models.py),
    "llama-random" (3 layers, 6 query heads over 2 K/V heads, d = 48, untied, Llama 3's
    tokenizer: test_modern_folder_pages.py) and "mixtral-random" (2 layers, 4 experts, top-2:
    test_moe_folder_page.py). One server for the three modules, as ``logged_server`` is one for
    the bundled models: making the four folders takes seconds, and each server start pays its
    warm-up and its cold first pages again."""
    pytest.importorskip("transformers")
    from tests.support.bert_folders import make_checkpoint as make_bert
    from tests.support.llama_folders import make_checkpoint as make_llama
    from tests.support.moe_folders import make_moe_checkpoint
    from tests.unit.hf.test_gpt2 import make_checkpoint as make_gpt2

    models = tmp_path_factory.mktemp("models")
    n = make_gpt2(models / "gpt2").num_parameters()
    make_bert(models / "bert")
    make_llama(models / "llama-random", "llama", tokenizer="llama3", layers=3, heads=6, kv_heads=2,
               d=48, d_ff=96, positions=128, tie_word_embeddings=False,
               rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    make_moe_checkpoint(models / "mixtral-random", "mixtral", experts=4, top_k=2, heads=4, kv_heads=2)
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = {"TFVIZ_MODELS": str(models), "HF_HUB_CACHE": str(tmp_path_factory.mktemp("empty-hub"))}
    with streamlit_server(env=env, log_path=log) as (url, proc, _):
        yield url, n
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


def on_messages(pg, handle, *, sent: bool = False) -> None:
    """Calls ``handle(msg)`` with every Streamlit message that page ``pg`` receives on its
    websocket (a ``ForwardMsg``), or with ``sent`` every one it sends (a ``BackMsg``), read from
    the socket itself rather than from the page."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    kind = BackMsg if sent else ForwardMsg

    def frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = kind()
            try:
                msg.ParseFromString(bytes(payload))
            except Exception:  # not one of Streamlit's messages
                return
            handle(msg)

    pg.on("websocket", lambda ws: ws.on("framesent" if sent else "framereceived", frame))


class Runs:
    """The script runs of one page, read off its websocket in the order they happened: each run
    the browser asked for (a ``rerun_script`` BackMsg it sent), each run the server started, and
    how each ended. Attach it before the page opens.

    ``idle()`` is the server's own word that nothing is running or about to run for this
    session: the last event is a run that ended (not one stopped by ``st.rerun``, which starts
    the next run at once), and the browser has asked for nothing since. Waiting on it replaces
    a fixed pause "in case a run is about to start": a run can only start because the browser
    asked for it (seen here as it is sent) or because a run asked for the next (seen here as
    "stopped for rerun"). Timed fragments (``run_every``) are the one other source; pages that
    have them must not use this (none of a learner's pages without a live class has one,
    test_live_class.py checks that)."""

    ENDED = {"finished", "fragment finished", "compile error"}

    def __init__(self, pg):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.events: list[str] = []
        self._ends = {ForwardMsg.FINISHED_SUCCESSFULLY: "finished",
                      ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment finished",
                      ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error",
                      ForwardMsg.FINISHED_EARLY_FOR_RERUN: "stopped for rerun"}

        def received(msg) -> None:
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.events.append("started")
            elif kind == "script_finished":
                self.events.append(self._ends.get(msg.script_finished, "finished"))

        def request(msg) -> None:
            if msg.WhichOneof("type") == "rerun_script":
                self.events.append("asked")

        on_messages(pg, received)
        on_messages(pg, request, sent=True)

    def ended(self) -> int:
        """How many runs have ended so far (a run stopped for the next one included)."""
        return sum(e in self.ENDED or e == "stopped for rerun" for e in self.events)

    def asked(self) -> int:
        return self.events.count("asked")

    def idle(self) -> bool:
        return bool(self.events) and self.events[-1] in self.ENDED


SCRIPT_STATE_JS = "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"


def wait_idle(pg, runs: Runs, after: int = 0, timeout: float = 90.0) -> bool:
    """Until more than ``after`` runs have ended, the server says this session is idle
    (``Runs.idle``) and the page has drawn that (its run state is 'notRunning', which React
    sets after every element the runs sent); False on timeout. Polls every 50 ms: playwright's
    sync API delivers websocket frames only while it waits."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if runs.ended() > after and runs.idle() and pg.evaluate(SCRIPT_STATE_JS) == "notRunning":
            return True
        pg.wait_for_timeout(50)
    return False


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
