"""Exercise "positional table": every entry of a small sinusoidal table.

Source numbers: d = 4, n = 100, the sentence "I am a Robot" (positions 0–3). The two
column pairs turn at k/100^0 = k and k/100^(2/4) = k/10 radians:

    I      0:  sin 0 = 0,     cos 0 = 1,      sin 0 = 0,      cos 0 = 1
    am     1:  sin 1 = 0.84,  cos 1 = 0.54,   sin 0.1 = 0.10, cos 0.1 = 1.00
    a      2:  sin 2 = 0.91,  cos 2 = -0.42,  sin 0.2 = 0.20, cos 0.2 = 0.98
    Robot  3:  sin 3 = 0.14,  cos 3 = -0.99,  sin 0.3 = 0.30, cos 0.3 = 0.96

>>> SPEC.make(None).field("pos3").answer_text
'0.141, -0.99, 0.296, 0.955'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text
from tfviz.reference import angles, positional_table

ID = "positional-table"
TITLE = "Positional encoding table by hand"
SOURCE_TOKENS = ("I", "am", "a", "Robot")
WORDS = ("we", "love", "small", "models", "cats", "chase", "red", "dots", "it", "works")

MESSAGES = {
    "swap": ("Sine and cosine are the wrong way round: the even columns (1st, 3rd, …) take the "
             "sine and the odd ones the cosine."),
    "exponent_i": ("The divisor used n^(i/d). It is n^(2i/d): i counts column pairs, so the "
                   "exponent for the pair starting at column 2i is 2i/d."),
    "degrees": ("The angles were read as degrees. The formula works in radians; set your "
                "calculator to RAD."),
}


def build(tokens, d: int, base: float, seed: int | None) -> Instance:
    n = len(tokens)
    table = positional_table(n, d, base)
    slips = {"swap": positional_table(n, d, base, swap=True),
             "exponent_i": positional_table(n, d, base, exponent="i"),
             "degrees": positional_table(n, d, base, degrees=True)}
    fields = []
    for k, token in enumerate(tokens):
        # At position 0 every angle is 0, so only the sine/cosine swap shows there.
        names = ("swap",) if k == 0 else ("swap", "exponent_i", "degrees")
        fields.append(answer_field(f"pos{k}", f"“{token}” (position {k}): {d} numbers", table[k],
                                   {s: (slips[s][k], MESSAGES[s]) for s in names}))
    divisors = np.power(float(base), 2 * np.arange((d + 1) // 2) / d)
    prompt = (
        f"Give the sinusoidal positional encoding of every word in “{' '.join(tokens)}”, with "
        f"d = {d} and n = {fmt_number(base)}. The first word has position k = 0. Use\n\n"
        "PE(k, 2i) = sin(k / n^(2i/d)),  PE(k, 2i+1) = cos(k / n^(2i/d))\n\n"
        f"for i = 0 … {(d + 1) // 2 - 1}, angles in radians, "
        f"and type each word's {d} numbers in column order.")
    a = angles(n, d, base)
    steps = (
        Step("The divisors", r"n^{2i/d}",
             f"Column pair i shares the divisor {fmt_number(base)}^(2i/{d}): "
             + ", ".join(f"i = {i}: {fmt_number(v, 4)}" for i, v in enumerate(divisors))
             + ". The first pair always divides by 1.",
             {"divisors": frozen_array(divisors)}),
        Step("The angles", r"\theta_{k,i} = k / n^{2i/d}",
             "Divide each position by each divisor (radians): "
             + "; ".join(f"k = {k}: {vector_text(a[k], 4)}" for k in range(n)) + ".",
             {"angles": frozen_array(a)}),
        Step("Sine and cosine", r"PE(k,2i) = \sin\theta_{k,i},\; PE(k,2i+1) = \cos\theta_{k,i}",
             "Each angle gives two columns, its sine then its cosine: "
             + "; ".join(f"“{t}”: {vector_text(table[k], 3)}" for k, t in enumerate(tokens))
             + ". Fast columns change a lot from word to word, slow ones hardly move.",
             {"table": frozen_array(table)}),
    )
    data = {"d": d, "n": base}
    return Instance(ID, TITLE, prompt, data, tuple(fields), steps, seed, tokens=tuple(tokens))


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n = int(rng.integers(3, 5))
    tokens = tuple(str(w) for w in rng.choice(WORDS, size=n, replace=False))
    d = int(rng.choice([4, 6]))
    base = float(rng.choice([10, 100, 1000, 10000]))
    return build(tokens, d, base, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_TOKENS, 4, 100.0, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 3, "Fill in a d = 4 sinusoidal table, word by word.", _make)
