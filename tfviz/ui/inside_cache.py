"""The "Looking inside" lessons' results, computed once per model and input and shared by every
learner (``per_model``: a large model's in a small cache of its own, a session's own model in
that session). A model or input the method cannot take comes back as the sentence that says why,
cached like a result, so a page shows it instead of a traceback."""
from __future__ import annotations

import streamlit as st

from tfviz.experiments import inside
from tfviz.ui.cache import get_bundle, get_trace, per_model


@per_model(st.cache_data(max_entries=128, show_spinner="Reading every layer…"))
def lens(model: str, text: str) -> inside.LensView | str:
    try:
        return inside.lens_view(get_bundle(model), get_trace(model, text))
    except ValueError as why:
        return str(why)


@per_model(st.cache_data(max_entries=128, show_spinner="Splitting the logits…"))
def attribution(model: str, text: str) -> inside.AttributionView | str:
    try:
        return inside.attribution_view(get_bundle(model), get_trace(model, text))
    except ValueError as why:
        return str(why)


@per_model(st.cache_data(max_entries=128, show_spinner="Running without the head…"))
def removed(model: str, text: str, layer: int, head: int, position: int):
    try:
        return inside.head_removed(get_bundle(model), text, layer, head, position)
    except ValueError as why:
        return str(why)


@per_model(st.cache_data(max_entries=64, show_spinner="Patching, piece by piece…"))
def patched(model: str, clean: str, corrupt: str) -> inside.PatchView | str:
    try:
        return inside.patch_view(get_bundle(model), clean, corrupt)
    except ValueError as why:
        return str(why)


@per_model(st.cache_data(max_entries=64, show_spinner="Running the repeated sequence…"))
def induction(model: str, length: int, seed: int) -> inside.InductionView | str:
    try:
        return inside.induction_view(get_bundle(model), length, seed)
    except ValueError as why:
        return str(why)
