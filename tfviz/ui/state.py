"""Learner state shared by every page, mirrored in the URL so a teacher can share a view.

The values live in ``st.session_state`` under plain keys (``model``, ``text``). When a session
starts they are read from the URL's query parameters, checked, and anything unusable falls back
to a default with a short notice. After every run the model and
text are written back to the URL (a training-lab run's model as "my-run", never its id: a link
cannot open someone else's run); the view keys (layer, head, token...) are the browser's own:
a chart starts where a link points (``tfviz.ui.views.view_value``), and the session keeps none
of them; a link's layer or head that is not a small whole number only earns a notice here.
"""
from __future__ import annotations

import streamlit as st

from tfviz.lab.opened import RUN_LINK, is_run_name
from tfviz.textinput import MAX_URL_TEXT, clean_text

# The "it" sentences of the lecture notes, verbatim: seed 004 writes the animal one with a
# full stop; seed 001 writes a chicken pair, "tired" and "wide", without one. The animal's
# "wide" twin is ours: lessons 7 and 15 need the same nouns in both, one word apart.
# tests/test_examples_from_seeds.py checks the verbatim ones against the seeds.
NOTES_EXAMPLES = {
    "Coreference (tired)": "The animal didn't cross the street because it was too tired.",
    "The notes' chicken (tired)": "The chicken didn't cross the road because it was too tired",
    "The notes' chicken (wide)": "The chicken didn't cross the road because it was too wide",
}
EXAMPLES = {
    "Coreference (tired)": NOTES_EXAMPLES["Coreference (tired)"],
    "Coreference (wide)": "The animal didn't cross the street because it was too wide.",
    "Coreference, with the probe": "The animal didn't cross the street because it was too wide. "
                                   "It refers to the",
    "The notes' chicken (tired)": NOTES_EXAMPLES["The notes' chicken (tired)"],
    "The notes' chicken (wide)": NOTES_EXAMPLES["The notes' chicken (wide)"],
    "A short story": "The cat rested near the lake. The dog jumped over the boat.",  # all known words
    "Flying arrows": "flying arrows",
    "How are you": "how are you",
}
DEFAULT_TEXT = EXAMPLES["Coreference (tired)"]
DEFAULT_MODEL = "gpt-tiny"
_LINKED_VIEW_KEYS = ("layer", "head")  # checked for the notice; read by ui.views.view_value


def _int_param(raw: str | None, upper: int = 64) -> int | None:
    if raw is None:
        return None
    raw = raw.strip()
    if not raw.isdigit() or len(raw) > 3 or int(raw) >= upper:
        return -1
    return int(raw)


def init_state(model_names: list[str]) -> list[str]:
    """Fill session state from the URL once per session; returns notices for bad parameters."""
    notices: list[str] = []
    if st.session_state.get("_state_ready"):
        return notices
    params = st.query_params
    model = params.get("model", DEFAULT_MODEL)
    text, note = clean_text(params.get("text", DEFAULT_TEXT))
    if model == RUN_LINK or is_run_name(model):  # someone's training-lab run: theirs alone
        notices.append("The link was made on a model someone trained in the training lab; such a "
                       f"model stays in the browser session that trained it. Showing {DEFAULT_MODEL} "
                       "with the default sentence.")
        model, text, note = DEFAULT_MODEL, DEFAULT_TEXT, None  # that text was in the run's symbols
    elif model not in model_names:
        notices.append(f"The link asked for a model we don't have; showing {DEFAULT_MODEL}.")
        model = DEFAULT_MODEL
    st.session_state["model"] = model
    if note:
        notices.append(note)
    st.session_state["text"] = text or DEFAULT_TEXT
    for key in _LINKED_VIEW_KEYS:
        if _int_param(params.get(key)) == -1:
            notices.append(f"The link's {key} was not a small whole number; the charts open on "
                           "a view they have.")
    st.session_state["_state_ready"] = True
    return notices


def sync_url() -> None:
    """Write the shared state into the URL (text cut short so links stay shareable). The view
    keys (layer, head, token...) belong to the browser: see ``tfviz.ui.views``."""
    model = st.session_state.get("model", DEFAULT_MODEL)
    wanted = {
        "model": RUN_LINK if is_run_name(model) else model,  # a run's id never leaves its session
        "text": st.session_state.get("text", DEFAULT_TEXT)[:MAX_URL_TEXT],
    }
    if any(st.query_params.get(k) != v for k, v in wanted.items()):
        st.query_params.update(wanted)
