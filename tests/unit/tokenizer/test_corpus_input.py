"""parse_corpus must never raise, and must keep odd input cheap and honest."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfviz.tokenizer.corpus_input import Corpus, parse_corpus
from tfviz.tokenizer.teaching_bpe import train_bpe


def test_plain_text():
    c = parse_corpus("low low lower")
    assert isinstance(c, Corpus)
    assert c.word_freqs == {"low": 2, "lower": 1}
    assert (c.n_words, c.truncated, c.notes) == (3, False, ())


@pytest.mark.parametrize("text", ["", "   ", "\n\t", None, 42, b"bytes", "\x00\x01"])
def test_nothing_usable_gives_a_message(text):
    out = parse_corpus(text)
    assert isinstance(out, str) and len(out) > 10


@pytest.mark.parametrize(
    "text, word",
    [("I ❤️ 🐍 emoji 👨‍👩‍👧", "👨‍👩‍👧"), ("שלום עולם שלום", "שלום"), ("<b>bold</b> &amp;", "<b>bold</b>"),
     ("café naïve", "café")],
)
def test_unusual_text_is_kept_as_typed(text, word):
    c = parse_corpus(text)
    assert word in c.word_freqs
    assert train_bpe(c.word_freqs, num_merges=5).merges  # and it trains


def test_control_characters_removed_with_a_note():
    c = parse_corpus("a\x00b c\x07")
    assert c.word_freqs == {"ab": 1, "c": 1}
    assert "2 invisible" in c.notes[0]


def test_word_cap_sets_truncated():
    c = parse_corpus("word " * 10_000)
    assert c.n_words == 5_000 and c.truncated and c.word_freqs == {"word": 5_000}


def test_huge_text_and_huge_word_are_cut():
    c = parse_corpus("x" * 1_000_000)
    assert c.truncated and c.word_freqs == {"x" * 40: 1}


def test_end_marker_in_text_gets_a_note():
    assert any("</w>" in n for n in parse_corpus("a</w>b").notes)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_corpus_or_message(text):
    out = parse_corpus(text)
    assert isinstance(out, (Corpus, str))
    if isinstance(out, Corpus):
        assert sum(out.word_freqs.values()) == out.n_words > 0
        train_bpe(out.word_freqs, num_merges=3)
