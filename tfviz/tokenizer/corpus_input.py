"""Turn whatever a learner types into a small BPE training corpus, or a friendly message.

``parse_corpus`` never raises: it returns a ``Corpus`` or a string explaining what to fix.

    >>> parse_corpus("low low lower").word_freqs
    {'low': 2, 'lower': 1}
    >>> parse_corpus("   ")
    'The corpus is empty. Type a few words separated by spaces, e.g. "low lower lowest".'

Rules, so big or odd input stays cheap and predictable:
- words are runs of non-whitespace characters, exactly as ``str.split`` finds them;
- only the first ``max_words`` words are kept (``truncated=True`` says so), and the
  text is cut to ``max_chars`` characters before splitting, so a pasted novel costs
  no more than its start;
- a word longer than ``max_word_chars`` is cut to that length (also ``truncated``);
- invisible control characters (NUL, bell, ...) are removed and a note says how many;
- anything else is kept as typed: emoji, accents, right-to-left scripts, HTML tags.
  Python strings are sequences of code points, so an emoji built from several code
  points (a family, a flag) becomes several starting symbols.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from itertools import islice

MAX_WORDS = 5_000
MAX_WORD_CHARS = 40
MAX_CHARS = 200_000
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Corpus:
    """Word counts in first-seen order, how many words were kept, and what was changed."""

    word_freqs: dict[str, int]
    n_words: int
    truncated: bool
    notes: tuple[str, ...] = ()


def _strip_controls(text: str) -> tuple[str, int]:
    """Drop control characters but keep whitespace ones. "a\\x00b c" -> ("ab c", 1)."""
    kept = [c for c in text if c.isspace() or unicodedata.category(c) != "Cc"]
    return "".join(kept), len(text) - len(kept)


def parse_corpus(
    text: object,
    max_words: int = MAX_WORDS,
    max_word_chars: int = MAX_WORD_CHARS,
    max_chars: int = MAX_CHARS,
) -> Corpus | str:
    """Parse learner text into a ``Corpus``; return a message string if there is nothing to use."""
    if text is None:
        return 'There is no text yet. Type a few words, e.g. "low lower lowest".'
    if not isinstance(text, str):
        return "The corpus must be text. Type or paste some words."
    notes: list[str] = []
    truncated = len(text) > max_chars
    text, removed = _strip_controls(text[:max_chars])
    if removed:
        notes.append(f"Removed {removed} invisible control character(s).")
    words: list[str] = []
    for match in islice(_WORD.finditer(text), max_words + 1):
        words.append(match.group())
    if len(words) > max_words:
        words = words[:max_words]
        truncated = True
    if truncated:
        notes.append(f"Only the start of the text was used (at most {max_words:,} words).")
    if any(len(w) > max_word_chars for w in words):
        words = [w[:max_word_chars] for w in words]
        truncated = True
        notes.append(f"Words longer than {max_word_chars} characters were cut short.")
    if not words:
        return 'The corpus is empty. Type a few words separated by spaces, e.g. "low lower lowest".'
    if any("</w>" in w for w in words):
        notes.append('The text contains "</w>", which looks like the end-of-word marker; '
                     "here it is just four ordinary characters.")
    return Corpus(dict(Counter(words)), len(words), truncated, tuple(notes))
