"""Names and colours as plain data: the labels every page gives tokens, and colours written as
"#rrggbb" and as the 0-1 triples images hold.

They sit below ``analysis`` and ``viz`` because both need them: analysis returns token labels
and colours as data, and a figure only draws what it is given.
"""
from __future__ import annotations

import html


def rgb(hex_colour: str) -> tuple[int, int, int]:
    """A colour written "#rrggbb" as its red, green and blue, 0-255.

    >>> rgb("#0072B2")
    (0, 114, 178)
    """
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def unit_rgb(hex_colour: str) -> tuple[float, float, float]:
    """"#rrggbb" as red, green and blue in 0-1, as images hold them.

    >>> unit_rgb("#ff0033")
    (1.0, 0.0, 0.2)
    """
    return tuple(c / 255 for c in rgb(hex_colour))


def hex_colour(unit: tuple[float, float, float]) -> str:
    """Red, green and blue in 0-1 as "#rrggbb", each rounded to the nearest of 256 steps.

    >>> hex_colour((1.0, 0.0, 0.2))
    '#ff0033'
    """
    return "#%02x%02x%02x" % tuple(round(c * 255) for c in unit)


def safe_label(text: str) -> str:
    """Escape the characters HTML reads (``<``, ``>``, ``&``), so that text a learner typed shows
    as typed where a label passes through Markdown or HTML.

    >>> safe_label("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return html.escape(str(text), quote=False)


def token_labels(tokens, *, escape: bool = False, start: int = 0) -> list[str]:
    """Labels that stay distinct when a token repeats: "the" at 0 and 4 -> "0 the", "4 the".

    Every page names tokens this way, in figures, tables and pickers. ``escape=True`` is for
    labels placed in Markdown (a page's own sentences), which reads a little HTML: text a
    learner typed is then escaped and shows as typed. Vega-Lite, tables and widgets show text
    as it is, so the default leaves it alone. ``start`` is the first number (1 for the exercise tables, which
    count from 1).

    >>> token_labels(["the", "cat", "<b>"])
    ['0 the', '1 cat', '2 <b>']
    >>> token_labels(["the", "cat", "<b>"], escape=True)
    ['0 the', '1 cat', '2 &lt;b&gt;']
    >>> token_labels(["a", "a"], start=1)
    ['1 a', '2 a']
    """
    show = safe_label if escape else str
    return [f"{i} {show(t)}" for i, t in enumerate(tokens, start=start)]
