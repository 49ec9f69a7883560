"""The sinusoidal table against math.sin/cos and against the table printed in the notes."""
import math

import numpy as np
import pytest

from tfviz.exercises.registry import make_instance
from tfviz.reference import positional_table

# The notes' table for "I am a Robot", d = 4, n = 100, printed to 2 decimals.
# (cos(0.1) = 0.995 is printed there as "1.0".)
PRINTED = [
    [0.00, 1.00, 0.00, 1.00],
    [0.84, 0.54, 0.10, 1.00],
    [0.91, -0.42, 0.20, 0.98],
    [0.14, -0.99, 0.30, 0.96],
]


def test_matches_the_printed_table():
    assert np.allclose(positional_table(4, 4, base=100), PRINTED, atol=0.006)


@pytest.mark.parametrize("n, d, base", [(5, 4, 100), (7, 6, 10000), (3, 5, 10), (2, 1, 100)])
def test_matches_math_sin_cos(n, d, base):
    table = positional_table(n, d, base)
    for k in range(n):
        for j in range(d):
            angle = k / base ** (2 * (j // 2) / d)
            ref = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert table[k, j] == pytest.approx(ref, abs=1e-12)  # float64 on both sides


def test_mistaken_tables():
    right = positional_table(4, 4, 100)
    assert np.allclose(positional_table(4, 4, 100, swap=True)[:, 0], right[:, 1])
    # exponent i/d: pair 1 divides by 100^(1/4) = 3.1623 instead of 10
    assert positional_table(2, 4, 100, exponent="i")[1, 2] == pytest.approx(math.sin(1 / 100**0.25))
    assert positional_table(2, 4, 100, degrees=True)[1, 0] == pytest.approx(math.sin(math.pi / 180))


def test_exercise_rows_and_position_zero():
    inst = make_instance("positional-table")
    assert [f.name for f in inst.answer_fields] == ["pos0", "pos1", "pos2", "pos3"]
    assert "Robot" in inst.field("pos3").label
    assert inst.check("pos3", "0.14, -0.99, 0.30, 0.96").correct
    assert inst.check("pos1", "0.84 0.54 0.10 1.0").correct
    # at k = 0 the exponent and degree slips give the right numbers, so only the swap is kept
    assert [m.name for m in inst.field("pos0").mistakes] == ["swap"]
    fb = inst.check("pos0", "1 0 1 0")
    assert fb.mistake == "swap" and "sine" in fb.diagnosis


def test_bad_sizes():
    with pytest.raises(ValueError):
        positional_table(3, 0)
