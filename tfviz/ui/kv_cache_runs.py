"""Cached runs for lesson 16 (the KV cache): the side-by-side generation and the cost over
lengths, per model, prompt and settings. They are timed runs, so a class sharing a prompt shares
one measurement (a second measurement is a new ``run`` number: the page's "Measure again"). The
shared models are only read; a longer context is a copy (``kv_cache_lengths.stretched``)."""
from __future__ import annotations

import streamlit as st

from tfviz.experiments import kv_cache as kc
from tfviz.experiments import kv_cache_lengths as klen
from tfviz.ui.cache import get_bundle, per_model


@per_model(st.cache_data(max_entries=64, show_spinner="Generating with and without the cache…"))
def side_by_side(model: str, prompt_ids: tuple[int, ...], new_tokens: int, run: int = 0) -> kc.SideBySide:
    return kc.side_by_side(get_bundle(model), prompt_ids, new_tokens)


FILLER = "the dog didn't cross the bridge because it was too tired."  # what is timed: a
# step's time does not depend on the tokens, so every prompt shares one measurement


@per_model(st.cache_data(max_entries=32, show_spinner="Timing one step at each length…"))
def cost(model: str, top: int, run: int = 0) -> list[klen.LengthCost]:
    bundle = get_bundle(model)
    timed = klen.stretched(bundle.model, top)
    return klen.cost_over_lengths(timed, bundle.encode(FILLER), klen.lengths_up_to(top))
