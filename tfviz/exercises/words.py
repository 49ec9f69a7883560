"""Read a short list of words or symbols (BPE merges, a decoded sentence).

Pieces are cut at spaces, commas, semicolons and new lines; quotes and brackets around a
piece are dropped; case is ignored; ``_`` may stand for the end-of-word symbol ``</w>``.

>>> parse_words("'es', 'est', est_").values
('es', 'est', 'est</w>')
>>> parse_words("the cat", expected_count=3).error
'Expected 3 words but found 2.'
"""
from __future__ import annotations

import re
import unicodedata

from tfviz.exercises.answers import MAX_LENGTH, ParseResult

_SPLIT = re.compile(r"[\s,;]+")
_STRIP = "\"'`‘’“”()[]{}"
_ALLOWED = re.compile(r"[\w.!?'-]*(</w>)?")  # letters etc., optionally ending in </w>


def normalise_word(piece: str) -> str:
    """'_' and '</W>' -> '</w>'; everything lower case.

    >>> normalise_word("Low_")
    'low</w>'
    """
    word = piece.strip(_STRIP).lower()
    return word.replace("_", "</w>")


def parse_words(text: object, expected_count: int | None = None) -> ParseResult:
    """Words in ``text`` as ``values`` (a tuple of strings), or an ``error``; never raises."""
    if not isinstance(text, str):
        return ParseResult(error="The answer should be text.")
    if len(text) > MAX_LENGTH:
        return ParseResult(error=f"That is too long to be an answer ({len(text)} characters).")
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in text):
        return ParseResult(error="The answer contains control characters; type plain words.")
    cleaned = unicodedata.normalize("NFKC", text)
    words = [normalise_word(p) for p in _SPLIT.split(cleaned) if p.strip(_STRIP)]
    if not words:
        return ParseResult(error="Type your answer: words separated by spaces or commas.")
    for w in words:
        if not w or not _ALLOWED.fullmatch(w):
            shown = "".join(c if c.isprintable() else "?" for c in w[:20])
            return ParseResult(error=f"“{shown}” does not look like a word or symbol.")
    if expected_count is not None and len(words) != expected_count:
        return ParseResult(error=f"Expected {expected_count} words but found {len(words)}.")
    return ParseResult(values=tuple(words))
