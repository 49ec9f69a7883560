"""The sidebar's model and text, drawn by the frame on every page (so they survive page
changes): the model picker, example sentences, the text box (cleaned as typed), and the notes
about how the model reads that text. A training-lab run this session opened is listed among the
models (``tfviz.ui.own_model``), and so is every Hugging Face folder the server found, labelled
with its family and size (``tfviz.ui.checkpoints``), opened only when picked.
"""
from __future__ import annotations

import streamlit as st

from tfviz.textinput import MAX_TYPED_CHARS, clean_text
from tfviz.ui import checkpoints, own_model
from tfviz.ui.cache import model_names, read_text, vocabulary_notice
from tfviz.ui.state import DEFAULT_MODEL, EXAMPLES


def _apply_example() -> None:
    choice = st.session_state.get("_example")
    if choice in EXAMPLES:
        st.session_state["text"] = EXAMPLES[choice]


def _clean_typed_text() -> None:
    text, note = clean_text(st.session_state.get("_typed", ""))
    st.session_state["_text_note"] = note
    if text:
        st.session_state["text"] = text


def _apply_own_example() -> None:
    o = own_model.own()
    choice = st.session_state.get("_own_example")
    if o is not None and choice in o.examples:
        st.session_state["text"] = o.examples[choice]


def sidebar_controls() -> None:
    """Model and text, on every page (the frame draws them, so they survive page changes).
    A training-lab run this session opened is listed too (``tfviz.ui.own_model``); choosing
    it puts one of its task's examples in the text box."""
    note = own_model.fit_text_to_model(DEFAULT_MODEL)
    names = model_names() + own_model.own_names()
    refused = checkpoints.settle(DEFAULT_MODEL, names)  # a picked folder: opened now, or why not
    opened = own_model.own()
    folders = checkpoints.discovery().models
    with st.sidebar:
        st.selectbox("Model", names, key="model", format_func=checkpoints.picker_label,
                     help="Small transformers we trained on our own generated text"
                          + (", models downloaded from Hugging Face that this server found" if folders else "")
                          + (", and the model of your training-lab run (yours alone)." if opened else "."))
        if note:
            st.info(note)
        if refused:
            st.warning(refused)
        checkpoints.chosen_note()
        checkpoints.folders_note()
        if own_model.chosen() is not None:
            st.selectbox("Examples (held out in training)", list(opened.examples), index=None,
                         key="_own_example", placeholder="Pick an example…", on_change=_apply_own_example)
        else:
            st.selectbox("Example sentences", list(EXAMPLES), index=None, key="_example",
                         placeholder="Pick an example…", on_change=_apply_example)
        st.session_state["_typed"] = st.session_state.get("text", "")
        st.text_area("Your text", key="_typed", on_change=_clean_typed_text,
                     max_chars=MAX_TYPED_CHARS,
                     help="Anything you like: the pages below show what the model does with it.")
        if st.session_state.get("_text_note"):
            st.info(st.session_state["_text_note"])
        for note in (read_text(st.session_state["model"], st.session_state["text"]).notice,
                     vocabulary_notice(st.session_state["model"], st.session_state["text"])):
            if note:
                st.caption(note)
        if own_model.chosen() is not None:
            st.caption(f"Your run's model reads {opened.bundle.tokenizer.known()}; every row "
                       "starts with <bos>, as in training.")
