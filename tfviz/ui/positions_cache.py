"""Cached numbers of lesson 3's trained position models (gpt-tiny-learned, gpt-tiny-rope,
gpt-tiny-relative, gpt-tiny-t5), and of the sidebar's model when it uses RoPE, Shaw's relative
positions or T5's bias.

Both are gpt-tiny's shape and recipe with another way of giving positions; they are not in the
sidebar's model list, so the lesson reads them here by name. Nothing here edits a model.
"""
from __future__ import annotations

import streamlit as st

import math
from dataclasses import dataclass

import numpy as np

from tfviz.analysis.positions import LearnedPositions, learned_positions
from tfviz.analysis.relative_positions import (BucketLayout, DistancePreference, DistanceRows,
                                               HeadPreference, bias_by_distance, bucket_layout,
                                               reached_buckets, shaw_preferences, shaw_rows,
                                               t5_preferences)
from tfviz.data import story_corpus
from tfviz.experiments.relative import position_terms
from tfviz.experiments.rope import shift_gap
from tfviz.reference import t5_bucket
from tfviz.ui.cache import get_bundle, per_model, read_text

LEARNED, ROPE, SINE = "gpt-tiny-learned", "gpt-tiny-rope", "gpt-tiny"
RELATIVE, T5 = "gpt-tiny-relative", "gpt-tiny-t5"
# The story models' held-out sentences (their manifests' val: story_corpus(512, seed=1001)); the
# first 200 are what Shaw's heads are averaged over: 2,545 pairs at distance 0, 328 at 15 back.
HELDOUT = (512, 1001)
PREFERENCE_SENTENCES = 200
T5_SHOWN_BACK = 40  # the bias chart's distances: 0 to 40 back, twice the stories' longest
SHIFT = 8  # how many tokens the shift test puts in front of the learner's text
MAX_SHIFT_TOKENS = 48  # the learner's first tokens that the shift test reads


def trained_rows(name: str) -> int:
    """How many rows of ``name``'s position table training reached (its manifest says), or the
    whole table when the model is not trained (nothing to tell apart then)."""
    bundle = get_bundle(name)
    reached = bundle.evaluation.positions_trained if bundle.trained else None
    return int(reached) if reached else bundle.config.max_seq_len


def farthest(name: str) -> int:
    """The longest distance between a query and a key in ``name``'s training inputs (positions
    0 … trained_rows − 1), or its whole context when it is not trained."""
    return trained_rows(name) - 1


def likeness(cosine: float) -> str:
    """Words for how alike two vectors with this cosine are (0.8 -> "clearly alike")."""
    return ("clearly alike" if cosine > 0.5 else "only a little alike" if cosine > 0.1
            else "no more alike than random vectors")


@st.cache_data(max_entries=4, show_spinner=False)
def learned_table() -> LearnedPositions:
    """gpt-tiny-learned's position rows beside the sine table of the same width and base."""
    bundle = get_bundle(LEARNED)
    return learned_positions(bundle.weights()["W_pos"], trained_rows(LEARNED), bundle.config.pos_base)


def shift_gaps(text: str, rope: str = ROPE) -> dict[str, tuple[float, str]]:
    """For the RoPE model ``rope`` (gpt-tiny-rope, or the sidebar's model when it turns its q and
    k) and the sine model: how much layer 0's raw scores between the learner's tokens change
    when SHIFT copies of one token are put in front of them, and that token as text."""
    return {name: _shift_gap(name, text) for name in (rope, SINE)}


@per_model(st.cache_data(max_entries=128, show_spinner=False))
def _shift_gap(model: str, text: str) -> tuple[float, str]:
    """The gap and the token put in front: "the" (without a BOS the tokenizer adds), or, for a
    task model that has no "the", the text's own last token."""
    bundle = get_bundle(model)
    ids = read_text(model, text).ids[:MAX_SHIFT_TOKENS]
    bos = getattr(bundle.tokenizer, "bos_id", None)
    said = [i for i in bundle.encode("the") if i != bos]
    filler = said[-1] if said else ids[-1]
    word = bundle.tokenizer.decode([filler]).strip() or bundle.token_strings([filler])[0]
    return shift_gap(bundle.model, ids, SHIFT, filler), word


def _reads_stories(name: str) -> bool:
    """Whether ``name`` is one of our story models, measured on the held-out sentences."""
    data = get_bundle(name).manifest.get("data", {})
    return data.get("val") == f"story_corpus({HELDOUT[0]}, seed={HELDOUT[1]})"


def preference_texts(name: str, text: str) -> tuple[str, ...]:
    """What Shaw's heads are averaged over: the first PREFERENCE_SENTENCES held-out sentences for
    a story model, else (a lab run, whose words are its task's) the learner's text alone."""
    if _reads_stories(name):
        return tuple(story_corpus(HELDOUT[0], seed=HELDOUT[1])[:PREFERENCE_SENTENCES])
    return (text,)


@per_model(st.cache_data(max_entries=8, show_spinner=False))
def shaw_table(name: str) -> DistanceRows:
    """``name``'s a^K and a^V of every layer, with the rows its training could read."""
    bundle = get_bundle(name)
    return shaw_rows(bundle.weights(), bundle.config.rel_clip, bundle.config.causal, farthest(name))


@per_model(st.cache_data(max_entries=64, show_spinner=False))
def shaw_heads(name: str, texts: tuple[str, ...]) -> DistancePreference:
    """Each head's mean position term by distance over ``texts`` (see ``preference_texts``)."""
    bundle = get_bundle(name)
    cfg = bundle.config
    ids = [read_text(name, t).ids[:cfg.max_seq_len] for t in texts]
    terms, lengths = position_terms(bundle.model, [i for i in ids if len(i)], cfg.pad_id)
    return shaw_preferences(terms, lengths, cfg.rel_clip, cfg.causal,
                            math.sqrt(cfg.d_head) if cfg.scale_attn else 1.0)


@dataclass(frozen=True)
class T5Numbers:
    """What lesson 3 shows of one T5-bias model (see ``t5_numbers``)."""

    layout: BucketLayout  # the model's own bucketing (a decoder's looks back only)
    decoder: BucketLayout  # the same buckets as a decoder and as an encoder lays them out
    encoder: BucketLayout
    prefs: tuple[HeadPreference, ...]  # each head's favourite and least favourite reached bucket
    reached: np.ndarray  # (buckets,) bool: buckets training read
    shown: tuple[int, ...]  # distances j − i of the bias chart, 0 to T5_SHOWN_BACK back
    bias: np.ndarray  # (H, len(shown)) each head's bias at those distances

    @property
    def reached_count(self) -> int:
        """How many buckets training read."""
        return int(self.reached.sum())

    @property
    def last_reached(self) -> str:
        """The label of the farthest bucket training read ("19–20 back")."""
        return self.layout.labels[int(np.flatnonzero(self.reached)[-1])]


@per_model(st.cache_data(max_entries=8, show_spinner=False))
def t5_numbers(name: str) -> T5Numbers:
    """``name``'s T5 table read for the lesson: its buckets, each head's preferences among the
    buckets training reached, and the bias of each head for distances 0 to T5_SHOWN_BACK back."""
    cfg = get_bundle(name).config
    table = get_bundle(name).weights()["rel_pos_bias"]  # (buckets, H)
    layouts = {both: bucket_layout(cfg.rel_buckets, cfg.rel_max_distance, both) for both in (False, True)}
    layout = layouts[not cfg.causal]
    shown = tuple(range(0, -T5_SHOWN_BACK - 1, -1))
    return T5Numbers(layout, layouts[False], layouts[True], t5_preferences(table, layout, farthest(name)),
                     reached_buckets(layout, farthest(name)), shown,
                     bias_by_distance(table, shown, not cfg.causal, cfg.rel_max_distance))


@st.cache_data(max_entries=8, show_spinner=False)
def bucket_rows(n_buckets: int, max_distance: int) -> list[dict]:
    """Every distance j − i within max_distance + 8 either way with its bucket, as a decoder
    and as an encoder buckets it (rows for ``viz.positions.bucket_chart``)."""
    span = range(-(max_distance + 8), max_distance + 9)
    rows = []
    for kind, both in (("decoder (causal): keys before the query", False),
                       ("encoder (bidirectional): both ways", True)):
        layout = bucket_layout(n_buckets, max_distance, both)
        for d, b in zip(span, t5_bucket(list(span), both, n_buckets, max_distance)):
            if both or d <= 0:
                rows.append({"distance": d, "bucket": int(b), "bucketing": kind,
                             "label": layout.labels[int(b)]})
    return rows


SHIFTED_SENTENCES = 32  # held-out sentences each model reads at every starting position


@st.cache_data(max_entries=2, show_spinner="Reading the held-out sentences further along…")
def shifted_readings() -> dict[str, object]:
    """Lesson 3's last step: each trained story model's held-out loss with its sentences starting
    at position k (``tfviz.experiments.extrapolation``), {model name: Shifted}; computed once per
    server. Untrained models (no assets) are left out."""
    from tfviz.experiments.extrapolation import shifted_losses

    sentences = story_corpus(HELDOUT[0], seed=HELDOUT[1])[:SHIFTED_SENTENCES]
    out = {}
    for name in (SINE, LEARNED, ROPE, RELATIVE, T5):
        bundle = get_bundle(name)
        if not bundle.trained:
            continue
        cfg = bundle.config
        rows = [bundle.encode(s) + [bundle.tokenizer.eos_id] for s in sentences]
        out[name] = shifted_losses(bundle.model, rows, cfg.pad_id, cfg.max_seq_len)
    return out
