"""Attention as a soft dictionary lookup, on a toy table small enough to check by hand.

A hashtable compares the query with each key and returns the ONE value whose key matches.
Attention scores every key against the query (a dot product), turns the scores into weights
with softmax, and returns the weighted mix of ALL values:

    weights = softmax(q·k_j / τ)        output = Σ_j weights_j v_j

τ (the temperature) sets how sharp the weights are. As τ shrinks, the best-matching key takes
all the weight and the soft lookup becomes the hashtable's hard one.

>>> keys = np.array([[1.0, 0.0], [0.0, 1.0]]); values = np.array([[10.0], [20.0]])
>>> r = soft_lookup(np.array([0.0, 0.0]), keys, values)
>>> r.weights.tolist(), r.output.tolist()       # no preference: an even mix
([0.5, 0.5], [15.0])
>>> hard_lookup(np.array([2.0, 0.0]), keys, values).output.tolist()
[10.0]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.reference import softmax


@dataclass(frozen=True)
class ToyTable:
    """A tiny "dictionary": named entries, a 2-d key and a value vector for each."""

    names: tuple[str, ...]
    keys: np.ndarray  # (n, 2)
    values: np.ndarray  # (n, m)
    value_names: tuple[str, ...]


def toy_table() -> ToyTable:
    """Four animals and machines. Keys place them in a 2-d "meaning" plane; values are facts.

    The values are (legs, wheels), so a blend is easy to read: half cat and half car has
    2 legs and 2 wheels.
    """
    return ToyTable(
        names=("cat", "bird", "car", "bike"),
        keys=np.array([[1.0, 0.3], [0.6, 1.0], [-1.0, 0.2], [-0.4, -1.0]]),
        values=np.array([[4.0, 0.0], [2.0, 0.0], [0.0, 4.0], [0.0, 2.0]]),
        value_names=("legs", "wheels"),
    )


@dataclass(frozen=True)
class Lookup:
    scores: np.ndarray  # (n,) q·k_j
    weights: np.ndarray  # (n,) sum to 1
    output: np.ndarray  # (m,) weights @ values

    @property
    def best(self) -> int:
        """The entry with the largest weight (the first of equal ones): a hard lookup's answer."""
        return int(np.argmax(self.weights))


def scores(query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """q·k_j for every key: (n, dk) keys, (dk,) query -> (n,)."""
    return np.asarray(keys, dtype=np.float64) @ np.asarray(query, dtype=np.float64)


def soft_lookup(query, keys, values, temperature: float = 1.0) -> Lookup:
    """Attention for one query: softmax(q·k / τ) weights, then the weighted mix of values."""
    if not temperature > 0:
        raise ValueError("temperature must be positive")
    s = scores(query, keys)
    w = softmax(s, temperature=temperature)
    return Lookup(s, w, w @ np.asarray(values, dtype=np.float64))


def hard_lookup(query, keys, values) -> Lookup:
    """The hashtable's answer: all weight on the best-matching key (the first one on a tie)."""
    s = scores(query, keys)
    w = one_hot_of_best(s)
    return Lookup(s, w, w @ np.asarray(values, dtype=np.float64))


def temperature_sweep(query, keys, values, temperatures) -> list[dict]:
    """For each τ: the weight on the best key and how far the soft answer is from the hard one.

    >>> keys = np.array([[1.0, 0.0], [0.0, 1.0]]); values = np.array([[10.0], [20.0]])
    >>> rows = temperature_sweep(np.array([1.0, 0.0]), keys, values, [100.0, 0.01])
    >>> [round(r["weight on best key"], 3) for r in rows]
    [0.502, 1.0]
    """
    hard = hard_lookup(query, keys, values)
    best = int(np.argmax(hard.weights))
    rows = []
    for t in temperatures:
        soft = soft_lookup(query, keys, values, float(t))
        rows.append({"temperature": float(t), "weight on best key": float(soft.weights[best]),
                     "distance from hard answer": float(np.linalg.norm(soft.output - hard.output))})
    return rows


def one_hot_of_best(weights) -> np.ndarray:
    """The hashtable version of a row of attention weights: 1 on the largest, 0 elsewhere."""
    w = np.asarray(weights, dtype=np.float64)
    out = np.zeros_like(w)
    out[int(np.argmax(w))] = 1.0
    return out


def effective_count(weights) -> float:
    """How many values a weighting really mixes: 1 / Σ w².

    One-hot -> 1 (a hashtable); an even mix of n values -> n.

    >>> effective_count([1.0, 0.0, 0.0]), effective_count([0.25] * 4)
    (1.0, 4.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    return float(1.0 / np.sum(w * w))


def effective_counts(weights) -> np.ndarray:
    """``effective_count`` of every row (the last axis) at once, e.g. of a stack of attention
    maps (layers, heads, query, key) -> (layers, heads, query).

    >>> effective_counts([[1.0, 0.0], [0.5, 0.5]]).tolist()
    [1.0, 2.0]
    """
    w = np.asarray(weights, dtype=np.float64)
    return 1.0 / np.sum(w * w, axis=-1)
