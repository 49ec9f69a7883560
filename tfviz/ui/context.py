"""What every lesson starts from: the model and text the learner chose in the sidebar."""
from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from tfviz.bundle import Bundle
from tfviz.config import ModelConfig
from tfviz.ui.cache import get_bundle


class LessonContext(NamedTuple):
    name: str  # the model's name, as the sidebar shows it
    text: str  # the learner's text, cleaned (tfviz.textinput.clean_text)
    bundle: Bundle  # shared by every learner: read it, never change it
    config: ModelConfig


def chosen() -> tuple[str, str]:
    """The sidebar's model name and the learner's text, without loading the model (the tour
    draws its first view from stored numbers: ``tfviz.ui.cache.get_tour_numbers``)."""
    return st.session_state["model"], st.session_state["text"]


def lesson_context() -> LessonContext:
    """The sidebar's model and text, with the model's shared bundle and config: the header of
    every lesson page, ``name, text, bundle, cfg = lesson_context()``."""
    name = st.session_state["model"]
    bundle = get_bundle(name)
    return LessonContext(name, st.session_state["text"], bundle, bundle.config)
