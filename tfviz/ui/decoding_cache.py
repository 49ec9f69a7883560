"""Cached runs for lesson 14 (the LM head and decoding): generation, beam search, the per-token
loss and the LM head's check, per model and input. The shared models are only read; every
what-if (strategy, temperature, top-k, top-p, seed, beam width) is an argument here."""
from __future__ import annotations

import math

import streamlit as st

from tfviz.analysis.decoding import HeadReading, lm_head
from tfviz.decoding import BeamSearch, Generation, TokenLoss, beam_search_tree, generate, lm_loss_per_token
from tfviz.decoding.head import is_tied
from tfviz.ui.cache import get_bundle, get_trace, per_model


@per_model(st.cache_data(max_entries=256, show_spinner=False))
def generation(model: str, prompt_ids: tuple[int, ...], strategy: str, max_new_tokens: int,
               temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
               seed: int = 0) -> Generation:
    """``generate`` with the KV cache; a class sharing a prompt and settings shares the run."""
    return generate(get_bundle(model), prompt_ids, strategy=strategy, max_new_tokens=max_new_tokens,
                    temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)


@per_model(st.cache_data(max_entries=128, show_spinner=False))
def beam(model: str, prompt_ids: tuple[int, ...], beam_width: int, max_new_tokens: int) -> BeamSearch:
    return beam_search_tree(get_bundle(model), prompt_ids, beam_width, max_new_tokens)


def greedy_logprobs(g: Generation) -> list[float]:
    """log p of each token greedy chose (its steps were run at temperature 1, no filters)."""
    return [math.log(s.before[s.candidates.index(s.chosen)]) for s in g.steps]


@per_model(st.cache_data(max_entries=256, show_spinner=False))
def token_loss(model: str, text: str) -> TokenLoss:
    return lm_loss_per_token(get_bundle(model), text)


@per_model(st.cache_data(max_entries=256, show_spinner=False))
def head_reading(model: str, text: str) -> tuple[HeadReading, bool]:
    """The LM head on the trace of ``text``, and whether the model's head reads the embedding
    tensor itself (``tfviz.decoding.head.is_tied``)."""
    bundle = get_bundle(model)
    reading = lm_head(get_trace(model, text), bundle.weights(), bundle.token_strings)
    return reading, is_tied(bundle.model)
