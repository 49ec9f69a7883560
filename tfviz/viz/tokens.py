"""Tokens as coloured chips (safe HTML) and the tables of the BPE lesson.

Every token string is passed through ``html.escape`` before it goes into markup, so a token
such as "<script>" or "</w>" is shown as text, never run. The same token always gets the same
colour (a stable hash of its text, or its id), so repeats are easy to spot.

>>> "&lt;/w&gt;" in token_chips_html(["low", "</w>"])
True
"""
from __future__ import annotations

import html
import zlib
from collections.abc import Sequence

from tfviz.viz.kit.style import CATEGORICAL, rgb

# Light tints of the Okabe & Ito colours (black left out) so dark text stays readable.
_TINT = 0.45


def _tint(hex_colour: str, amount: float = _TINT) -> str:
    mix = [round(c * amount + 255 * (1 - amount)) for c in rgb(hex_colour)]
    return "#" + "".join(f"{c:02x}" for c in mix)


CHIP_COLOURS = tuple(_tint(c) for c in CATEGORICAL if c != "#000000")


def chip_colour(key: str | int) -> str:
    """A colour that depends only on ``key``: the same token (or id) -> the same colour."""
    n = key if isinstance(key, int) else zlib.crc32(str(key).encode("utf-8"))
    return CHIP_COLOURS[n % len(CHIP_COLOURS)]


def token_chips_html(tokens: Sequence[str], ids: Sequence[int] | None = None, *,
                     unknown: Sequence[bool] | None = None,
                     highlight: Sequence[bool] | None = None) -> str:
    """One inline chip per token, with its id underneath when ``ids`` is given.

    unknown marks tokens the vocabulary lacks (dashed border, "unknown" on hover);
    highlight draws a thick border (e.g. the symbols a merge just created).
    """
    return "<div style='line-height:2.2'>" + _chips(tokens, ids, unknown, highlight) + "</div>"


def _chips(tokens, ids=None, unknown=None, highlight=None) -> str:
    chips = []
    for n, token in enumerate(tokens):
        key = int(ids[n]) if ids is not None else str(token)
        shown = html.escape(str(token)) or "&nbsp;"
        border = "2px solid #333" if highlight is not None and highlight[n] else "1px solid #888"
        hover = f"id {int(ids[n])}" if ids is not None else "token"
        if unknown is not None and unknown[n]:
            border, hover = "2px dashed #D55E00", "unknown: not in the vocabulary"
        below = (f"<br><span style='font-size:0.7em;color:#333'>{int(ids[n])}</span>"
                 if ids is not None else "")
        chips.append(
            f"<span title='{html.escape(hover)}' style='display:inline-block;margin:2px;"
            f"padding:2px 6px;border-radius:6px;border:{border};background:{chip_colour(key)};"
            f"font-family:monospace;font-size:1.05em;text-align:center;line-height:1.2;"
            f"color:#111'>{shown}{below}</span>"
        )
    return "".join(chips)


def segmentation_html(segmentation: dict[str, Sequence[str]], freqs: dict[str, int] | None = None,
                      changed: Sequence[str] = ()) -> str:
    """Each corpus word, its count, and its current symbols as chips; changed words in bold."""
    lines = []
    changed_set = set(changed)
    for word, symbols in segmentation.items():
        count = f" ×{freqs[word]}" if freqs and word in freqs else ""
        label = html.escape(word) + count
        if word in changed_set:
            label = f"<b>{label}</b> ✱"
        lines.append(f"<div><span style='display:inline-block;min-width:9em'>{label}</span>"
                     f"{_chips(list(symbols))}</div>")
    return "<div style='line-height:2.2'>" + "".join(lines) + "</div>"


def pair_table(pair, count: int, runners_up) -> list[dict]:
    """Rows for the "pair counts" table of one merge step, winner first.

    >>> pair_table(("l", "o"), 7, ((("o", "w"), 7),))[0]
    {'pair': 'l + o', 'count': 7, 'chosen': '✔ merged'}
    """
    rows = [{"pair": f"{pair[0]} + {pair[1]}", "count": int(count), "chosen": "✔ merged"}]
    for (a, b), c in runners_up:
        rows.append({"pair": f"{a} + {b}", "count": int(c), "chosen": ""})
    return rows


def merge_table(merges, upto: int) -> list[dict]:
    """The merge rules learned in the first ``upto`` steps, in the order they were learned."""
    return [{"step": n, "merge": f"{a} + {b}", "new symbol": a + b}
            for n, (a, b) in enumerate(merges[:upto], start=1)]
