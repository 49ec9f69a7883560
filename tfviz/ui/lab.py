"""The training lab's link to Streamlit: the one runner the server shares, who is asking, and
the runs a learner keeps for comparison (in their own session_state, never shared).

The runner is a ``st.cache_resource``: one queue for every learner, so the cap on concurrent
trainings holds server-wide. It hands out only immutable views; nothing of it is edited here.
"""
from __future__ import annotations

import os
import uuid

import streamlit as st

from tfviz.lab.runs import LabRunner
from tfviz.lab.train import RunView
from tfviz.ui.widgets import vega_lite

KEPT = 4  # runs kept side by side per learner
RUNS_KEY, SUMMARY_KEY, COLLECTED_KEY, SESSION_KEY = "lab_runs", "lab_summary", "lab_collected", "_lab_session"


@st.cache_resource(show_spinner=False)
def lab_runner() -> LabRunner:
    """The server's training queue; TFVIZ_LAB_MAX_RUNNING changes its cap (default 2)."""
    return LabRunner(max_running=max(1, int(os.environ.get("TFVIZ_LAB_MAX_RUNNING", "2"))))


def session_id() -> str:
    """This learner's key in the runner: one training at a time each.

    Streamlit's session id, plus a random part kept in session_state: a fresh session state is
    a fresh learner even where the id repeats (AppTest gives every test the same one).
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if SESSION_KEY not in st.session_state:
        ctx = get_script_run_ctx()
        st.session_state[SESSION_KEY] = f"{ctx.session_id if ctx else 'none'}:{uuid.uuid4().hex[:12]}"
    return st.session_state[SESSION_KEY]


def _alive(key: str) -> bool:
    from streamlit.runtime import Runtime

    return Runtime.instance().is_active_session(key.rsplit(":", 1)[0])


def tidy(runner: LabRunner) -> None:
    """Forget the runs of sessions that have closed (their memory goes with them)."""
    from streamlit.runtime import Runtime

    runner.prune(_alive if Runtime.exists() else None)


def kept_runs() -> list[RunView]:
    return list(st.session_state.get(RUNS_KEY, []))


def keep(runs: list[RunView]) -> None:
    """Add finished runs to the learner's comparison, keeping the newest ``KEPT``."""
    fresh = [r for r in runs if r.checkpoints]
    st.session_state[RUNS_KEY] = (kept_runs() + fresh)[-KEPT:]


def live_chart(chart) -> None:
    """Draw an altair chart that changes every second (live curves): no cache, no validation."""
    vega_lite(chart.to_dict(validate=False))  # presenter view draws a copy in large type
