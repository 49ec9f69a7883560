"""Golden and property tests for the teaching BPE trainer and its show-your-work encoder."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfviz.tokenizer.teaching_bpe import (
    EOW,
    count_pairs,
    initial_symbols,
    merge_symbols,
    train_bpe,
    word_frequencies,
)
from tfviz.tokenizer.teaching_encode import TeachingTokenizer

CLASSIC = "low low low low low lower lower newest newest newest newest newest newest widest widest widest"
SMALL = "low lower lowest newer wider"


def test_small_corpus_golden():
    # Worked by hand, every word once:
    #   low    l o w </w>          lower  l o w e r </w>      lowest l o w e s t </w>
    #   newer  n e w e r </w>      wider  w i d e r </w>
    # Step 1: (e,r) (l,o) (o,w) (r,</w>) (w,e) all count 3; "e" sorts first -> "er".
    # Step 2: (er,</w>)=3 ties (l,o)=3 and (o,w)=3; "er" < "l" -> "er</w>".
    # Step 3: (l,o)=3 vs (o,w)=3 -> "lo".   Step 4: (lo,w)=3 is the only 3 -> "low".
    h = train_bpe(SMALL, num_merges=4)
    assert h.merges == [("e", "r"), ("er", EOW), ("l", "o"), ("lo", "w")]
    assert [s.count for s in h.steps[1:]] == [3, 3, 3, 3]
    assert h.final.segmentation == {
        "low": ["low", EOW],
        "lower": ["low", "er</w>"],
        "lowest": ["low", "e", "s", "t", EOW],
        "newer": ["n", "e", "w", "er</w>"],
        "wider": ["w", "i", "d", "er</w>"],
    }
    assert h.steps[1].changed == ("lower", "newer", "wider")


def test_classic_corpus_golden():
    # low x5, lower x2, newest x6, widest x3.
    # (e,s) = (s,t) = (t,</w>) = 6 + 3 = 9 -> tie, "e" first -> "es";
    # then (es,t)=9 ties (t,</w>)=9 -> "est"; then (est,</w>)=9 -> "est</w>";
    # then (l,o)=7 ties (o,w)=7 -> "lo"; then (lo,w)=7 -> "low".
    h = train_bpe(CLASSIC, num_merges=5)
    assert h.merges == [("e", "s"), ("es", "t"), ("est", EOW), ("l", "o"), ("lo", "w")]
    assert [s.count for s in h.steps[1:]] == [9, 9, 9, 7, 7]
    assert h.final.segmentation["newest"] == ["n", "e", "w", "est</w>"]
    assert h.final.word_freqs == {"low": 5, "lower": 2, "newest": 6, "widest": 3}


def test_step_zero_is_the_starting_state():
    h = train_bpe(CLASSIC, num_merges=1)
    s0 = h.steps[0]
    assert (s0.step, s0.pair, s0.new_symbol) == (0, None, None)
    assert s0.segmentation["low"] == ["l", "o", "w", EOW]
    assert h.initial_vocab == ("d", "e", "i", "l", "n", "o", "r", "s", "t", "w", EOW)
    assert s0.vocab_size == 11 and h.steps[1].vocab_size == 12


def test_helpers_match_their_docstrings():
    assert word_frequencies("low low lower") == {"low": 2, "lower": 1}
    assert initial_symbols("low") == ("l", "o", "w", EOW)
    assert initial_symbols("low", "attached") == ("l", "o", "w</w>")
    assert merge_symbols(("a", "a", "a"), ("a", "a")) == ("aa", "a")
    assert count_pairs([("a", "a", "a")], [2]) == Counter({("a", "a"): 4})


def test_stop_rules():
    assert train_bpe(CLASSIC, vocab_size=14).stop_reason == "vocab_size reached"
    assert len(train_bpe(CLASSIC, vocab_size=14).merges) == 3
    assert train_bpe(CLASSIC, vocab_size=5).merges == []  # already bigger than that
    h = train_bpe("ab ab", num_merges=100)
    assert h.stop_reason == "no pairs left" and h.final.segmentation == {"ab": ["ab</w>"]}
    with pytest.raises(ValueError):
        train_bpe(CLASSIC)


def test_runners_up_explain_the_choice():
    h = train_bpe(CLASSIC, num_merges=1)
    assert h.steps[1].runners_up[:2] == ((("s", "t"), 9), (("t", EOW), 9))


def test_recreated_symbol_does_not_grow_vocab():
    # Typed text "</w>" can be merged back into a symbol equal to the marker itself:
    # merges ("<","/"), ("</","</w>"), ("</","w"), ("</w",">") -> "</w>" again.
    h = train_bpe({"</w>": 1, "</": 5}, num_merges=4)
    assert h.steps[4].new_symbol == EOW
    assert len(h.vocab) == len(set(h.vocab)) == h.final.vocab_size
    assert h.final.vocab_size < len(h.initial_vocab) + len(h.merges)


words = st.dictionaries(st.text("abcé😀", min_size=1, max_size=6), st.integers(1, 9), min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(words, st.integers(0, 25), st.sampled_from(["separate", "attached"]))
def test_encoding_training_words_reproduces_training_split(freqs, n, end_of_word):
    h = train_bpe(freqs, num_merges=n, end_of_word=end_of_word)
    tok = TeachingTokenizer(h)
    for w, syms in h.final.segmentation.items():
        work = tok.encode_word(w)
        assert list(work.tokens) == syms
        assert not any(work.unknown)


def test_encode_shows_its_work():
    tok = TeachingTokenizer(train_bpe(CLASSIC, num_merges=5))
    enc = tok.encode("lowest")
    (work,) = enc.words
    assert work.start == ("l", "o", "w", "e", "s", "t", EOW)
    assert [(m.step, m.pair) for m in work.merges] == [
        (1, ("e", "s")), (2, ("es", "t")), (3, ("est", EOW)), (4, ("l", "o")), (5, ("lo", "w"))]
    assert work.merges[3].symbols_after == ("lo", "w", "est</w>")
    assert enc.tokens == ("low", "est</w>")
    assert tok.decode(enc.ids) == "lowest"


def test_unknown_characters_are_flagged_and_get_unk_id():
    tok = TeachingTokenizer(train_bpe(CLASSIC, num_merges=5))
    enc = tok.encode("lowz new😀")
    assert enc.tokens == ("low", "z", EOW, "n", "e", "w", "😀", EOW)
    assert [t for t, u in zip(enc.tokens, enc.unknown) if u] == ["z", "😀"]
    assert enc.ids[1] == tok.unk_id == 0 and tok.id_to_token[0] == "<unk>"
    assert tok.decode(enc.ids) == "low<unk> new<unk>"


def test_attached_mode_flags_unseen_end_symbol():
    tok = TeachingTokenizer(train_bpe("ab ab", num_merges=0, end_of_word="attached"))
    assert tok.encode("ba").unknown == (False, True)  # "a</w>" never ended a training word


def test_encode_empty_and_whitespace():
    tok = TeachingTokenizer(train_bpe(SMALL, num_merges=3))
    assert tok.encode("").tokens == () and tok.encode(" \n\t ").ids == ()


@pytest.mark.parametrize("corpus", [
    "ab ab cd cd ef ef gh gh ij ij",  # ten pairs tied at 2: the winner, then all nine others
    "low low low low low lower lower newest newest newest newest newest newest widest widest "
    "widest lowest newer wider new news",
])
def test_runners_up_never_cut_a_tie(corpus):
    """Recount every step's pairs naively: the runners-up are the top_k best after the winner
    plus every pair tied with the last of them, and nothing tied with a shown count is missing."""
    history = train_bpe(corpus, num_merges=6, top_k=2)
    for before, step in zip(history.steps, history.steps[1:]):
        counts = count_pairs(before.symbols, before.freqs)
        shown = [c for _, c in step.runners_up]
        assert all(counts[p] == c for p, c in step.runners_up)  # the counts are the real ones
        if shown:
            cut = shown[min(1, len(shown) - 1)]  # the count of the top_k-th runner-up
            tied = {p for p, c in counts.items() if c >= cut and p != step.pair}
            assert tied == {p for p, _ in step.runners_up}
    if corpus.startswith("ab"):
        assert history.steps[1].pair == ("a", "b") and len(history.steps[1].runners_up) == 9
