"""Cached runs of the decoding lessons, per model and input, shared by a class that asks the
same: lesson 14's generation, beam search, per-token loss and LM head check; lesson 13's
reverse-encdec answering a source; lesson 16's KV cache side by side and its cost over lengths;
lesson 18's decode times of MHA, GQA and MQA, and of the sidebar's grouped model beside its
multi-head twin, and the cache it keeps for the learner's text. The shared models are only read; every what-if
(strategy, temperature, top-k, top-p, seed, beam width, reusing K and V) is an argument here."""
from __future__ import annotations

import math

import streamlit as st

from tfviz.analysis.decoding import HeadReading, lm_head
from tfviz.analysis.gqa import VARIANTS
from tfviz.decoding import BeamSearch, Generation, TokenLoss, beam_search_tree, generate, lm_loss_per_token
from tfviz.decoding.head import is_tied
from tfviz.decoding.seq2seq import Translation, translate
from tfviz.experiments import kv_cache as kc
from tfviz.experiments import kv_cache_lengths as klen
from tfviz.experiments.gqa_decode import DecodeTiming, cache_of_text, decode_times, own_decode_times
from tfviz.ui.cache import get_bundle, get_trace, per_model, read_text

SEQ2SEQ_MODEL = "reverse-encdec"  # lesson 13 always shows this model, whatever the sidebar says


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


# ----- lesson 13: an encoder-decoder writes its answer --------------------------------------------

@st.cache_data(max_entries=256, show_spinner=False)
def translation(source: str, reuse_cross_kv: bool = True) -> Translation:
    """``translate`` of a checked source (``check_source(...).letters``) on reverse-encdec, with
    K and V of the memory reused at every step or projected again each time. A source is at most
    12 letters, so a class shares these."""
    return translate(get_bundle(SEQ2SEQ_MODEL), source, reuse_cross_kv=reuse_cross_kv)


# ----- lesson 16: the KV cache, timed -------------------------------------------------------------
# Timed runs: a class sharing a prompt shares one measurement, and a second measurement is a new
# ``run`` number (the page's "Measure again"). A longer context is a copy of the model
# (``kv_cache_lengths.stretched``).

@per_model(st.cache_data(max_entries=64, show_spinner="Generating with and without the cache…"))
def side_by_side(model: str, prompt_ids: tuple[int, ...], new_tokens: int, run: int = 0) -> kc.SideBySide:
    bundle = get_bundle(model)
    return kc.side_by_side(bundle, prompt_ids, new_tokens, bundle.facts.timing_repeats)


FILLER = "the dog didn't cross the bridge because it was too tired."  # what is timed: a
# step's time does not depend on the tokens, so every prompt shares one measurement


@per_model(st.cache_data(max_entries=32, show_spinner="Timing one step at each length…"))
def cost(model: str, top: int, run: int = 0) -> list[klen.LengthCost]:
    bundle = get_bundle(model)
    timed = klen.stretched(bundle.model, top)
    return klen.cost_over_lengths(timed, bundle.encode(FILLER), klen.lengths_up_to(top),
                                  bundle.facts.timing_repeats)


# ----- lesson 18: decode time of MHA, GQA and MQA -------------------------------------------------

@st.cache_resource(show_spinner="Timing MHA, GQA and MQA on this machine (once per server)…")
def decode_timing() -> DecodeTiming:
    """MHA, GQA and MQA timed with the KV cache, once per server: a timing is a property of the
    machine, not of the learner's text, so every learner sees the same measurement (and a page
    run waits for it only once). Frozen dataclasses, so sharing them is safe."""
    return decode_times({variant: get_bundle(model) for variant, model in VARIANTS})


@per_model(st.cache_resource(show_spinner="Timing this model and its multi-head twin (once per server)…"),
           copies=False)
def own_decode_timing(model: str) -> DecodeTiming:
    """The sidebar's grouped ``model`` and its full multi-head twin timed with the KV cache, once
    per server (``own_decode_times``: the twin is built for the timing and dropped after it)."""
    return own_decode_times(get_bundle(model))


@per_model(st.cache_data(max_entries=256, show_spinner=False))
def text_cache(model: str, text: str) -> tuple[int, int]:
    """The bytes of the KV cache ``model`` keeps after reading the learner's ``text``, counted
    from its tensors, and the tokens it holds."""
    return cache_of_text(get_bundle(model).model, read_text(model, text).ids)
