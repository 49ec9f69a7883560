"""Lesson 18's measured decode time, once per server: a timing is a property of the machine,
not of the learner's text, so every learner sees the same measurement (and a page run waits for
it only once). The shared models are only read."""
from __future__ import annotations

import streamlit as st

from tfviz.analysis.gqa import VARIANTS
from tfviz.experiments.gqa_decode import DecodeTiming, decode_times
from tfviz.ui.cache import get_bundle


@st.cache_resource(show_spinner="Timing MHA, GQA and MQA on this machine (once per server)…")
def decode_timing() -> DecodeTiming:
    """MHA, GQA and MQA timed with the KV cache; frozen dataclasses, so sharing them is safe."""
    return decode_times({variant: get_bundle(model) for variant, model in VARIANTS})
