"""Cached numbers of lesson 3's trained position models (gpt-tiny-learned, gpt-tiny-rope), and
of the sidebar's model when it uses RoPE.

Both are gpt-tiny's shape and recipe with another way of giving positions; they are not in the
sidebar's model list, so the lesson reads them here by name. Nothing here edits a model.
"""
from __future__ import annotations

import streamlit as st

from tfviz.analysis.positions import LearnedPositions, learned_positions
from tfviz.experiments.rope import shift_gap
from tfviz.ui.cache import get_bundle, per_model, read_text

LEARNED, ROPE, SINE = "gpt-tiny-learned", "gpt-tiny-rope", "gpt-tiny"
SHIFT = 8  # how many tokens the shift test puts in front of the learner's text
MAX_SHIFT_TOKENS = 48  # the learner's first tokens that the shift test reads


def trained_rows(name: str) -> int:
    """How many rows of ``name``'s position table training reached (its manifest says), or the
    whole table when the model is not trained (nothing to tell apart then)."""
    bundle = get_bundle(name)
    reached = bundle.evaluation.positions_trained if bundle.trained else None
    return int(reached) if reached else bundle.config.max_seq_len


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
