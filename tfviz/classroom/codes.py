"""Join codes and teacher keys: the two strings a live session is reached by.

A **join code** goes on the projector; anyone with it can follow the class. A **teacher key**
stays in the teacher's browser; only it can move the class (``tfviz.classroom.live``).

>>> code = new_code()
>>> len(code), code == parse_code(format_code(code).lower())
(8, True)

Why 8 characters are enough. The code uses 32 symbols that cannot be misread off a projector
(no 0/O, no 1/I), drawn with ``secrets``: 32**8 = 2**40, about 1.1 million million codes.
A server holds at most ``live.MAX_SESSIONS`` (200) sessions, so a code typed wrong, or made up
by a neighbouring class, lands in a live session with probability 200 / 2**40 < 2·10⁻¹⁰.
Guessing on purpose is slowed too: a client (the UI passes its browser session) gets
``live.MAX_FAILED_JOINS`` wrong codes per 10 minutes, 480 in a 4-hour lecture, a chance below
10⁻⁷. A script that opens a fresh session for every 20 guesses is bounded by the size of the
code space alone: 100 guesses a second for 4 hours (1.4 million) hit one of 200 live codes with
probability 2.6·10⁻⁴. (Per address would be stronger, but behind a proxy a whole class shares
one address, and twenty typos would lock it out.) And a code found by guessing only reads: it
shows where the class is, and lets someone add anonymous answers to the dashboard (bounded in
number). It never leads to the key: the key is a separate ``secrets.token_urlsafe(16)``
(128 bits), drawn independently of the code, and compared with ``hmac.compare_digest``.
"""
from __future__ import annotations

import secrets

CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # 32 symbols: no 0/O or 1/I to confuse
CODE_LENGTH = 8  # 40 bits; see the module docstring


def format_code(code: str) -> str:
    """'K7QM4XPD' -> 'K7QM-4XPD', as the projector shows it."""
    return f"{code[:4]}-{code[4:]}"


def parse_code(text: object) -> str | None:
    """What a student typed -> a code in canonical form, or None if it cannot be one.

    >>> parse_code(" k7qm-4xpd "), parse_code("K7QM 4XPD"), parse_code("K7QM4XP0"), parse_code(7)
    ('K7QM4XPD', 'K7QM4XPD', None, None)
    """
    if not isinstance(text, str) or len(text) > 40:
        return None
    code = "".join(text.split()).replace("-", "").upper()
    ok = len(code) == CODE_LENGTH and all(ch in CODE_ALPHABET for ch in code)
    return code if ok else None


def new_code() -> str:
    """A fresh join code, drawn with ``secrets``."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    """A fresh teacher key."""
    return secrets.token_urlsafe(16)  # 128 bits of its own: nothing shared with the code
