"""Cached loaders. Models are shared by every learner (cache_resource) and never edited;
traces are cached per input (cache_data), so each caller gets its own copy."""
from __future__ import annotations

import streamlit as st

import tfviz
from tfviz.bundle import Bundle, bundled_names
from tfviz.config import PRESET_NAMES, RunOptions
from tfviz.data.vocabulary import pattern_gap_notice, pattern_gaps, unknown_words, unknown_words_notice
from tfviz.textinput import truncation_notice
from tfviz.trace import Trace


@st.cache_resource(show_spinner="Loading the model…")
def get_bundle(name: str) -> Bundle:
    bundle = tfviz.load(name)
    for p in bundle.model.parameters():  # a shared model must never train by accident
        p.requires_grad_(False)
    return bundle


def model_names() -> list[str]:
    trained = bundled_names()
    return [n for n in PRESET_NAMES if n in trained] or list(PRESET_NAMES)


@st.cache_data(max_entries=512, show_spinner=False)
def get_trace(model: str, text: str, *, source: str | None = None, scale: bool | None = None,
              causal: bool | None = None, temperature: float = 1.0,
              ablate: tuple[tuple[int, int], ...] = (), top_k: int | None = None) -> Trace:
    options = RunOptions(scale=scale, causal=causal, temperature=temperature,
                         ablate_heads=frozenset(ablate), moe_top_k=top_k)
    return get_bundle(model).trace(text, source=source, options=options)


@st.cache_data(max_entries=512, show_spinner=False)
def length_notice(model: str, text: str) -> str | None:
    bundle = get_bundle(model)
    return truncation_notice(len(bundle.encode(text)), bundle.config.max_seq_len)


@st.cache_data(max_entries=512, show_spinner=False)
def vocabulary_notice(model: str, text: str) -> str | None:
    """Names the words of ``text`` the model never read in training (None if it has no record)."""
    words = get_bundle(model).manifest.get("vocabulary", {}).get("words")
    return unknown_words_notice(model, unknown_words(text, words)) if words else None


@st.cache_data(max_entries=512, show_spinner=False)
def coref_gap_notice(model: str, text: str) -> str | None:
    """Names the words of an "it" sentence that never filled that role in the model's training."""
    roles = get_bundle(model).manifest.get("vocabulary", {}).get("coref")
    return pattern_gap_notice(pattern_gaps(text, roles)) if roles else None
