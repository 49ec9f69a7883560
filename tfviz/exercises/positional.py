"""The sinusoidal position table of the original transformer.

    PE(k, 2i)   = sin(k / base^(2i/d))
    PE(k, 2i+1) = cos(k / base^(2i/d))

Column pairs share one frequency; the first pair turns fastest (one radian per position),
later pairs ever more slowly. With d = 4 and base = 100 the two angles of position k
are k/1 and k/10:

>>> positional_table(4, 4, base=100).round(2).tolist()[3]
[0.14, -0.99, 0.3, 0.96]

The ``exponent``, ``swap`` and ``degrees`` switches reproduce three common slips
(used by the exercise checker to recognise them).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

Exponent = Literal["2i", "i"]  # "i": the slip of dividing by base^(i/d)


def angles(n_positions: int, d: int, base: float = 10000.0,
           exponent: Exponent = "2i") -> np.ndarray:
    """k / base^(2i/d) for every position k and pair i: shape (n_positions, ceil(d/2)).

    >>> angles(2, 4, base=100).tolist()
    [[0.0, 0.0], [1.0, 0.1]]
    """
    pairs = np.arange((d + 1) // 2)
    power = 2 * pairs / d if exponent == "2i" else pairs / d
    k = np.arange(n_positions)[:, None]  # (n, 1)
    return k / np.power(float(base), power)[None, :]  # (n, d/2)


def positional_table(n_positions: int, d: int, base: float = 10000.0, *, exponent: Exponent = "2i",
                     swap: bool = False, degrees: bool = False) -> np.ndarray:
    """The (n_positions × d) table: sine in even columns, cosine in odd ones.

    exponent="i" divides by base^(i/d) instead of base^(2i/d); swap=True puts cosine first;
    degrees=True reads the angle as degrees. All three are mistakes, off by default.
    """
    if n_positions < 0 or d < 1:
        raise ValueError("need n_positions >= 0 and d >= 1")
    a = angles(n_positions, d, base, exponent)
    if degrees:
        a = np.deg2rad(a)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    table = np.empty((n_positions, d))
    table[:, 0::2] = first(a)[:, : (d + 1) // 2]
    table[:, 1::2] = second(a)[:, : d // 2]
    return table
