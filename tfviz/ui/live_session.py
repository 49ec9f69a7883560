"""What every part of a live class on the pages shares: the store of sessions that every server
process opens at the same URL (``tfviz.classroom.store``: ``TFVIZ_STORE``, else a SQLite file), the keys under which this browser remembers its class in
``st.session_state``, and who is asking (for the store's rate limits).

Used by the sidebar (``tfviz.ui.live``), the teacher's push (``tfviz.ui.live_push``) and the
teacher's page (``tfviz.ui.live_teacher``).
"""
from __future__ import annotations

import streamlit as st

from tfviz.classroom.live import LiveStore
from tfviz.classroom.store import open_store

STUDENT = "_live_student"  # {"code", "following", "applied"}: the class this browser follows
TEACHER = "_live_teacher"  # {"code", "key"}: the session this browser drives
NOTICE = "_live_notice"  # the last friendly message about a live session
RECONNECTING = "_live_reconnecting"  # the store did not answer the teacher's last push
FORGET = "_live_forget"  # the browser should forget the class it taught (tfviz.ui.live_push)
TEACHER_PAGE = "teacher"  # the teacher's own page is never pushed: students stay where they are
LIVE_VIEW_KEYS = ("layer", "head", "step")  # the view keys a class follows (LiveState)


@st.cache_resource(show_spinner=False)
def live_store() -> LiveStore:
    """This process's handle on the live-class store. Shared by every browser on purpose; it is
    thread-safe, holds no state of its own (the classes live in the store, which every replica
    shares) and only changes the store through its own methods."""
    return open_store()


def client() -> str:
    """Who is asking, for the store's rate limits: this browser session. (Not its address:
    behind a proxy a whole class shares one, and a few typos would lock them all out.)"""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    return f"session:{ctx.session_id if ctx else 'none'}"


def fragment_run() -> bool:
    """True in a run of fragments alone (the rest of the page is not being drawn)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)
