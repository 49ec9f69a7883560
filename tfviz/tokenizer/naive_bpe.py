"""BPE training as the textbook writes it: count every pair, merge the best one, repeat.

This is the loop of minbpe's ``basic.py`` on words instead of bytes, and the one lesson 2
shows. Each step recounts every pair from scratch, which is easy to follow and fine for a
lesson's corpus. ``teaching_bpe.train_bpe`` is the fast version (a heap of pair counts that
only the merged words update); a parity test checks that both learn the same merges and
record the same history, step by step.

Worked example, corpus "low low lower", two merges:

    counts  (l,o)=3 (o,w)=3 (w,</w>)=2 (w,e)=1 (e,r)=1 (r,</w>)=1
    step 1  tie at 3; ("l","o") sorts first -> "lo"
    step 2  (lo,w)=3 -> "low"        lower = low e r </w>
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tfviz.tokenizer.teaching_bpe import (BPEHistory, EndOfWord, MergeStep, count_pairs,
                                          initial_symbols, initial_vocab_of, merge_symbols,
                                          pairs_of, word_frequencies)


def train_bpe_naive(
    corpus: str | Iterable[str] | Mapping[str, int],
    *,
    vocab_size: int | None = None,
    num_merges: int | None = None,
    end_of_word: EndOfWord = "separate",
    top_k: int = 3,
) -> BPEHistory:
    """Learn merges until ``vocab_size`` symbols or ``num_merges`` merges, whichever first.

    >>> h = train_bpe_naive("low low lower", num_merges=2)
    >>> h.merges
    [('l', 'o'), ('lo', 'w')]
    >>> h.final.segmentation["lower"]
    ['low', 'e', 'r', '</w>']
    """
    if vocab_size is None and num_merges is None:
        raise ValueError("give vocab_size or num_merges (or both)")
    word_freqs = word_frequencies(corpus)
    words, freqs = tuple(word_freqs), tuple(word_freqs.values())
    symbols = tuple(initial_symbols(w, end_of_word) for w in words)  # "low" -> l o w </w>
    vocab = list(initial_vocab_of(words, end_of_word))
    initial_vocab = tuple(vocab)
    steps = [MergeStep(0, None, 0, None, len(vocab), words, freqs, symbols)]
    while True:
        if num_merges is not None and len(steps) - 1 >= num_merges:
            stop_reason = "num_merges reached"
            break
        if vocab_size is not None and len(vocab) >= vocab_size:
            stop_reason = "vocab_size reached"
            break
        # 1. Count every pair of neighbours, each word weighted by how often it occurs.
        counts = count_pairs(symbols, freqs)
        if not counts:
            stop_reason = "no pairs left"
            break
        # 2. Take the most frequent pair; on a tie, the pair that sorts first.
        ranked = sorted(counts.items(), key=lambda pair_count: (-pair_count[1], pair_count[0]))
        pair, count = ranked[0]
        # 3. Glue it into one new symbol, in every word that holds it.
        changed = tuple(w for w, s in zip(words, symbols) if pair in pairs_of(s))
        symbols = tuple(merge_symbols(s, pair) for s in symbols)
        new_symbol = pair[0] + pair[1]
        if new_symbol not in vocab:  # ("lo","w") and ("l","ow") both make "low"
            vocab.append(new_symbol)
        steps.append(MergeStep(len(steps), pair, count, new_symbol, len(vocab), words, freqs,
                               symbols, changed, runners_up(ranked, top_k)))
    return BPEHistory(tuple(steps), initial_vocab, tuple(vocab), end_of_word, stop_reason)


def runners_up(ranked: list, top_k: int) -> tuple:
    """The ``top_k`` pairs after the winner, plus every pair tied with the last of them, so
    the list never cuts a tie in half.

    >>> runners_up([(("a", "b"), 5), (("b", "c"), 3), (("c", "d"), 3), (("d", "e"), 1)], 1)
    ((('b', 'c'), 3), (('c', 'd'), 3))
    """
    end = min(top_k + 1, len(ranked))
    while end < len(ranked) and ranked[end][1] == ranked[end - 1][1]:
        end += 1
    return tuple(ranked[1:end])
