"""Encode new text with learned merges, returning every merge it applied (show your work).

Each word starts as characters plus ``</w>``; then, repeatedly, the pair present in
the word that was learned earliest is merged (everywhere in the word), until no
learned pair is left. This gives the same split as replaying training's merges in
order, but only visits the merges that matter for the word.

Worked example, merges [("l","o"), ("lo","w"), ("e","r")]:

    "slower": s l o w e r </w>
      merge 1 (l,o)  -> s lo w e r </w>
      merge 2 (lo,w) -> s low e r </w>
      merge 3 (e,r)  -> s low er </w>

Unknown characters: a character never seen in training (say "z") stays a symbol of
its own, is flagged ``unknown=True``, and gets the id of ``<unk>`` (id 0). No merge
can involve it, so it never hides inside a bigger token. In "attached" mode the same
holds for an end symbol like "z</w>" that training never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfviz.tokenizer.teaching_bpe import EOW, BPEHistory, Pair, initial_symbols, merge_symbols

UNK = "<unk>"


@dataclass(frozen=True)
class AppliedMerge:
    """One merge applied to one word: training step number, the pair, and the result."""

    step: int
    pair: Pair
    new_symbol: str
    symbols_after: tuple[str, ...]


@dataclass(frozen=True)
class WordWork:
    """How one word was encoded: its starting symbols, each merge, and the final tokens."""

    word: str
    start: tuple[str, ...]
    merges: tuple[AppliedMerge, ...]
    tokens: tuple[str, ...]
    unknown: tuple[bool, ...]

    def unknown_in(self, symbols) -> tuple[bool, ...]:
        """Which of ``symbols`` (the start, or the word after any merge) the vocabulary lacks.
        An unknown character takes part in no merge, so it is the same symbol at every step.

        >>> from tfviz.tokenizer.teaching_bpe import train_bpe
        >>> work = TeachingTokenizer(train_bpe("low low lower", num_merges=2)).encode_word("lowz")
        >>> work.start, work.unknown_in(work.start)
        (('l', 'o', 'w', 'z', '</w>'), (False, False, False, True, False))
        """
        odd = {t for t, u in zip(self.tokens, self.unknown) if u}
        return tuple(s in odd for s in symbols)


@dataclass(frozen=True)
class Encoding:
    """Result of ``TeachingTokenizer.encode``: flat tokens/ids plus per-word work."""

    words: tuple[WordWork, ...]
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    unknown: tuple[bool, ...]


class TeachingTokenizer:
    """Tokenizer built from a ``BPEHistory``. Ids: ``<unk>`` = 0, then the vocabulary in order.

    >>> from tfviz.tokenizer.teaching_bpe import train_bpe
    >>> tok = TeachingTokenizer(train_bpe("low low lower", num_merges=2))
    >>> tok.encode("lowz").tokens
    ('low', 'z', '</w>')
    >>> tok.encode("lowz").unknown
    (False, True, False)
    """

    def __init__(self, history: BPEHistory):
        self.history = history
        self.end_of_word = history.end_of_word
        self.ranks: dict[Pair, int] = {}
        for step, pair in enumerate(history.merges, start=1):
            self.ranks.setdefault(pair, step)
        self.id_to_token: tuple[str, ...] = (UNK, *history.vocab)
        self.token_to_id: dict[str, int] = {t: i for i, t in enumerate(self.id_to_token)}
        self.unk_id = 0

    @property
    def vocab_size(self) -> int:
        return len(self.id_to_token)

    def encode_word(self, word: str) -> WordWork:
        """Apply learned merges to one word, earliest-learned pair first."""
        symbols = initial_symbols(word, self.end_of_word)
        start = symbols
        applied: list[AppliedMerge] = []
        while len(symbols) > 1:
            present = [p for p in zip(symbols, symbols[1:]) if p in self.ranks]
            if not present:
                break
            pair = min(present, key=self.ranks.__getitem__)
            symbols = merge_symbols(symbols, pair)
            applied.append(AppliedMerge(self.ranks[pair], pair, pair[0] + pair[1], symbols))
        unknown = tuple(s not in self.token_to_id for s in symbols)
        return WordWork(word, start, tuple(applied), symbols, unknown)

    def encode(self, text: str) -> Encoding:
        """Split ``text`` on whitespace and encode each word, recording the work."""
        works = tuple(self.encode_word(w) for w in text.split())
        tokens = tuple(t for w in works for t in w.tokens)
        unknown = tuple(u for w in works for u in w.unknown)
        ids = tuple(self.token_to_id.get(t, self.unk_id) for t in tokens)
        return Encoding(works, tokens, ids, unknown)

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        """Join tokens; each ``</w>`` becomes a space. [ids of "low", "</w>"] -> "low"."""
        text = "".join(self.id_to_token[i] for i in ids)
        return " ".join(text.replace(EOW, " ").split())
