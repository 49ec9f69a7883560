"""Widgets of lesson 15 (BERT and pretraining): a draw's seed with a "Draw again" button, and
the sentence pair as BERT reads it, one column per position (``sentence_pair``).

Presenter view's 24 px text fits about 8 positions across a 1280 px screen, so there the pair
comes in blocks of 8. The normal page shows it in one HTML table, drawn with the run (a data
grid rewrites its screen-reader copy after the run, which a new sentence waited for); a pair
wider than the page scrolls sideways in a box the keyboard can reach (``widgets.table``). A
pair of more than ``STATIC_POSITIONS`` positions (a pasted page of text) goes in a data grid,
which draws only the columns in sight: as HTML it would be thousands of cells.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from tfviz.analysis import pretraining as pt
from tfviz.ui.present import presenting
from tfviz.ui.tables import table

PRESENTER_BLOCK = 8  # positions per table in presenter view
STATIC_POSITIONS = 64  # an HTML table up to this many positions, a data grid beyond


def _add_one(key: str) -> None:
    st.session_state[key] = int(st.session_state.get(key, 0)) + 1


def seed_with_redraw(label: str, key: str, button_key: str, *, help: str) -> int:
    """A seed (0 to 1,000,000, kept in ``key``, 0 at first) with a "Draw again" button beside
    it that adds one: the same seed gives the same draw, the button a new one."""
    st.session_state.setdefault(key, 0)
    c1, c2 = st.columns([2, 1])
    seed = c1.number_input(label, 0, 1_000_000, step=1, key=key, help=help)
    c2.button("Draw again", key=button_key, on_click=_add_one, args=(key,), icon=":material/casino:")
    return int(seed)


def position_table(rows: Sequence[tuple[str, Sequence]]) -> None:
    """(name, values by position) rows as a table with one column per position; in presenter
    view, in blocks of ``PRESENTER_BLOCK`` positions."""
    n = max(len(values) for _, values in rows)
    block = PRESENTER_BLOCK if presenting() else n
    for start in range(0, n, block):
        table([{"": row, **{str(i): str(v) for i, v in enumerate(values) if start <= i < start + block}}
               for row, values in rows], hide_index=True, static=n <= STATIC_POSITIONS)


def sentence_pair(text: str, bundle) -> tuple[int, int]:
    """The pair BERT reads for ``text``: its first two sentences (a box for sentence B when
    it has one), drawn as ``position_table``'s token, id and segment rows. Returns the ids the
    tokenizer keeps for [CLS] and [SEP]."""
    tok = bundle.tokenizer
    first, second = pt.two_sentences(text)
    if second is None:
        second = st.text_input("Sentence B (your text has one sentence; type a second)",
                               "It was very tired.", key="bert_sentence_b", max_chars=300)
    else:
        st.caption("Sentence A and B are the first two sentences of your text.")
    a_ids, b_ids = pt.sentence_ids(tok, first), pt.sentence_ids(tok, second)
    pair = pt.sentence_pair(bundle.token_strings(a_ids), bundle.token_strings(b_ids))
    cls_id, sep_id = pt.cls_sep_ids(tok)
    position_table((("token", pair.tokens), ("id", [cls_id, *a_ids, sep_id, *b_ids, sep_id]),
                    ("segment", pair.segments)))
    st.caption("One column per position: the pair as BERT reads it, with each token's id and segment.")
    return cls_id, sep_id
