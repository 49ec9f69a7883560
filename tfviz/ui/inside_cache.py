"""The "Looking inside" lessons' results, computed once per model and input and shared by every
learner (``per_model``: a large model's in a small cache of its own, a session's own model in
that session). A model or input the method cannot take comes back as the sentence that says why,
cached like a result, so a page shows it instead of a traceback."""
from __future__ import annotations

import streamlit as st

from tfviz.experiments import inside
from tfviz.ui.cache import get_bundle, get_trace, per_model



def _or_why(run):
    """``run()``, or the sentence of the ValueError it refuses with (cached like a result: the
    page prints it)."""
    try:
        return run()
    except ValueError as why:
        return str(why)


@per_model(st.cache_data(max_entries=128, show_spinner="Reading every layer…"))
def lens(model: str, text: str) -> inside.LensView | str:
    return _or_why(lambda: inside.lens_view(get_bundle(model), get_trace(model, text)))


@per_model(st.cache_data(max_entries=128, show_spinner="Splitting the logits…"))
def attribution(model: str, text: str) -> inside.AttributionView | str:
    return _or_why(lambda: inside.attribution_view(get_bundle(model), get_trace(model, text)))


@per_model(st.cache_data(max_entries=128, show_spinner="Running without the head…"))
def removed(model: str, text: str, layer: int, head: int, position: int):
    return _or_why(lambda: inside.head_removed(get_bundle(model), text, layer, head, position))


@per_model(st.cache_data(max_entries=64, show_spinner="Patching, piece by piece…"))
def patched(model: str, clean: str, corrupt: str) -> inside.PatchView | str:
    return _or_why(lambda: inside.patch_view(get_bundle(model), clean, corrupt))


@per_model(st.cache_data(max_entries=64, show_spinner="Running the repeated sequence…"))
def induction(model: str, length: int, seed: int) -> inside.InductionView | str:
    return _or_why(lambda: inside.induction_view(get_bundle(model), length, seed))
