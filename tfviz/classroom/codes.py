"""Join codes and teacher keys: the two strings a live session is reached by.

A **join code** goes on the projector; anyone with it can follow the class. A **teacher key**
stays in the teacher's browser; only it can move the class (``tfviz.classroom.live``).

>>> code = new_code()
>>> len(code), code == parse_code(format_code(code).lower())
(8, True)

The code is written in Crockford's base 32: the ten digits and the letters without I, L, O
and U. Each group of symbols that look alike off a projector or on a phone keyboard has one
member in the alphabet, and what a student types is folded onto it: O and o are read as 0;
I, i, l and L as 1; U as V. So a student who reads the 0 as an O, or types a 1 as a lower-case
l, still joins; nothing they could mistake is a different code.

Why 8 characters are enough. The code uses 32 symbols, drawn with ``secrets``: 32**8 = 2**40,
about 1.1 million million codes.
A server holds at most ``live.MAX_SESSIONS`` (200) sessions, so a code typed wrong, or made up
by a neighbouring class, lands in a live session with probability 200 / 2**40 < 2·10⁻¹⁰.
Guessing on purpose is slowed too: a client (the UI passes its browser session) gets
``live.MAX_FAILED_JOINS`` wrong codes per 10 minutes, 480 in a 4-hour lecture, a chance below
10⁻⁷. A script that opens a fresh session for every 20 guesses is bounded by the size of the
code space alone: 100 guesses a second for 4 hours (1.4 million) hit one of 200 live codes with
probability 2.6·10⁻⁴. (Per address would be stronger, but behind a proxy a whole class shares
one address, and twenty typos would lock it out.) Folding look-alikes does not widen this: it
maps typed text onto the same 2**40 codes, it never lets one typed string match two. And a
code found by guessing only reads: it shows where the class is, and lets someone add anonymous
answers to the dashboard (bounded in number). It never leads to the key: the key is a separate
``secrets.token_urlsafe(16)`` (128 bits), drawn independently of the code, and compared with
``hmac.compare_digest``.
"""
from __future__ import annotations

import secrets
import unicodedata

CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's 32: no I, L, O or U
CODE_LENGTH = 8  # 40 bits; see the module docstring
# What a student may type for a symbol of the alphabet (after upper-casing): Crockford's own
# folds (O -> 0, I and L -> 1), and U -> V, which Crockford leaves out of the alphabet for
# another reason but which look alike at the back of a hall.
LOOK_ALIKES = str.maketrans({"O": "0", "I": "1", "L": "1", "U": "V"})
# Between the two halves, or wherever a student pauses: spaces of every kind, hyphens and
# dashes, dots, underscores, a middle dot.
SEPARATORS = frozenset(" \t\n\r\u00a0\u2009\u202f\u3000-\u2010\u2011\u2012\u2013\u2014\u2212._·")
MAX_TYPED = 200  # longer than any code, with a pasted link around it


def format_code(code: str) -> str:
    """'K7QM4XPD' -> 'K7QM-4XPD', as the projector shows it."""
    return f"{code[:4]}-{code[4:]}"


def parse_code(text: object) -> str | None:
    """What a student typed (or pasted: a whole ``?join=`` link is read too) -> a code in
    canonical form, or None if it cannot be one.

    >>> parse_code(" k7qm-4xpd "), parse_code("K7QM 4XPD"), parse_code("k7qm-4xpo")
    ('K7QM4XPD', 'K7QM4XPD', 'K7QM4XP0')
    >>> parse_code("https://class.example/?join=K7QM-4XPD"), parse_code("K7QM4XP"), parse_code(7)
    ('K7QM4XPD', None, None)
    """
    if not isinstance(text, str) or len(text) > MAX_TYPED:
        return None
    if "join=" in text:  # a pasted link: the code is what follows join=, up to the next &
        text = text.rpartition("join=")[2].partition("&")[0].partition("#")[0]
    # NFKC turns full-width forms (typed with a Chinese or Japanese keyboard) into ASCII.
    text = unicodedata.normalize("NFKC", text)
    code = "".join(ch for ch in text if ch not in SEPARATORS).upper().translate(LOOK_ALIKES)
    ok = len(code) == CODE_LENGTH and all(ch in CODE_ALPHABET for ch in code)
    return code if ok else None


def new_code() -> str:
    """A fresh join code, drawn with ``secrets``."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    """A fresh teacher key."""
    return secrets.token_urlsafe(16)  # 128 bits of its own: nothing shared with the code
