"""Small number formatting and freezing helpers shared by the exercises.

>>> fmt_number(0.80444), fmt_number(2.0), fmt_number(float("-inf"))
('0.804', '2', '−∞')
>>> fmt_values([0.5, -1])
'0.5, -1'
"""
from __future__ import annotations

import math

import numpy as np


def frozen_array(values) -> np.ndarray:
    """A float copy nobody can write to (instances may be shared between learners)."""
    a = np.array(values, dtype=float)
    a.setflags(write=False)
    return a


def fmt_number(x: float, places: int = 3) -> str:
    """0.80444 -> '0.804', 2.0 -> '2', -inf -> '−∞'."""
    x = float(x)
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if x == round(x) and abs(x) < 1e15:
        return str(int(round(x)))
    text = f"{x:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt_values(values, places: int = 3) -> str:
    """[0.8, -inf] -> '0.8, −∞'; strings are joined the same way."""
    flat = list(np.ravel(values)) if not isinstance(values, tuple) else list(values)
    return ", ".join(v if isinstance(v, str) else fmt_number(v, places) for v in flat)
