"""The training lab's link to Streamlit: the one runner the server shares, who is asking, the
runs a learner keeps for comparison (in their own session_state, never shared), and the lab
page's state: its widgets' defaults and checks, queueing a run, collecting a finished one.

The runner is a ``st.cache_resource``: one queue for every learner, so the cap on concurrent
trainings holds server-wide. It hands out only immutable views; nothing of it is edited here.
"""
from __future__ import annotations

import os
import uuid

import streamlit as st

from tfviz.lab.comparisons import COMPARISONS
from tfviz.lab.runs import LabRunner
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import TASK_NAMES, TASKS
from tfviz.lab.train import RunView
from tfviz.ui.drawing import vega_lite

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


# ----- the lab page's state: its widgets' keys, their defaults, what a finished job leaves ---------

#: LabSettings field -> the widget's session_state key
WIDGETS = {"n_layers": "lab_layers", "n_heads": "lab_heads", "d_model": "lab_d_model",
           "positional": "lab_pos", "scale": "lab_scale", "norm": "lab_norm", "residual": "lab_residual", "ffn": "lab_ffn",
           "n_experts": "lab_experts", "top_k": "lab_topk", "lr": "lab_lr", "steps": "lab_steps",
           "seed": "lab_seed"}
TASK_KEY, PENDING_KEY = "lab_task", "lab_pending"


def load_defaults() -> None:
    """Put the chosen task's default setting into the widgets."""
    s = LabSettings.default(st.session_state.get(TASK_KEY, TASK_NAMES[0]))
    for field, key in WIDGETS.items():
        st.session_state[key] = getattr(s, field)


def start_state() -> None:
    """On a first visit, or with a task the lab no longer has, start from the reverse task's
    defaults."""
    if "lab_layers" not in st.session_state or st.session_state.get(TASK_KEY) not in TASKS:
        if st.session_state.get(TASK_KEY) not in TASKS:
            st.session_state[TASK_KEY] = "reverse"
        load_defaults()


def whole(key: str, lo: int, hi: int, default: int) -> None:
    """Keep a slider's or number box's stored value a whole number in range (a forged or stale
    state would otherwise reach the widget)."""
    v = st.session_state.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        st.session_state[key] = default


def boolean(key: str, default: bool) -> None:
    """Keep a toggle's stored value a bool."""
    if not isinstance(st.session_state.get(key), bool):
        st.session_state[key] = default


def chosen_settings(task: str) -> tuple[LabSettings | None, str | None]:
    """The settings the widgets hold, or None and why they are not a setting the lab trains."""
    try:
        return LabSettings(task=task, **{f: st.session_state[k] for f, k in WIDGETS.items()}), None
    except ValueError as err:  # anything a widget or a stale state could hold
        return None, str(err)


def submit(runner: LabRunner, sid: str, settings, comparison: str | None = None):
    """Queue a training (one setting, or a ready-made comparison's runs) for this learner; a
    comparison's name is kept so that its sentence can be written when the runs are done."""
    job = runner.submit(sid, settings)
    if comparison is None:
        st.session_state.pop(PENDING_KEY, None)
    else:
        st.session_state[PENDING_KEY] = comparison
    return job


def collect(done) -> None:
    """A finished job's runs join the comparison (once); a ready-made one gets its sentence."""
    if st.session_state.get(COLLECTED_KEY) == done.id:
        return
    st.session_state[COLLECTED_KEY] = done.id
    keep(list(done.runs))
    pending = st.session_state.pop(PENDING_KEY, None)
    if pending in COMPARISONS:
        st.session_state[SUMMARY_KEY] = (COMPARISONS[pending].title,
                                         COMPARISONS[pending].summarize(done.runs))


def forget_runs() -> None:
    """Drop the learner's kept runs and the comparison's sentence."""
    st.session_state[RUNS_KEY] = []
    st.session_state.pop(SUMMARY_KEY, None)


def kept_runs() -> list[RunView]:
    return list(st.session_state.get(RUNS_KEY, []))


def keep(runs: list[RunView]) -> None:
    """Add finished runs to the learner's comparison, keeping the newest ``KEPT``."""
    fresh = [r for r in runs if r.checkpoints]
    st.session_state[RUNS_KEY] = (kept_runs() + fresh)[-KEPT:]


def live_chart(spec: dict) -> None:
    """Draw a Vega-Lite chart that changes every second (the live curves): not cached, since
    each second's is new."""
    vega_lite(spec)  # presenter view draws a copy in large type
