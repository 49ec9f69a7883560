"""The teacher's side of following, in the sidebar: where the teacher is (page, sentence,
model, and the charts' layer, head and step), pushed to the class's session.

The frame calls ``tfviz.ui.live.live_sidebar`` on every run; for a teacher it draws
:func:`teacher_beacon`, which pushes the page, sentence and model. The view's layer, head and
step move in the browser without a run (``tfviz.ui.views``), and Streamlit's reruns carry the
query string the page was opened with, not the one the view script rewrote: so a small
component in the teacher's sidebar watches the charts' view and reports each change to the
beacon, which pushes it (one short fragment run per move, nothing on a timer).
"""
from __future__ import annotations

import streamlit as st

from tfviz.classroom.codes import format_code, parse_code
from tfviz.classroom.live import IDLE_HOURS, LiveError, StoreDown
from tfviz.ui import own_model
from tfviz.ui.browser_code import asset, module_script
from tfviz.ui.errors import safe_fragment
from tfviz.ui.live_session import (FORGET, LIVE_VIEW_KEYS, NOTICE, RECONNECTING, TEACHER,
                                   TEACHER_PAGE, fragment_run, live_store)
from tfviz.ui.views import view_value


def _as_index(raw: object) -> int | None:
    text = str(raw).strip() if isinstance(raw, (str, int)) and not isinstance(raw, bool) else ""
    return min(int(text), 63) if text.isdigit() and len(text) <= 4 else None


def teacher_view(url: str, seen: dict | None = None) -> dict:
    """Where this teacher is: page, sentence, model, and the view keys: as the teacher's
    browser last reported them (``seen``), else those of the URL this run started with."""
    state = {k: view_value(k, 63) for k in LIVE_VIEW_KEYS}
    for k, raw in (seen or {}).items():
        if k in LIVE_VIEW_KEYS and _as_index(raw) is not None:
            state[k] = _as_index(raw)
    if url != TEACHER_PAGE:
        state["lesson"] = url
    # A run of the teacher's own (training lab) exists only in the teacher's session: the class
    # keeps the last shared model and its sentence rather than the run's task text on gpt-tiny.
    if own_model.chosen() is not None:
        return state
    if st.session_state.get("text"):
        state["text"] = st.session_state["text"]
    if st.session_state.get("model"):
        state["model"] = st.session_state["model"]
    return state


# The teacher's class is remembered in a cookie of the teacher's browser: if the replica that
# served the teacher dies, or the server restarts, the page reconnects as a new session, and
# that session finds the class (and its key) in the cookie its websocket request carries. Only
# a teacher's browser gets it; it lives as long as an idle class, and is cleared at the end.
COOKIE = "tfviz_teacher"


def _cookie_script(value: str, max_age: int) -> str:
    """The HTML that sets (or, with max_age 0, clears) the cookie: assets/teacher_cookie.js."""
    return module_script("teacher_cookie.js", {"name": COOKIE, "value": value, "maxAge": max_age})


def remember_class(teaching: dict) -> None:
    """Keep (code, key) in the teacher's browser (the script runs once, when it appears)."""
    st.html(_cookie_script(f"{teaching['code']}.{teaching['key']}", int(IDLE_HOURS * 3600)),
            unsafe_allow_javascript=True)


def forget_class() -> None:
    st.html(_cookie_script("", 0), unsafe_allow_javascript=True)


def recall_class() -> dict | None:
    """The class this browser taught before its session was lost, if its key still drives it."""
    raw = st.context.cookies.get(COOKIE, "") if hasattr(st, "context") else ""
    code, _, key = str(raw).partition(".")
    if not (parse_code(code) and key):
        return None
    try:
        live_store().summary(code, key)  # checks the key, and that the class is still live
    except StoreDown:
        return None  # not now; the next session tries again
    except LiveError:
        st.session_state[FORGET] = True  # ended, expired, or not this key: clear the cookie
        return None
    return {"code": parse_code(code), "key": key}


def _push(url: str, seen: dict | None = None) -> None:
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return
    try:
        live_store().update(teaching["code"], teaching["key"], **teacher_view(url, seen))
        st.session_state[RECONNECTING] = False
    except StoreDown:  # the class goes on; the next move or run pushes again
        st.session_state[RECONNECTING] = True
    except LiveError as err:
        st.session_state[TEACHER] = None
        st.session_state[NOTICE] = str(err)
        st.session_state[FORGET] = True
        if fragment_run():
            st.rerun(scope="app")  # the sidebar shows why, and the join box again


# The teacher's browser reports its charts' view, when it differs from what the server knows
# (tfviz/ui/assets/view_report.js): one run of the teacher's fragment per move.
_view_report = st.components.v2.component("tfviz_live_view_report",
                                          js=asset("view_report.js"))


@safe_fragment
def teacher_beacon(url: str) -> None:
    """Pushes on every full run (page, sentence, model) and on every view move the browser
    reports (a run of this fragment alone)."""
    seen = st.session_state.get("_live_view_seen")
    _push(url, seen)
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return
    known = {k: str(v) for k, v in teacher_view(url, seen).items() if k in LIVE_VIEW_KEYS}
    _view_report(key="_live_view_report", data={"keys": list(LIVE_VIEW_KEYS), "known": known},
                 on_view_change=_view_moved)  # _view_moved reads what it reports
    remember_class(teaching)
    if st.session_state.get(RECONNECTING):
        st.warning("The class is reconnecting… Your students stay where they were until it is "
                   "back; your next move is sent then.")
    st.caption(f"Live class **{format_code(teaching['code'])}**: your students follow this page.")


def _view_moved() -> None:
    state = st.session_state.get("_live_view_report") or {}
    view = state.get("view") if hasattr(state, "get") else None
    if isinstance(view, dict):
        st.session_state["_live_view_seen"] = {k: v for k, v in view.items() if k in LIVE_VIEW_KEYS}
