"""Cached demos that need no model: BPE trained on a learner's corpus (lesson 2), the
random-vector experiments of lesson 6, and the tour's RNN-vs-transformer chart. The same
inputs give every learner the same numbers, so each is computed once per distinct input."""
from __future__ import annotations

import streamlit as st

from tfviz.analysis import scaling as sc
from tfviz.analysis.pipeline import rnn_vs_transformer
from tfviz.tokenizer import TeachingTokenizer, parse_corpus, train_bpe
from tfviz.viz.pipeline import rnn_vs_transformer_chart


@st.cache_data(max_entries=64, show_spinner=False)
def bpe_training(corpus_text: str, merges: int):
    """(corpus, history of ``merges`` merges), or (a friendly message, None) when the text
    is not a usable corpus."""
    corpus = parse_corpus(corpus_text)
    if isinstance(corpus, str):
        return corpus, None
    return corpus, train_bpe(corpus.word_freqs, num_merges=merges, top_k=7)


@st.cache_data(max_entries=64, show_spinner=False)
def bpe_encoding(corpus_text: str, merges: int, word: str):
    """How ``word`` is split by the first ``merges`` merges learned on the corpus."""
    corpus, _ = bpe_training(corpus_text, merges)
    return TeachingTokenizer(train_bpe(corpus.word_freqs, num_merges=merges)).encode(word)


@st.cache_data(max_entries=64, show_spinner=False)  # the same draws for every learner: compute once
def dot_product_variance(d_ks: tuple[int, ...], n_samples: int, seed: int):
    return sc.dot_product_variance(d_ks, n_samples=n_samples, seed=seed)


@st.cache_data(max_entries=64, show_spinner=False)
def saturation(d_ks: tuple[int, ...], seed: int):
    return sc.saturation(d_ks, seed=seed)


def rnn_vs_transformer_view(longest: int, shown: int) -> dict:
    """The tour's chart of an RNN against a transformer for sentences of 2 to ``longest``
    tokens, its slider at ``shown``: a builder for ``drawing.vega``, which caches the chart by
    these two numbers (rather than by its 500-odd rows, which are slow to hash on every run)."""
    return rnn_vs_transformer_chart(rnn_vs_transformer(range(2, longest + 1)), shown=shown)
