"""How a page reads: readable for everyone, and a lesson's steps declared once, so that the
normal page and presenter view both come from the same ``with step(...)`` blocks.

``readable_frame`` draws what every page needs to be readable for everyone (WCAG 2.2 AA): the
rules of ``tfviz/ui/assets/readable.css`` (captions dark enough to read, 4.5:1 or more).
Presenter view draws its own larger, black-on-white rules on top.

    with step("1 · Measure it"):
        ...  # everything this step shows

On the normal page a step is its header and its content, as before. Presenter view
(``?present=1``, or the sidebar's "Presenter view" toggle) draws the same page for a projector:

- ``presenter_frame`` adds CSS (large type, no sidebar, black text, room for a slide bar) and
  a script that shows one slide per step *in the browser*, with no rerun; ← / → and the
  clicker's keys move between them, and the slide's number goes into the URL (``slide=3``).
  Both are files: ``tfviz/ui/assets/presenter.css`` and ``presenter.js``.
- The chart wrappers (``tfviz.ui.drawing``, ``tfviz.ui.views``, ``tfviz.ui.lab``) draw a
  presenter copy of every figure (``tfviz.viz.kit.presenter``), and ``tables.table`` draws tables
  as HTML (``st.dataframe`` paints on a canvas that CSS cannot enlarge).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

import streamlit as st

from tfviz.ui.browser_code import module_script, stylesheet

PARAM, SLIDE = "present", "slide"  # ?present=1&slide=3 (slides count from 1)
TOGGLE = "tfviz_presenter"  # the sidebar toggle's key (the script clicks it to leave)
KEEP = "_presenting"  # the session's choice, which a page switch's fresh query must not lose
STEP_PREFIX = "tfviz-step-"


def presenting() -> bool:
    """Whether this run draws presenter view: ``?present=1`` in the URL."""
    return st.query_params.get(PARAM) == "1"


def step_key(title: str) -> str:
    """The key of a step's container (Streamlit gives it the CSS class ``st-key-<key>``).

    >>> step_key("2 · What large scores do to softmax")
    'tfviz-step-2-what-large-scores-do-to-softmax'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:48] or "step"
    return f"{STEP_PREFIX}{slug}"


@contextmanager
def step(title: str):
    """One step of a lesson: its header, then whatever the ``with`` block draws."""
    with st.container(key=step_key(title)):
        st.header(title)
        yield


def _toggled() -> None:
    on = bool(st.session_state.get(TOGGLE))
    st.session_state[KEEP] = on
    if on:
        st.query_params[PARAM] = "1"
    else:
        for key in (PARAM, SLIDE):
            if key in st.query_params:
                del st.query_params[key]


def presenter_toggle() -> None:
    """The sidebar's "Presenter view" toggle, which sets or clears ``?present=1``.

    A link opened with ``?present=1`` starts in presenter view. Switching pages gives the
    new page a fresh query, so a session that chose presenter view puts the flag back."""
    state = st.session_state
    if presenting():
        state[KEEP] = True
    elif state.get(KEEP):
        st.query_params[PARAM] = "1"
    state[TOGGLE] = presenting()  # before the widget: the URL decides
    st.toggle("Presenter view", key=TOGGLE, on_change=_toggled,
              help="For a projector: large type, one step of the lesson per screen. "
                   "← / → or PageDown / PageUp move between steps; Esc leaves.")


def presenter_frame() -> None:
    """Presenter view's CSS and slide script, drawn by the frame on every run in presenter
    view (the CSS goes with the next run that is not; the script then shows the whole page)."""
    if not presenting():
        return
    st.html(stylesheet("presenter.css"))
    with st.sidebar:  # out of the lesson's own blocks (the sidebar is hidden, the script runs)
        st.html(module_script("presenter.js", {"prefix": STEP_PREFIX, "slide": SLIDE,
                                               "param": PARAM, "toggle": TOGGLE}),
                unsafe_allow_javascript=True)


def readable_frame() -> None:
    """The page's readable rules, as a style element: it takes no room on the page."""
    st.html(stylesheet("readable.css"))
