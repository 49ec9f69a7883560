"""Byte Pair Encoding the classic way, keeping every step so a lesson can replay it.

The algorithm (Sennrich et al., 2016), as this module runs it:

1. Split the corpus on whitespace and count how often each word occurs.
2. Write each word as its characters followed by an end-of-word marker ``</w>``.
   The marker lets "est" at the end of "newest" become a different symbol from
   "est" inside "estate".
3. Count every pair of neighbouring symbols, each word weighted by its frequency.
4. Glue the most frequent pair into one new symbol, everywhere it occurs.
5. Repeat 3-4 until the vocabulary is big enough, enough merges were made, or
   every word has become a single symbol.

Tie-breaking: when several pairs share the top count, the pair that sorts first
as a tuple of Python strings (Unicode code-point order) wins. HF ``tokenizers``
breaks ties by the smaller token id; it numbers single characters in code-point
order, so the two rules agree on ties between pairs of single characters, though
not always once merged symbols are involved.

Worked example, corpus "low lower":

    step 0  low -> l o w </w>      lower -> l o w e r </w>
            pairs: (l,o)=2 (o,w)=2 (w,</w>)=1 (w,e)=1 (e,r)=1 (r,</w>)=1
    step 1  tie between (l,o) and (o,w) at 2; "l" < "o", so merge (l,o) -> "lo"
    step 2  (lo,w)=2 -> "low"      words: low </w> | low e r </w>

``end_of_word="attached"`` is the convention HF ``tokenizers`` uses instead: the
marker is glued to the last character ("w</w>" is one symbol from the start), so
no merge is ever spent on attaching it.

This is the fast version: a heap of pair counts (``pair_queue``) that only the merged words
update. ``naive_bpe.train_bpe_naive`` is the same training as the textbook loop (recount
every pair, merge the best, repeat); a parity test keeps their histories equal.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from tfviz.tokenizer.pair_queue import PairQueue

EOW = "</w>"
EndOfWord = Literal["separate", "attached"]
Pair = tuple[str, str]


@dataclass(frozen=True)
class MergeStep:
    """The corpus just after one merge (``step`` 0 is the state before any merge).

    ``words`` and ``freqs`` are the same tuples in every step (shared, not copied);
    ``symbols[i]`` is how ``words[i]`` is segmented after this step.
    ``runners_up`` are the next-best pairs with their counts at the moment of choice (the
    ``top_k`` best, plus every pair tied with the last of them), so a page can show why this
    pair won (and a test can check there was no tie).
    """

    step: int
    pair: Pair | None
    count: int
    new_symbol: str | None
    vocab_size: int
    words: tuple[str, ...]
    freqs: tuple[int, ...]
    symbols: tuple[tuple[str, ...], ...]
    changed: tuple[str, ...] = ()
    runners_up: tuple[tuple[Pair, int], ...] = ()

    @property
    def segmentation(self) -> dict[str, list[str]]:
        """Word -> its symbols, e.g. {"lower": ["low", "e", "r", "</w>"]}."""
        return {w: list(s) for w, s in zip(self.words, self.symbols)}

    @property
    def word_freqs(self) -> dict[str, int]:
        """Word -> how often it occurs in the corpus, e.g. {"low": 5}."""
        return dict(zip(self.words, self.freqs))

    @property
    def symbol_count(self) -> int:
        """Symbols across the distinct words (each word counted once, not by its frequency)."""
        return sum(len(s) for s in self.symbols)

    @property
    def pair_count(self) -> int:
        """Neighbouring pairs in the corpus, each word counted as often as it occurs: what the
        next merge's counting sees."""
        return sum(count_pairs(self.symbols, self.freqs).values())


@dataclass(frozen=True)
class BPEHistory:
    """Everything training did: ``steps[0]`` is the start, ``steps[k]`` follows merge k."""

    steps: tuple[MergeStep, ...]
    initial_vocab: tuple[str, ...]
    vocab: tuple[str, ...]
    end_of_word: EndOfWord
    stop_reason: str

    @property
    def merges(self) -> list[Pair]:
        """The learned merges in order, e.g. [("l", "o"), ("lo", "w")]."""
        return [s.pair for s in self.steps[1:] if s.pair is not None]

    @property
    def final(self) -> MergeStep:
        return self.steps[-1]


def word_frequencies(corpus: str | Iterable[str] | Mapping[str, int]) -> dict[str, int]:
    """Whitespace-split word counts in first-seen order.

    "low low lower" -> {"low": 2, "lower": 1}. A mapping is taken as counts already.
    """
    if isinstance(corpus, Mapping):
        return {str(w): int(c) for w, c in corpus.items() if w and int(c) > 0}
    texts = [corpus] if isinstance(corpus, str) else corpus
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(text.split())
    return dict(counts)


def initial_symbols(word: str, end_of_word: EndOfWord = "separate") -> tuple[str, ...]:
    """"low" -> ("l", "o", "w", "</w>"); attached: ("l", "o", "w</w>")."""
    if end_of_word == "attached":
        return (*word[:-1], word[-1] + EOW)
    return (*word, EOW)


def pairs_of(symbols: tuple[str, ...]) -> list[Pair]:
    """Neighbouring pairs, overlaps included: ("a", "a", "a") -> [("a","a"), ("a","a")]."""
    return list(zip(symbols, symbols[1:]))


def merge_symbols(symbols: tuple[str, ...], pair: Pair) -> tuple[str, ...]:
    """Glue each occurrence of ``pair``, scanning left to right.

    ("l", "o", "w", "</w>") with ("l", "o") -> ("lo", "w", "</w>");
    ("a", "a", "a") with ("a", "a") -> ("aa", "a").
    """
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def count_pairs(symbols: Iterable[tuple[str, ...]], freqs: Iterable[int]) -> Counter[Pair]:
    """Pair counts weighted by word frequency.

    [("l","o","w","</w>")] with [5] -> {("l","o"): 5, ("o","w"): 5, ("w","</w>"): 5}.
    """
    counts: Counter[Pair] = Counter()
    for syms, f in zip(symbols, freqs):
        for p in pairs_of(syms):
            counts[p] += f
    return counts


def initial_vocab_of(words: Iterable[str], end_of_word: EndOfWord = "separate") -> tuple[str, ...]:
    """Every character, then the end-of-word symbol(s), each group sorted.

    ["low"] -> ("l", "o", "w", "</w>"); attached -> ("l", "o", "w", "w</w>").
    Attached mode lists every character even if it only ends words, as HF does.
    """
    words = list(words)
    chars = sorted({c for w in words for c in w})
    if end_of_word == "attached":
        return (*chars, *sorted({w[-1] + EOW for w in words}))
    return (*chars, EOW)


def train_bpe(
    corpus: str | Iterable[str] | Mapping[str, int],
    *,
    vocab_size: int | None = None,
    num_merges: int | None = None,
    end_of_word: EndOfWord = "separate",
    top_k: int = 3,
) -> BPEHistory:
    """Learn merges until ``vocab_size`` symbols or ``num_merges`` merges, whichever first.

    >>> h = train_bpe("low low lower", num_merges=2)
    >>> h.merges
    [('l', 'o'), ('lo', 'w')]
    >>> h.final.segmentation["lower"]
    ['low', 'e', 'r', '</w>']

    The vocabulary counts distinct symbols; a merge that recreates an existing
    symbol (("lo","w") and ("l","ow") both give "low") does not grow it.
    Counts include overlapping pairs, so "aaa" counts ("a","a") twice even though
    only one of them can be merged; the classic algorithm does the same.
    Cost: each step stores one tuple slot per distinct word, so 5,000 distinct words
    and 3,000 merges hold ~15M references (~120 MB); pages should cap ``num_merges``.
    """
    if vocab_size is None and num_merges is None:
        raise ValueError("give vocab_size or num_merges (or both)")
    freq_map = word_frequencies(corpus)
    words = tuple(freq_map)
    freqs = tuple(freq_map[w] for w in words)
    symbols = [initial_symbols(w, end_of_word) for w in words]
    vocab = list(initial_vocab_of(words, end_of_word))
    known = set(vocab)
    initial_vocab = tuple(vocab)

    queue = PairQueue(count_pairs(symbols, freqs))
    where: defaultdict[Pair, set[int]] = defaultdict(set)  # pair -> indices of words holding it
    for i, syms in enumerate(symbols):
        for p in pairs_of(syms):
            where[p].add(i)

    steps = [MergeStep(0, None, 0, None, len(vocab), words, freqs, tuple(symbols))]
    stop_reason = "no pairs left"
    while True:
        if num_merges is not None and len(steps) - 1 >= num_merges:
            stop_reason = "num_merges reached"
            break
        if vocab_size is not None and len(vocab) >= vocab_size:
            stop_reason = "vocab_size reached"
            break
        if not queue:
            break
        # Highest count first; among equal counts the smallest pair (the tie rule).
        best = queue.top(top_k + 1, keep_ties=True)
        (pair, count), runners_up = best[0], tuple(best[1:])
        new_symbol = pair[0] + pair[1]
        changed = []
        deltas: Counter[Pair] = Counter()
        for i in sorted(where[pair]):  # only words that hold the pair change
            old, new = symbols[i], merge_symbols(symbols[i], pair)
            for p in pairs_of(old):
                deltas[p] -= freqs[i]
                where[p].discard(i)
            for p in pairs_of(new):
                deltas[p] += freqs[i]
                where[p].add(i)
            symbols[i] = new
            changed.append(words[i])
        for p in queue.update(deltas):
            where.pop(p, None)
        if new_symbol not in known:
            known.add(new_symbol)
            vocab.append(new_symbol)
        steps.append(
            MergeStep(len(steps), pair, count, new_symbol, len(vocab), words, freqs,
                      tuple(symbols), tuple(changed), runners_up)
        )
    return BPEHistory(tuple(steps), initial_vocab, tuple(vocab), end_of_word, stop_reason)
