"""Cached what-ifs that run a model (tfviz.experiments), for the lessons that show them.

Their inputs are small (a model name, a text, a position), so a class that looks at the same
sentence shares one run. Models built here (a copy without positions, the two wirings) are
fresh objects kept by ``cache_resource`` and, like the shared models, never edited.
"""
from __future__ import annotations

import streamlit as st

from tfviz.analysis import layernorm as lna
from tfviz.experiments import long_sequences as ls
from tfviz.analysis import moe as ma
from tfviz.config import RunOptions
from tfviz.data.lexicon import CLASSES, word_class
from tfviz.experiments import wiring
from tfviz.experiments.masked import masked_trace
from tfviz.experiments.order import positionless_model
from tfviz.experiments.padding import PaddingDemo, padding_demo
from tfviz.experiments.peeking import PeekResult, peek_experiment
from tfviz.trace import Trace
from tfviz.bundle import Reading
from tfviz.ui import checkpoints
from tfviz.ui.cache import get_bundle, get_trace, per_model, read_text


@per_model(st.cache_data(max_entries=64, show_spinner=False))
def masked(model: str, text: str, position: int) -> Trace:
    """The trace of ``text`` with the token at ``position`` hidden behind [MASK] (lesson 1)."""
    return masked_trace(get_bundle(model), text, position)


@per_model(st.cache_resource(show_spinner="Building a model without positions…"), copies=False)
def positionless(model: str):
    """A separate fresh model per preset; the shared model is never touched (lesson 3)."""
    return positionless_model(get_bundle(model).config)


@per_model(st.cache_data(max_entries=128, show_spinner=False))  # a class shares the default sentences
def padded_batch(model: str, sentences: tuple[str, ...]) -> PaddingDemo:
    """The sentences run as one padded batch, and each alone (lesson 8)."""
    bundle = get_bundle(model)
    cfg = bundle.config
    id_lists = [bundle.encode(s)[:cfg.max_seq_len] or [cfg.pad_id] for s in sentences]
    return padding_demo(bundle.model, id_lists, [bundle.token_strings(ids) for ids in id_lists],
                        pad_id=cfg.pad_id)


@per_model(st.cache_data(max_entries=256, show_spinner=False))
def peek(model: str, ids: tuple[int, ...], pos: int, new_id: int, no_mask: bool,
         enc_ids: tuple[int, ...] | None) -> PeekResult:
    """Change the token at ``pos`` and compare every position's logits (lesson 8)."""
    return peek_experiment(get_bundle(model).model, list(ids), pos, new_id,
                           causal=False if no_mask else None, enc_ids=enc_ids)


@per_model(st.cache_resource(show_spinner="Building the two wirings…"), copies=False)
def wiring_variants(model: str) -> dict:
    """Fresh post-LN and pre-LN twins of a model (built once per model name, never edited)."""
    return wiring.wiring_variants(get_bundle(model))


@per_model(st.cache_data(max_entries=128, show_spinner=False))
def twin_norms(model: str, text: str) -> dict:
    """Residual-stream sizes of the two fresh twins on this text (two extra forward passes).

    A model folder's twins are as big as the model (two GPT-2 smalls: about 1 GB), so they are
    not kept: each is built, read and let go before the next, once per text."""
    if checkpoints.found(model) is None:
        return {k: lna.residual_norms(twin.trace(text)) for k, twin in wiring_variants(model).items()}
    bundle, norms = get_bundle(model), {}
    with st.spinner("Building two fresh twins of this model's size, one after the other…"):
        for label, config in wiring.variant_configs(bundle.config).items():
            twin = wiring.fresh_twin(bundle, label, config)
            norms[label] = lna.residual_norms(twin.trace(text))
            del twin  # the next twin is built only after this one is gone
    return norms


@per_model(st.cache_data(show_spinner="Routing the sample sentences…"))
def class_tables(model: str, top_k: int) -> list:
    """Token class × first-choice expert over the sample sentences, routed with ``top_k``, for
    every layer (lesson 11): each sentence is traced once, however deep the model. (One call a
    layer traced them all again for every layer once a model folder's cache, which keeps 8
    traces, could not hold the 14 sentences: 336 traces on a 24-layer Granite.)"""
    traces = [get_trace(model, s, RunOptions(moe_top_k=top_k)) for s in ma.SAMPLE_SENTENCES]
    return [ma.class_expert_table(traces, word_class, layer=layer, order=(*CLASSES, "space"))
            for layer in range(traces[0].config.n_layers)]


@st.cache_data(ttl=600, max_entries=16, show_spinner="Timing attention on this server…")
def attention_timings(ns: tuple[int, ...], window: int) -> list[ls.Cost]:
    """Lesson 17's live timings and measured peak memory of full and windowed attention, on
    this server, kept ten minutes: measuring costs about a second of CPU (the profiler's first
    start in a process about two more), and it ran on every rerun of the page (every slider
    move of every learner on it)."""
    return ls.attention_cost(list(ns), window=window, repeats=2)


def pattern_whatifs(model: str, text: str, **pattern: int) -> dict:
    """Lesson 17's what-if: copies of the model run ``text`` under every pattern (the keyword
    settings in ``pattern``); {kind: WhatIf}. The shared model is only copied, never changed.
    Equal settings share one cache entry, whatever their order."""
    return _pattern_whatifs(model, text, tuple(sorted(pattern.items())))


@per_model(st.cache_data(max_entries=32, show_spinner="Running copies of the model under every pattern…"))
def _pattern_whatifs(model: str, text: str, pattern: tuple[tuple[str, int], ...]) -> dict:
    return ls.pattern_whatifs(get_bundle(model).model, read_text(model, text).ids, **dict(pattern))


@per_model(st.cache_data(max_entries=32, show_spinner=False))
def linformer_layers(model: str, text: str, rows: int) -> ls.LinformerLayers:
    """Lesson 17's Linformer on every layer of ``text``'s trace, ``rows`` pooled rows, with
    both error curves over k (``experiments.long_sequences.linformer_layers``)."""
    trace = get_trace(model, text)
    cfg = trace.config
    layers = range(cfg.n_layers)
    # the queries and keys the scores read: turned by RoPE where the model turns them
    turned = "blocks.0.attn.hook_rot_q" in trace.activations
    q_name, k_name = ("rot_q", "rot_k") if turned else ("q", "k")
    qs, ks, vs = ([trace[f"blocks.{layer}.attn.hook_{name}"] for layer in layers]
                  for name in (q_name, k_name, "v"))
    return ls.linformer_layers(qs, ks, vs, rows, cfg.score_scale if cfg.scale_attn else 1.0)


#: Tokens lesson 5 follows at most. Our models read 128 at most anyway; a model folder reads
#: 512 (BERT) or 1,024 (GPT-2), and lesson 5 on 512 tokens of a BERT-base held gigabytes and ran
#: for minutes (a trace that grows with the square of the length, then every layer's steps and
#: pictures: bench/history/payload.md).
SELF_ATTENTION_TOKENS = 128


def first_tokens(model: str, text: str, limit: int) -> Reading:
    """What ``model`` reads of ``text``, cut to its first ``limit`` tokens (a BERT's closing
    [SEP] kept in the last place, as ``Bundle.read`` cuts at the context); the notice is the
    reading's own. Equal to ``read_text`` when the text is no longer than ``limit``."""
    reading = read_text(model, text)
    ids = reading.ids
    if len(ids) <= limit:
        return reading
    tok = get_bundle(model).tokenizer
    if getattr(tok, "add_special_tokens", False) and ids[-1] == tok.eos_id:
        return Reading((*ids[:limit - 1], ids[-1]), reading.notice)
    return Reading(ids[:limit], reading.notice)


def first_tokens_trace(model: str, text: str, limit: int, options: RunOptions = RunOptions()) -> Trace:
    """``get_trace`` of the first ``limit`` tokens of ``text`` (:func:`first_tokens`): the same
    cached trace when the text is no longer; else one of its own, cached per model like any
    trace of a model folder (``per_model``)."""
    if len(read_text(model, text).ids) <= limit:
        return get_trace(model, text, options)
    o = options.canonical(get_bundle(model).config)
    return _first_tokens_trace(model, text, limit, o.scale, o.causal, o.temperature)


@per_model(st.cache_data(max_entries=64, show_spinner=False))
def _first_tokens_trace(model: str, text: str, limit: int, scale: bool | None, causal: bool | None,
                        temperature: float) -> Trace:
    options = RunOptions(scale=scale, causal=causal, temperature=temperature)
    return get_bundle(model).trace(first_tokens(model, text, limit), options=options)


@per_model(st.cache_resource(show_spinner="Counting the tokens of the model's training text…"),
           copies=False)
def _training_counts(model: str) -> dict[int, int] | None:
    from tfviz.training.counts import corpus_counts

    return corpus_counts(model, get_bundle(model).tokenizer)


def training_counts(model: str) -> dict[int, int] | None:
    """How often each token occurs in a bundled model's training rows (lesson 7's rare tokens),
    rebuilt from its recipe once per server; None for any model that is not a bundled one
    (a lab run or a folder may share a name with no recipe). Callers never change the dict."""
    if get_bundle(model).facts.origin != "bundled":
        return None
    return _training_counts(model)


def heldout_count(model: str) -> int:
    """How many held-out sentences lesson 7's pruning reads for ``model`` (0: it reads the
    learner's text instead)."""
    from tfviz.training.counts import heldout_sentences

    if get_bundle(model).facts.origin != "bundled":
        return 0
    return len(heldout_sentences(model, PRUNING_SENTENCES) or ())


PRUNING_SENTENCES = 64  # 25 runs of gpt-tiny over 64 sentences: a few seconds, once per server


@per_model(st.cache_data(max_entries=16, show_spinner="Removing heads one by one…"))
def heads_pruned(model: str, text: str | None):
    """Lesson 7's pruning what-if on the model's held-out sentences (``text`` None) or on
    ``text``; the shared model is only run, with heads switched off per run (RunOptions)."""
    from tfviz.experiments.pruning import prune
    from tfviz.training.counts import heldout_sentences

    bundle = get_bundle(model)
    cfg = bundle.config
    if text is None:
        end = [bundle.tokenizer.eos_id] if bundle.facts.eos_ends == "sentence" else []
        rows = [bundle.encode(s)[:cfg.max_seq_len - len(end)] + end
                for s in heldout_sentences(model, PRUNING_SENTENCES)]
    else:
        rows = [read_text(model, text).ids]
    return prune(bundle.model, rows, cfg.pad_id, cfg.n_layers, cfg.n_heads)
