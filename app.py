"""tfviz: the frame around every lesson (page config, navigation, shared controls, errors)."""
from __future__ import annotations

import os

import streamlit as st

# Only what the navigation needs comes first (none of these imports numpy): the rest is
# imported below, once the navigation has gone to the browser.
from tfviz.ui.errors import remember_page, report_failure
from tfviz.ui.lessons import HOME, ROOT, available
from tfviz.ui.runlog import timed_run
from tfviz.ui.server_threads import one_thread_per_op
from tfviz.ui.warmup import page_ran

one_thread_per_op()  # also when served cold by `streamlit run app.py`
st.set_page_config(page_title="tfviz · see a transformer think", page_icon=str(ROOT / "assets" / "icon.png"), layout="wide")

sections: dict[str, list] = {}
files: dict[str, str] = {}  # URL path -> the lesson's file, as st.switch_page takes it
for lesson in available():
    is_home = lesson.file == HOME
    page = st.Page(str(ROOT / "lessons" / lesson.file), title=lesson.title,
                   url_path=None if is_home else lesson.url, icon=lesson.icon or None,
                   default=is_home)
    sections.setdefault(lesson.section, []).append(page)
    files[page.url_path] = f"lessons/{lesson.file}"
current = st.navigation(sections, expanded=True)  # every lesson visible, no 'view more'
remember_page(files[current.url_path])  # a stale timed fragment's run comes back here

# The rest of the frame, imported after the navigation is sent: on a fresh server these
# imports (numpy and most of tfviz.ui) take a noticeable moment, and meanwhile the browser draws
# the sidebar's lesson links instead of waiting for them, so the first page is interactive
# sooner (``python -m bench.first_page_ab``; bench/history/browser.md).
from tfviz.ui.cache import model_names  # noqa: E402
from tfviz.ui.live import live_sidebar  # noqa: E402
from tfviz.ui.present import presenter_frame, presenter_toggle, readable_frame  # noqa: E402
from tfviz.ui.sidebar import sidebar_controls  # noqa: E402
from tfviz.ui.state import init_state, sync_url  # noqa: E402
from tfviz.ui.views import view_sync  # noqa: E402

for notice in init_state(model_names()):
    st.toast(notice)
# Follow the teacher (tfviz/ui/live.py): before the sidebar's widgets, so that a student's app
# can take the teacher's text and model in the same run.
live_sidebar(current.url_path or "home")
sidebar_controls()
with st.sidebar:
    presenter_toggle()  # ?present=1: large type, one step per screen (tfviz/ui/present.py)
    view_sync()  # instant views: keeps the URL's layer, head, token... in step with the charts
readable_frame()  # captions dark enough to read (WCAG 2.2 AA), on every page
presenter_frame()  # only in presenter view: its CSS and the script that shows one step at a time

# The error boundary; fragments rerun without passing through here and carry their own
# (lessons declare them with tfviz.ui.errors.safe_fragment). timed_run logs only with
# TFVIZ_LOG_RUNS=1 (the load benchmark).
with timed_run(current.url_path or "home"), report_failure("page %r failed", current.url_path):
    if os.environ.get("TFVIZ_FAULT_PAGE") == current.url_path:  # lets tests force a failure
        raise RuntimeError("forced failure for testing")
    current.run()
sync_url()
remember_page(files[current.url_path])  # with the query this run ended on
page_ran()  # the server's warm-up does the rest of its work now (tfviz.ui.warmup)
