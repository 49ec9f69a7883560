"""The textbook BPE loop that lesson 2 shows, against the fast heap version we also keep.

``train_bpe_naive`` recounts every pair at every step; ``train_bpe`` keeps a heap of counts
that only the merged words update. Both must learn the same merges and record the same
history: every step's pair, count, segmentation, changed words, runners-up and vocabulary.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

from tfviz.tokenizer.naive_bpe import train_bpe_naive
from tfviz.tokenizer.teaching_bpe import EOW, train_bpe

CLASSIC = "low low low low low lower lower newest newest newest newest newest newest widest widest widest"


def test_classic_corpus_golden():
    # low x5, lower x2, newest x6, widest x3: (e,s) = (s,t) = (t,</w>) = 9, "e" sorts first.
    h = train_bpe_naive(CLASSIC, num_merges=5)
    assert h.merges == [("e", "s"), ("es", "t"), ("est", EOW), ("l", "o"), ("lo", "w")]
    assert [s.count for s in h.steps[1:]] == [9, 9, 9, 7, 7]
    assert h.steps[1].runners_up[:2] == ((("s", "t"), 9), (("t", EOW), 9))
    assert h.steps[1].changed == ("newest", "widest")
    assert h.final.segmentation["newest"] == ["n", "e", "w", "est</w>"]
    assert h.stop_reason == "num_merges reached"


def test_stop_rules_match():
    for kwargs in ({"vocab_size": 14}, {"vocab_size": 5}, {"num_merges": 100},
                   {"num_merges": 0}, {"vocab_size": 13, "num_merges": 1}):
        assert train_bpe_naive(CLASSIC, **kwargs) == train_bpe(CLASSIC, **kwargs), kwargs
    assert train_bpe_naive("ab ab", num_merges=100).stop_reason == "no pairs left"


def test_ten_way_tie_keeps_every_runner_up():
    corpus = "ab ab cd cd ef ef gh gh ij ij"
    naive = train_bpe_naive(corpus, num_merges=6, top_k=2)
    fast = train_bpe(corpus, num_merges=6, top_k=2)
    assert naive == fast and len(naive.steps[1].runners_up) == 9


words = st.dictionaries(st.text("abcé😀", min_size=1, max_size=6), st.integers(1, 9),
                        min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(words, st.integers(0, 30), st.none() | st.integers(1, 40),
       st.sampled_from(["separate", "attached"]), st.integers(0, 7))
def test_same_merges_and_history_as_the_heap_version(freqs, n, vocab_size, end_of_word, top_k):
    naive = train_bpe_naive(freqs, num_merges=n, vocab_size=vocab_size, end_of_word=end_of_word,
                            top_k=top_k)
    fast = train_bpe(freqs, num_merges=n, vocab_size=vocab_size, end_of_word=end_of_word,
                     top_k=top_k)
    assert naive.merges == fast.merges
    assert naive == fast  # every step, field by field
    for step in naive.steps:  # symbols always spell the word back
        for w, syms in step.segmentation.items():
            assert "".join(syms) == w + EOW


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["low", "lower", "newest", "widest", "new", "news", "wider",
                                 "aaa", "aaaa", "</w>", "</"]), min_size=1, max_size=40),
       st.integers(0, 20))
def test_same_history_on_word_lists_with_repeats_and_overlaps(corpus, n):
    assert train_bpe_naive(corpus, num_merges=n) == train_bpe(corpus, num_merges=n)
