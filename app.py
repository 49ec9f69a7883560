"""tfviz: the frame around every lesson (page config, navigation, shared controls, errors)."""
from __future__ import annotations

import logging
import os

import streamlit as st

from tfviz.ui.cache import model_names
from tfviz.ui.lessons import HOME, ROOT, available
from tfviz.ui.runlog import timed_run
from tfviz.ui.state import init_state, sync_url
from tfviz.ui.widgets import sidebar_controls

log = logging.getLogger("tfviz")

st.set_page_config(page_title="tfviz · see a transformer think", page_icon=str(ROOT / "assets" / "icon.png"), layout="wide")

sections: dict[str, list] = {}
for lesson in available():
    is_home = lesson.file == HOME
    page = st.Page(str(ROOT / "lessons" / lesson.file), title=lesson.title,
                   url_path=None if is_home else lesson.url, icon=lesson.icon or None,
                   default=is_home)
    sections.setdefault(lesson.section, []).append(page)
current = st.navigation(sections, expanded=True)  # every lesson visible, no 'view more'

for notice in init_state(model_names()):
    st.toast(notice)
sidebar_controls()

with timed_run(current.url_path or "home"):  # only with TFVIZ_LOG_RUNS=1 (load benchmark)
    try:
        if os.environ.get("TFVIZ_FAULT_PAGE") == current.url_path:  # lets tests force a failure
            raise RuntimeError("forced failure for testing")
        current.run()
    except Exception:  # Streamlit's own rerun/stop signals are BaseExceptions and pass through.
        if os.environ.get("TFVIZ_RAISE"):
            raise
        log.exception("page %r failed", current.url_path)
        st.error("Sorry, something went wrong while drawing this page. Try another sentence or "
                 "setting; the other pages keep working. (The details went to the server's log.)")
sync_url()
