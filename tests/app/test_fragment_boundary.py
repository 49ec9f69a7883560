"""Issue #13: an error inside a fragment meets the same boundary as an error in a page: the
learner sees the friendly message, the server's log gets the traceback, and Streamlit's own
rerun and stop signals pass through."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tfviz.ui.errors import FRIENDLY_ERROR

LESSONS = Path(__file__).resolve().parents[2] / "lessons"


def test_lessons_declare_fragments_with_the_boundary():
    for path in sorted(LESSONS.glob("*.py")):
        assert not re.search(r"@st\.fragment|st\.fragment\(", path.read_text()), (
            f"{path.name}: declare fragments with tfviz.ui.errors.safe_fragment")


def _fragment_app():
    import streamlit as st

    from tfviz.ui.errors import safe_fragment

    @safe_fragment
    def risky():
        runs = st.session_state["risky_runs"] = st.session_state.get("risky_runs", 0) + 1
        st.text("inside the fragment")
        st.button("again", key="again")
        if st.session_state.get("fail_on") == runs:
            raise ValueError("kaboom")

    @safe_fragment
    def control_flow():
        runs = st.session_state["runs"] = st.session_state.get("runs", 0) + 1
        if runs == 1:
            st.rerun()  # Streamlit's own signal: must not be taken for an error
        if st.session_state.get("stop"):
            st.stop()

    control_flow()
    risky()
    st.text("after the fragments")


@pytest.fixture
def boundary(monkeypatch, caplog):
    monkeypatch.delenv("TFVIZ_RAISE", raising=False)  # the app tests' conftest sets it
    caplog.set_level(logging.ERROR, logger="tfviz")

    def run(**state) -> AppTest:
        at = AppTest.from_function(_fragment_app, default_timeout=30)
        for key, value in state.items():
            at.session_state[key] = value
        at.run()
        return at

    return run


def _texts(at):
    return [t.value for t in at.text]


def _failures(caplog):
    return [r for r in caplog.records if r.name == "tfviz" and "failed" in r.getMessage()]


def test_an_error_in_a_fragment_gets_the_friendly_message_and_a_log_record(boundary, caplog):
    at = boundary(fail_on=1)
    assert not at.exception
    assert [e.value for e in at.error] == [FRIENDLY_ERROR]
    assert _texts(at) == ["inside the fragment", "after the fragments"]  # the page goes on
    (record,) = _failures(caplog)
    assert re.fullmatch(r"fragment '(_fragment_app\.<locals>\.)?risky' failed", record.getMessage())
    assert record.exc_info[0] is ValueError and str(record.exc_info[1]) == "kaboom"


def test_an_error_on_a_later_fragment_run(boundary, caplog):
    at = boundary(fail_on=2)
    assert not at.error and not _failures(caplog)
    at.button(key="again").click().run()  # reruns the fragment, the second time it runs
    assert at.session_state["risky_runs"] == 2 and not at.exception
    assert [e.value for e in at.error] == [FRIENDLY_ERROR]
    assert len(_failures(caplog)) == 1


def test_rerun_and_stop_pass_through_the_fragment_boundary(boundary, caplog):
    at = boundary()
    assert at.session_state["runs"] == 2  # st.rerun() inside the fragment did rerun
    assert not at.error and not at.exception and not _failures(caplog)
    assert _texts(at) == ["inside the fragment", "after the fragments"]
    at = boundary(stop=True)
    assert not at.error and not at.exception and not _failures(caplog)
    assert _texts(at) == []  # st.stop() inside the fragment stopped the script
