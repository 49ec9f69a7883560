"""Cached runs for lesson 13: reverse-encdec answering one source, with K and V of the memory
reused at every step or projected again each time. A source is at most 12 letters, so a class
shares these."""
from __future__ import annotations

import streamlit as st

from tfviz.decoding.seq2seq import Translation, translate
from tfviz.ui.cache import get_bundle

MODEL = "reverse-encdec"  # lesson 13 always shows this model, whatever the sidebar says


@st.cache_data(max_entries=256, show_spinner=False)
def translation(source: str, reuse_cross_kv: bool = True) -> Translation:
    """``translate`` of a checked source (``check_source(...).letters``) on reverse-encdec."""
    return translate(get_bundle(MODEL), source, reuse_cross_kv=reuse_cross_kv)
