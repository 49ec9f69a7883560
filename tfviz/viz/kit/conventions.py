"""Conventions every chart keeps, each written once: how a view control is bound to a slider,
and how big a heatmap's cell is."""
from __future__ import annotations


def range_bind(label: str, upper: int, lower: int = 0) -> dict:
    """The binding of a whole-number parameter to a labelled range slider ``lower..upper``
    (the arrow keys move it one step). The label ends in a space: Vega writes the value
    straight after it.

    >>> range_bind("Layer", 2)
    {'input': 'range', 'min': 0, 'max': 2, 'step': 1, 'name': 'Layer '}
    """
    return {"input": "range", "min": int(lower), "max": int(upper), "step": 1, "name": f"{label} "}


def cell_size(cols: int, rows: int = 1, *, smallest: int = 14, width: int = 520) -> int:
    """Pixels a side for each cell of a heatmap ``cols`` × ``rows``: the larger side fills
    about ``width`` pixels, within ``smallest``..44 (a big cell reads from the back of the
    room; a long text's cells get small before the map gets wide).

    >>> cell_size(5, 5), cell_size(13, 13), cell_size(64, 64), cell_size(64, 64, smallest=3)
    (44, 40, 14, 8)
    """
    return max(smallest, min(44, width // max(cols, rows, 1)))
