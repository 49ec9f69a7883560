"""Cleaning what a learner types before it reaches the model. No streamlit here.

>>> clean_text("  hello\\x00 world  ")
('hello world', None)
>>> clean_text("")[1]
'Type some text to see the model at work.'
"""
from __future__ import annotations

import unicodedata

MAX_TEXT_CHARS = 2000  # far more than a context window; keeps tokenising instant
# What the text box accepts at all. A paste longer than a box's limit is silently refused by
# the browser, so the limit sits far above anything typed: 100,000 pasted characters arrive,
# and ``clean_text`` cuts them to MAX_TEXT_CHARS with a notice.
MAX_TYPED_CHARS = 200_000
MAX_URL_TEXT = 400


def clean_text(text: object) -> tuple[str, str | None]:
    """Returns (text to use, a friendly notice or None). Never raises.

    Control characters (NUL and friends) and lone surrogates are dropped, runs of white space collapse to one
    space, and very long text is cut with a notice. Emoji, accents and right-to-left scripts
    pass through untouched.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    kept = "".join(" " if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in text)
    cleaned = " ".join(kept.split())
    if not cleaned:
        return "", "Type some text to see the model at work."
    if len(cleaned) > MAX_TEXT_CHARS:
        return cleaned[:MAX_TEXT_CHARS], (f"Your text was long, so we kept its first "
                                          f"{MAX_TEXT_CHARS:,} characters.")
    return cleaned, None


def truncation_notice(n_tokens: int, context: int, closing: str | None = None) -> str | None:
    """What a learner is told when the text is longer than the model's context. ``closing``:
    the token the tokenizer ends every text with ([SEP]), kept after the cut."""
    if n_tokens <= context:
        return None
    if closing:
        return (f"Your text is {n_tokens} tokens long; the model reads at most {context}, so only "
                f"the first {context - 1} are shown, then the {closing} that ends every text.")
    return (f"Your text is {n_tokens} tokens long; the model reads at most {context}, "
            f"so only the first {context} are shown.")
