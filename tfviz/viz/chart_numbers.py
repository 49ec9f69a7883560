"""The numbers behind a chart, as tables: each matrix a chart draws, named, with the labels of
its rows and columns. A chart's text alternative is not only its name (``style.described``):
its numbers must be reachable without seeing it (WCAG 2.2 AA, 1.1.1), and a screen reader
reads a table cell by cell. ``tfviz.ui.chart_numbers`` draws one of them at a time.

>>> [m.name for m in heads("encoder self-attention", np.zeros((1, 2, 3, 3)), "abc", "abc")]
['encoder self-attention · layer 0, head 0', 'encoder self-attention · layer 0, head 1']
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.viz.style import token_labels


@dataclass(frozen=True)
class Numbers:
    """One matrix as a table: ``values`` (rows, cols), masked cells as nan."""
    name: str
    values: np.ndarray
    rows: tuple[str, ...]
    cols: tuple[str, ...]


def unique(labels: Sequence[str]) -> tuple[str, ...]:
    """Labels made distinct for a table's header (a repeated token gets " (2)", " (3)"...).

    >>> unique(["a", "b", "a", "a"])
    ('a', 'b', 'a (2)', 'a (3)')
    """
    seen: dict[str, int] = {}
    out = []
    for label in map(str, labels):
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return tuple(out)


def matrix(name: str, values, rows: Sequence[str], cols: Sequence[str]) -> Numbers:
    values = np.asarray(values, dtype=float)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"{name}: {values.shape} values for {len(rows)} × {len(cols)} labels")
    return Numbers(name, values, unique(rows), unique(cols))


def heads(name: str, maps: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> list[Numbers]:
    """Attention maps (layers, heads, rows, cols), one table per layer and head, labelled as
    the charts label tokens ("0 h", "1 e", ...)."""
    maps = np.asarray(maps)
    rows, cols = token_labels(rows), token_labels(cols)
    return [matrix(f"{name} · layer {layer}, head {head}", maps[layer, head], rows, cols)
            for layer in range(maps.shape[0]) for head in range(maps.shape[1])]


def forward_walk(steps_by_head: Sequence[Sequence]) -> list[Numbers]:
    """Every step of the forward walk (``tfviz.analysis.forward.forward_steps`` for each head,
    as lesson 12 draws them): a step that differs by head (its attention) once per head,
    every other step once, numbered as the chart's Step slider counts."""
    first = steps_by_head[0]
    out = []
    for i, step in enumerate(first):
        same = all(np.array_equal(s[i].values, step.values, equal_nan=True) for s in steps_by_head[1:])
        for s in ([step] if same else [steps[i] for steps in steps_by_head]):
            out.append(matrix(f"{i + 1} · {s.title} {s.shape}", s.values, s.rows, s.cols))
    return out


def encoder(patterns: np.ndarray, memory: np.ndarray, tokens: Sequence[str]) -> list[Numbers]:
    """Lesson 13's encoder chart: each layer's and head's self-attention (n × n), then the
    memory (n × d)."""
    labels = token_labels(tokens)
    return [*heads("encoder self-attention", patterns, tokens, tokens),
            matrix(f"memory (n × d = {len(labels)} × {memory.shape[1]})", memory, labels,
                   [f"d{j}" for j in range(memory.shape[1])])]


def decoder(self_maps: np.ndarray, cross_maps: np.ndarray, dec_tokens: Sequence[str],
            src_tokens: Sequence[str]) -> list[Numbers]:
    """Lesson 13's decoder chart: the rows every step added to each head's self-attention
    (t × t, empty above the diagonal) and cross-attention (t × n)."""
    return [*heads("decoder self-attention", self_maps, dec_tokens, dec_tokens),
            *heads("cross-attention", cross_maps, dec_tokens, src_tokens)]
