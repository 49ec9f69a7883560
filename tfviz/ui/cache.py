"""Cached loaders. Models are shared by every learner (cache_resource) and never edited;
traces are cached per input (cache_data), so each caller gets its own copy."""
from __future__ import annotations

import streamlit as st

import tfviz
from tfviz.bundle import Bundle, Reading, bundled_names
from tfviz.config import PRESET_NAMES, RunOptions
from tfviz.data.vocabulary import pattern_gap_notice, pattern_gaps, unknown_words, unknown_words_notice
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
def read_text(model: str, text: str) -> Reading:
    """The ids ``model`` reads of ``text`` and the notice if it was cut: tokenised once, for
    the sidebar's notice and for every trace of that text."""
    return get_bundle(model).read(text)


def get_trace(model: str, text: str, options: RunOptions = RunOptions()) -> Trace:
    """The trace of ``text`` on ``model`` under the what-if ``options``; each caller gets its
    own copy. The options are made canonical first (a switch that repeats the model's own
    choice counts as unset), so equal runs share one cache entry."""
    o = options.canonical(get_bundle(model).config)
    return _trace(model, text, o.scale, o.causal, o.temperature, tuple(sorted(o.ablate_heads)),
                  o.moe_top_k)


@st.cache_data(max_entries=512, show_spinner=False)
def _trace(model: str, text: str, scale: bool | None, causal: bool | None, temperature: float,
           ablate: tuple[tuple[int, int], ...], top_k: int | None) -> Trace:
    options = RunOptions(scale=scale, causal=causal, temperature=temperature,
                         ablate_heads=frozenset(ablate), moe_top_k=top_k)
    return get_bundle(model).trace(read_text(model, text), options=options)


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
