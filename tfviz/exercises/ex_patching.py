"""Exercise "read a patching map": where a clean run's answer comes back, and how much of it.

Two texts differ in one word, and the model's answer differs with it. The map holds the logit
difference (clean answer − corrupt answer) of the corrupt run with one activation, the
residual stream at one layer's input and one position, taken from the clean run. The clean run
itself scores C, the corrupt run c; the fraction a patch restores is (v − c) / (C − c).

Our own example: "the cat was too tired ." / "... too wide .", C = 4, c = −2, four layers:

    layer 0   [-2, -2, -2, -2,  4,  -2]        the changed word, position 4, restores it all
    layer 1   [-2, -2, -2, -2,  2.6, 1.3]      the last position: (1.3 + 2) / 6 = 0.55
    layer 2   [-2, -2, -2, -2,  0.4, 1.8]
    layer 3   [-2, -2, -2, -2, -1.7, 3.4]

Read off: the layer-0 cell that restores most (layer 0, position 4), the first layer at which
patching the last position restores more than half (layer 1, although its raw 1.3 is below
C / 2 = 2), and that fraction (0.55). Slips: layers or positions counted from 1, the two numbers
swapped, the smallest cell picked, a raw value read against C / 2 rather than the fraction,
v / C (no baseline), 1 − f (what was not restored).

>>> SPEC.make(None).field("fraction").answer_text
'0.55'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import (ExerciseSpec, Instance, Step, answer_field, draw_clean,
                                  fmt_number, frozen_array)
from tfviz.exercises.worked import vector_text

ID = "patching-map"
TITLE = "Read an activation-patching map"
SOURCE_TOKENS = ("the", "cat", "was", "too", "tired", ".")
SOURCE = dict(clean=4.0, corrupt=-2.0, values=((-2, -2, -2, -2, 4, -2),
                                               (-2, -2, -2, -2, 2.6, 1.3),
                                               (-2, -2, -2, -2, 0.4, 1.8),
                                               (-2, -2, -2, -2, -1.7, 3.4)))
WORDS = ("the", "dog", "cat", "bird", "was", "felt", "too", "very", "so", "tired", "wide",
         "small", "late", "happy")

MESSAGES = {
    "from_one": ("You counted from 1. Layers and positions are counted from 0 here, as the map's "
                 "labels (and TransformerLens) count them."),
    "transposed": "Layer first, then position: you gave them the other way round.",
    "smallest": ("That is the cell that restores least. Patching restores the clean answer where "
                 "the logit difference comes back up towards the clean run's C."),
    "raw_half": ("You compared the raw logit difference with half of C. 'More than half restored' "
                 "is about the fraction (v − c) / (C − c): the corrupt run's c is the zero."),
    "no_baseline": ("You divided v by C, leaving out the corrupt run's c. The fraction restored "
                    "is (v − c) / (C − c): 0 for the corrupt run, 1 for the clean one."),
    "not_restored": "That is 1 − the fraction: how much is still missing, not how much came back.",
}


def fractions(values, clean: float, corrupt: float) -> np.ndarray:
    """(v − c) / (C − c) of every cell: 0 is the corrupt run, 1 the clean one.

    >>> fractions([[-2, 4, 1]], 4, -2).tolist()
    [[0.0, 1.0, 0.5]]
    """
    return (np.asarray(values, dtype=float) - corrupt) / (clean - corrupt)


def read_map(values, clean: float, corrupt: float) -> dict[str, object]:
    """What the exercise asks, and each slip's version of it.

    -> {"cell": (layer, position) of layer 0's best cell, "layer": the first layer whose last
    position restores more than half, "fraction": that cell's fraction, "slips": {...}}.
    """
    v = np.asarray(values, dtype=float)
    f = fractions(v, clean, corrupt)
    pos = int(np.argmax(v[0]))
    low = int(np.argmin(v[0]))
    last = v.shape[1] - 1
    layer = int(np.flatnonzero(f[:, last] > 0.5)[0])
    raw = np.flatnonzero(v[:, last] > clean / 2)
    frac = float(f[layer, last])
    return {
        "cell": (0, pos), "layer": layer, "fraction": frac,
        "slips": {
            "cell": {"from_one": (1, pos + 1), "transposed": (pos, 0), "smallest": (0, low)},
            "layer": {"from_one": layer + 1,
                      "raw_half": int(raw[0]) if len(raw) else float("nan")},
            "fraction": {"no_baseline": float(v[layer, last] / clean), "not_restored": 1 - frac},
        },
    }


def build(tokens, values, clean: float, corrupt: float, seed: int | None) -> Instance:
    v = np.asarray(values, dtype=float)
    n_layers, n_pos = v.shape
    got = read_map(v, clean, corrupt)
    slips = got["slips"]
    fields = (
        answer_field("cell", "layer 0's best cell: layer, position", got["cell"],
                     {k: (val, MESSAGES[k]) for k, val in slips["cell"].items()}),
        answer_field("layer", "the first layer where the last position restores more than half",
                     got["layer"], {k: (val, MESSAGES[k]) for k, val in slips["layer"].items()}),
        answer_field("fraction", "the fraction restored there", got["fraction"],
                     {k: (val, MESSAGES[k]) for k, val in slips["fraction"].items()}),
    )
    changed = int(np.argmax(v[0]))
    prompt = (
        f"A model reads a clean text and a corrupt one that differ only in word {changed} "
        f"(“{tokens[changed]}”), and its answer changes with it. The logit difference between "
        f"the two answers is C = {fmt_number(clean)} on the clean run and c = "
        f"{fmt_number(corrupt)} on the corrupt run. The map gives the same difference for the "
        "corrupt run with one cell patched: the residual stream entering that layer, at that "
        f"position, taken from the clean run. Layers and positions count from 0.\n\n"
        "Which cell of layer 0 restores the most (layer, position)? From which layer on does "
        "patching the last position restore more than half of the clean answer, and what "
        "fraction (v − c) / (C − c) does it restore there?")
    f = fractions(v, clean, corrupt)
    last = n_pos - 1
    steps = (
        Step("Turn the map into fractions", r"f = \frac{v - c}{C - c}",
             f"Subtract c = {fmt_number(corrupt)} and divide by C − c = "
             f"{fmt_number(clean - corrupt)}: 0 means nothing came back, 1 the whole clean answer. "
             f"Layer 0 reads {vector_text(f[0], 3)}.", {"fractions": frozen_array(f)}),
        Step("Layer 0: where the two texts differ", r"\arg\max_p f_{0,p}",
             f"At layer 0 only the changed word's own position differs between the runs, so "
             f"patching it (position {changed}) restores everything: cell (0, {changed}).",
             {"cell": frozen_array(got["cell"])}),
        Step("The last position, layer by layer", r"\min\{\ell : f_{\ell, T-1} > 0.5\}",
             f"The last position's column reads {vector_text(f[:, last], 3)}: the information "
             f"has moved there by layer {got['layer']}.", {"layer": got["layer"]}),
        Step("The fraction there", r"f = \frac{v - c}{C - c}",
             f"({fmt_number(v[got['layer'], last])} − ({fmt_number(corrupt)})) / "
             f"{fmt_number(clean - corrupt)} = {fmt_number(got['fraction'], 4)}.",
             {"fraction": got["fraction"]}),
    )
    data = {"patched": frozen_array(v), "clean": float(clean), "corrupt": float(corrupt)}
    return Instance(ID, TITLE, prompt, data, fields, steps, seed, tokens=tuple(tokens))


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    n_layers, n_pos = int(rng.integers(4, 6)), int(rng.integers(5, 7))
    clean, corrupt = float(rng.integers(3, 7)), -float(rng.integers(1, 4))
    changed = int(rng.integers(1, n_pos - 1))
    # the raw value passes C / 2 only at this fraction, above one half since c < 0
    raw_line = (clean / 2 - corrupt) / (clean - corrupt)
    moved = int(rng.integers(1, n_layers - 2))  # the first layer whose last position is > 0.5
    f = np.zeros((n_layers, n_pos))
    f[0, changed] = 1.0
    for layer in range(1, n_layers):
        f[layer, changed] = float(rng.uniform(0.55, 0.9) if layer < moved else rng.uniform(0, 0.4))
        if layer < moved:
            f[layer, -1] = float(rng.uniform(0.0, 0.45))
        elif layer <= moved + 1:  # more than half, but its raw value still under C / 2
            f[layer, -1] = float(rng.uniform(0.52, raw_line - 0.02))
        else:
            f[layer, -1] = float(rng.uniform(raw_line + 0.05, 1.0))
    v = np.round(corrupt + f * (clean - corrupt), 1)
    tokens = tuple(str(w) for w in rng.choice(WORDS, size=n_pos - 1, replace=False)) + (".",)
    return build(tokens, v, clean, corrupt, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE_TOKENS, SOURCE["values"], SOURCE["clean"], SOURCE["corrupt"], None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 26, "Fractions (v − c)/(C − c); where the answer comes back.", _make,
                    has_source=False)
