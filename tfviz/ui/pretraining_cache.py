"""Cached runs for lesson 15 (BERT): a masking draw with the model's guesses, and the tally
of many draws. Inputs are small (a model name, ids, a seed), so a class shares them."""
from __future__ import annotations

import numpy as np
import streamlit as st

from tfviz.analysis.masking import special_ids
from tfviz.experiments.mlm import Guesses, MaskedSentence, draw_masks, guesses, masking_tally
from tfviz.ui.cache import get_bundle, per_model


@per_model(st.cache_data(max_entries=128, show_spinner=False))
def masked_guesses(model: str, ids: tuple[int, ...], seed: int, k: int = 5) -> tuple[MaskedSentence, Guesses]:
    """BERT's masking drawn on ``ids`` with ``seed``, and the model's top-k at every position."""
    bundle = get_bundle(model)
    tok = bundle.tokenizer
    drawn = draw_masks(ids, seed, mask_id=tok.mask_id, vocab_size=tok.vocab_size,
                       special_ids=special_ids(tok))
    return drawn, guesses(bundle.model, drawn.inputs, drawn.ids, k)


@st.cache_data(max_entries=64, show_spinner=False)
def tally(n_tokens: int, draws: int, seed: int, vocab_size: int) -> np.ndarray:
    """Counts per draw (chosen, masked, random, kept) of ``draws`` draws of n_tokens."""
    return masking_tally(n_tokens, draws, seed, vocab_size=vocab_size)
