"""Read numbers a learner typed, forgivingly, and compare them with a tolerance.

A small hand-written scanner, never ``eval``: the text is cut at separators
(spaces, commas, semicolons, brackets, bars, new lines) and every piece must be a
number on its own. What counts as a number:

    0.61   -2   .5   1e-3   3/5   -1/2   88%   -inf   −∞   ∞

A lone sign in front of a number joins it ("- 0.5" is -0.5); the unicode minus and
dashes count as minus; NaN is refused; a percentage is divided by 100.

>>> parse_numbers("[0.61, −0.2]").values
(0.61, -0.2)
>>> parse_numbers("(3/5; -inf)").values
(0.6, -inf)
>>> parse_numbers("0.5 0.5", expected_count=3).error
'Expected 3 numbers but found 2.'

When exactly one number is expected, digit groups are allowed: "37,858,304" is one number.
A single comma is another matter (see :func:`comma_problem`): "0,88" is a decimal comma, and
"-1,342" could be either, so the learner is asked which they meant:

>>> parse_number("-1,342").error
'“-1,342” could be -1.342 (a decimal comma) or -1342 (a thousands separator): write -1.342 or -1342.'
>>> parse_number("-1,342", whole=True).value   # only a whole number is wanted: it is -1342
-1342.0
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

#: Distance from the expected value that still counts as right, unless a field says otherwise.
DEFAULT_TOLERANCE = 0.01
#: Longer inputs are refused before any scanning (nobody types an answer that long).
MAX_LENGTH = 5000

_MINUS = dict.fromkeys(map(ord, "\u2212\u2012\u2013\u2014\ufe63\uff0d"), "-")
_SEPARATORS = re.compile(r"[\s,;|()\[\]{}]+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d{1,3})?")  # short exponents only
_INFINITY = re.compile(r"([+-]?)(inf|infinity|∞)")
# 37,858,304 or 37 858 304 or 37'858'304: one number with digit groups (single-number boxes).
_GROUPED = re.compile(r"\s*([+-]?)(\d{1,3})((?:[,' _\u2009\u202f]\d{3})+)\s*")
# One comma between digits: "0,88", "12,5%", "-1,342".
_ONE_COMMA = re.compile(r"\s*([+-]?)(\d+),(\d+)\s*(%?)\s*")


@dataclass(frozen=True)
class ParseResult:
    """Either ``values`` (a tuple of floats) or an ``error`` sentence to show the learner."""

    values: tuple[float, ...] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def value(self) -> float | None:
        """The single number, when exactly one was read."""
        return self.values[0] if self.values is not None and len(self.values) == 1 else None


def _clean(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_MINUS).lower()


def comma_problem(text: str, whole: bool = False) -> str | None:
    """Why one number written with a single comma is not read as it stands, or None.

    Much of Europe writes decimals with a comma, English separates thousands with one. "0,88"
    and "12,5" can only be decimals, so the learner is asked for a dot. "-1,342" can be read
    both ways, -1.342 or -1342, and is never guessed, unless ``whole`` says only a whole number
    is wanted (then 1342 is the only reading that fits). Two or more groups ("3,145,728")
    cannot be a decimal and are never a problem.

    >>> comma_problem("0,88")
    'Write decimals with a dot: 0.88, not 0,88.'
    >>> comma_problem("16,384", whole=True) is None, comma_problem("3,145,728") is None
    (True, True)
    """
    m = _ONE_COMMA.fullmatch(_clean(text))
    if m is None:
        return None
    sign, head, tail, percent = m.groups()
    typed, dotted = f"{sign}{head},{tail}{percent}", f"{sign}{head}.{tail}{percent}"
    if len(tail) == 3 and len(head) <= 3 and head[0] != "0":  # a thousands group, or decimals
        if whole:
            return None
        joined = f"{sign}{head}{tail}{percent}"
        return (f"“{typed}” could be {dotted} (a decimal comma) or {joined} (a thousands "
                f"separator): write {dotted} or {joined}.")
    return f"Write decimals with a dot: {dotted}, not {typed}."


def _shorten(piece: str, limit: int = 20) -> str:
    shown = piece if len(piece) <= limit else piece[:limit] + "…"
    return "".join(c if c.isprintable() else "?" for c in shown)


def _read_piece(piece: str) -> float | str:
    """One piece of text -> its value, or an error sentence."""
    if _INFINITY.fullmatch(piece):
        return -math.inf if piece.startswith("-") else math.inf
    percent = piece.endswith("%")
    body = piece[:-1] if percent else piece
    parts = body.split("/")
    if len(parts) > 2 or not all(_NUMBER.fullmatch(p) for p in parts):
        return f"“{_shorten(piece)}” is not a number."
    try:
        value = Fraction(parts[0])
        if len(parts) == 2:
            denominator = Fraction(parts[1])
            if denominator == 0:
                return f"“{_shorten(piece)}” divides by zero."
            value /= denominator
    except (ValueError, OverflowError, ZeroDivisionError):
        return f"“{_shorten(piece)}” is not a number."
    if percent:
        value /= 100
    if abs(value) > 1e300:
        return f"“{_shorten(piece)}” is too large; write inf for infinity."
    return float(value)


def _pieces(text: str) -> list[str]:
    raw = [p for p in _SEPARATORS.split(text) if p]
    joined: list[str] = []
    for piece in raw:
        if joined and joined[-1] in ("-", "+"):
            joined[-1] = joined[-1] + piece
        else:
            joined.append(piece)
    return joined


def parse_numbers(text: object, expected_count: int | None = None, *,
                  whole: bool = False) -> ParseResult:
    """All numbers in ``text``; never raises, whatever arrives. ``whole``: the one number
    expected is a whole number, so "1,342" can only mean 1342 (see :func:`comma_problem`).

    >>> parse_numbers("0.61 0.2").values
    (0.61, 0.2)
    >>> parse_numbers("").error
    'Type your answer: numbers separated by spaces or commas.'
    """
    if not isinstance(text, str):
        return ParseResult(error="The answer should be text.")
    if len(text) > MAX_LENGTH:
        return ParseResult(error=f"That is too long to be an answer ({len(text)} characters).")
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in text):
        return ParseResult(error="The answer contains control characters; type plain numbers.")
    cleaned = _clean(text)
    if expected_count == 1 and (problem := comma_problem(cleaned, whole)):
        return ParseResult(error=problem)
    grouped = _GROUPED.fullmatch(cleaned) if expected_count == 1 else None
    if grouped:
        cleaned = re.sub(r"[,' _\u2009\u202f]", "", cleaned)
    pieces = _pieces(cleaned)
    if not pieces:
        return ParseResult(error="Type your answer: numbers separated by spaces or commas.")
    values: list[float] = []
    for piece in pieces:
        read = _read_piece(piece)
        if isinstance(read, str):
            return ParseResult(error=read + " Use numbers like 0.61, -2, 3/5 or -inf.")
        values.append(read)
    if expected_count is not None and len(values) != expected_count:
        noun = "number" if expected_count == 1 else "numbers"
        error = f"Expected {expected_count} {noun} but found {len(values)}."
        if len(values) > expected_count and re.search(r"\d,\d", cleaned):
            error += " A comma separates numbers here; write decimals with a dot (0.5, not 0,5)."
        return ParseResult(error=error)
    return ParseResult(values=tuple(values))


def parse_number(text: object, whole: bool = False) -> ParseResult:
    """Exactly one number; read it from ``.value``.

    >>> parse_number(" −3/4 ").value
    -0.75
    """
    return parse_numbers(text, expected_count=1, whole=whole)


def close(got, expected, tol: float = DEFAULT_TOLERANCE) -> bool:
    """Same length and every entry within ``tol``; infinities must match exactly.

    >>> close([0.805, -math.inf], [0.8044, -math.inf])
    True
    """
    got, expected = list(got), list(expected)
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        g, e = float(g), float(e)
        if math.isnan(g) or math.isnan(e):
            return False
        if math.isinf(g) or math.isinf(e):
            if g != e:
                return False
        elif abs(g - e) > tol + 1e-9:
            return False
    return True


def distinct(a, b, tol: float = DEFAULT_TOLERANCE) -> bool:
    """True when no answer could be within ``tol`` of both (they differ by more than 2·tol)."""
    return not close(a, b, 2 * tol)
