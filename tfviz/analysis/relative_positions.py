"""Lesson 3's two relative schemes on trained models: Shaw et al.'s distance vectors and T5's
bucket biases, and the distance each head came to prefer.

Pure numpy: it reads exported weights (``Bundle.weights()``: ``rel_K``, ``rel_V``,
``rel_pos_bias``) and the ``hook_rel_scores`` of a trace; T5's buckets are
:func:`tfviz.reference.t5_bucket`. Distances are j − i, query i reading key j, so a key three
tokens back is at −3; a decoder reads only j − i ≤ 0.

Shaw et al.: the part of a score that comes from distance alone is q_i · a^K_{j−i} / √d_k. It
depends on the query, so a head's taste for a distance is that term averaged over many
(query, key) pairs at that distance (:func:`shaw_preferences`). T5: the bias b_h(bucket) is
the same for every query, so the table itself says what each head prefers
(:func:`t5_preferences`).

>>> layout = bucket_layout(8, 20, bidirectional=False)  # 4 exact buckets, then log-spaced
>>> layout.labels
('0', '1 back', '2 back', '3 back', '4–5 back', '6–8 back', '9–13 back', '≥ 14 back')
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.reference import t5_bucket


# ----- Shaw et al. ---------------------------------------------------------------------------
@dataclass(frozen=True)
class DistanceRows:
    """Shaw et al.'s tables of one model: a key and a value vector per clipped distance, per
    layer (shared by the layer's heads)."""

    clip: int  # k: row r holds distance r − k
    distances: np.ndarray  # (2k + 1,) j − i of each row, −k … k
    keys: np.ndarray  # (L, 2k + 1, d_head) a^K
    values: np.ndarray  # (L, 2k + 1, d_head) a^V
    used: np.ndarray  # (2k + 1,) bool: a distance training could have read
    mean_abs_used: float  # mean |entry| of a^K and a^V over the used rows, every layer
    mean_abs_unused: float  # the same over the rest (nan if every row was used)

    @property
    def some_unused(self) -> bool:
        """Whether training left some distance's rows unread."""
        return not self.used.all()

    @property
    def used_from(self) -> str:
        """The nearest-to-the-top used distance, as the page writes it ("−16")."""
        return signed(int(self.distances[self.used][0]))

    @property
    def used_to(self) -> str:
        return signed(int(self.distances[self.used][-1]))


def reached_distances(clip: int, causal: bool, farthest: int) -> np.ndarray:
    """(2k + 1,) bool: which rows clip(j − i, −k, k) a model could read in training, when its
    longest input put keys at most ``farthest`` places from a query. A decoder never reads a
    key after its query (j − i > 0); the edge rows ±k are read by every distance from k on.

    >>> reached_distances(3, causal=True, farthest=2).astype(int).tolist()   # −3 … 3
    [0, 1, 1, 1, 0, 0, 0]
    """
    d = np.arange(-clip, clip + 1)
    near = np.abs(d) <= min(farthest, clip)
    return near & (d <= 0) if causal else near


def shaw_rows(weights: Mapping[str, np.ndarray], clip: int, causal: bool, farthest: int,
              prefix: str = "") -> DistanceRows:
    """The tables ``rel_K``, ``rel_V`` (L, 2k + 1, d_head) of exported weights, with the rows
    training reached (``farthest``: the longest distance in its inputs, positions_trained − 1)."""
    keys = np.asarray(weights[prefix + "rel_K"], dtype=np.float64)
    values = np.asarray(weights[prefix + "rel_V"], dtype=np.float64)
    used = reached_distances(clip, causal, farthest)
    both = np.concatenate([keys, values], axis=-1)  # (L, 2k + 1, 2 d_head)
    unused = np.abs(both[:, ~used]).mean() if (~used).any() else float("nan")
    return DistanceRows(clip, np.arange(-clip, clip + 1), keys, values, used,
                        float(np.abs(both[:, used]).mean()), float(unused))


@dataclass(frozen=True)
class HeadPreference:
    """Where one head's position term (Shaw) or bias (T5) is highest and lowest."""

    layer: int | None  # None: T5's one table serves every layer
    head: int
    best: int  # j − i of the favourite distance (T5: the nearest of its bucket)
    best_label: str  # "3 back", "16–18 back", "the token itself"
    best_value: float  # its mean position term, or its bias
    worst: int
    worst_label: str
    worst_value: float


def signed(d: int) -> str:
    """A distance with a real minus sign: "−3", "0", "+2".

    >>> signed(-3), signed(0), signed(2)
    ('−3', '0', '+2')
    """
    return "0" if d == 0 else f"{'−' if d < 0 else '+'}{abs(d)}"


def distance_label(d: int) -> str:
    """"the token itself", "1 back", "2 ahead".

    >>> distance_label(0), distance_label(-3), distance_label(2)
    ('the token itself', '3 back', '2 ahead')
    """
    return "the token itself" if d == 0 else f"{abs(d)} {'back' if d < 0 else 'ahead'}"


@dataclass(frozen=True)
class DistancePreference:
    """Each head's mean position term q_i · a^K_{j−i} / √d_k by distance, over many pairs."""

    distances: np.ndarray  # (n,) j − i of each column (clipped: ±k stands for ±k and farther)
    mean: np.ndarray  # (L, H, n) mean term over the pairs at that distance (nan: none)
    pairs: np.ndarray  # (n,) how many (query, key) pairs each mean is over
    best: tuple[HeadPreference, ...]  # one per (layer, head), layer by layer

    def pairs_at(self, distance: int) -> int:
        """How many pairs the means at ``distance`` (j − i) are over."""
        return int(self.pairs[list(self.distances).index(distance)])


def shaw_preferences(rel_scores: np.ndarray, lengths: Sequence[int], clip: int, causal: bool,
                     divisor: float, min_pairs: int = 1) -> DistancePreference:
    """Average each head's position term by clipped distance over every (query, key) pair of a
    batch of texts: ``rel_scores`` (L, B, H, T, T) is the trace's ``hook_rel_scores`` (q · a^K,
    before the scale) of B texts padded to T, ``lengths`` their real lengths. Divided by
    ``divisor`` (√d_k, or 1 unscaled), the numbers are in the units the softmax reads.

    A causal model's pairs are j ≤ i; an encoder's every pair. The favourite distance of a head
    is the one with the highest mean, among distances with at least ``min_pairs`` pairs.

    One layer, one head, one text of 2 tokens, k = 1: pairs (0,0), (1,1) at 0 and (1,0) at −1.

    >>> s = np.array([[[[[1.0, 0.0], [4.0, 3.0]]]]])   # (L, B, H, T, T)
    >>> p = shaw_preferences(s, [2], clip=1, causal=True, divisor=1.0)
    >>> p.distances.tolist(), p.mean[0, 0].tolist(), p.pairs.tolist(), p.best[0].best
    ([-1, 0], [4.0, 2.0], [1, 2], -1)
    """
    rel = np.asarray(rel_scores, dtype=np.float64) / divisor  # (L, B, H, T, T)
    L, B, H, T, _ = rel.shape
    distances = np.arange(-clip, 1 if causal else clip + 1)  # (n,)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    column = np.clip(j - i, -clip, clip) + clip  # (T, T): index into −k … k
    sums = np.zeros((L, H, 2 * clip + 1))
    counts = np.zeros(2 * clip + 1, dtype=np.int64)
    for b, n in enumerate(lengths):
        real = (i < n) & (j < n) & ((j <= i) if causal else True)  # (T, T)
        cols = column[real]  # (pairs,)
        counts += np.bincount(cols, minlength=2 * clip + 1)
        for layer in range(L):
            for h in range(H):
                sums[layer, h] += np.bincount(cols, weights=rel[layer, b, h][real],
                                              minlength=2 * clip + 1)
    keep = distances + clip  # (n,) the columns this model reads
    counts = counts[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums[:, :, keep] / counts  # (L, H, n)
    ok = counts >= min_pairs
    best = []
    for layer in range(L):
        for h in range(H):
            row = np.where(ok, mean[layer, h], np.nan)
            hi, lo = int(np.nanargmax(row)), int(np.nanargmin(row))
            best.append(HeadPreference(layer, h, int(distances[hi]), _clipped(distances[hi], clip),
                                       float(row[hi]), int(distances[lo]),
                                       _clipped(distances[lo], clip), float(row[lo])))
    return DistancePreference(distances, mean, counts, tuple(best))


def _clipped(d: int, clip: int) -> str:
    """A distance's words, "16 or more back" at the clip."""
    word = distance_label(int(d))
    return word.replace(f"{clip} ", f"{clip} or more ", 1) if abs(d) == clip else word


# ----- T5 ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BucketLayout:
    """Which distances share each of T5's buckets."""

    n_buckets: int
    max_distance: int
    bidirectional: bool
    nearest: np.ndarray  # (n_buckets,) j − i of the bucket's distance nearest the query
    farthest: np.ndarray  # (n_buckets,) its farthest (the last bucket of a direction: open)
    open_ended: np.ndarray  # (n_buckets,) bool: every distance from ``nearest`` on
    empty: np.ndarray  # (n_buckets,) bool: no distance falls in it (an encoder's "0 ahead")
    labels: tuple[str, ...]  # "0", "3 back", "16–18 back", "≥ 113 back", "2 ahead", "none"


def bucket_layout(n_buckets: int, max_distance: int, bidirectional: bool) -> BucketLayout:
    """T5's buckets named by the distances in them, read off :func:`tfviz.reference.t5_bucket`
    for every distance up to one past ``max_distance`` either way. A decoder's bucket 0 also
    holds every key after the query (masked: it never reads them), so only its 0 is named. The
    last bucket starts before max_distance (the formula rounds down): at 113 with T5's 32 and
    128. An encoder's first "ahead" bucket would hold distance 0, which belongs to the other
    half, so it stays empty, in T5 as here.

    >>> bucket_layout(8, 6, bidirectional=True).labels
    ('0', '1 back', '2–3 back', '≥ 4 back', 'none', '1 ahead', '2–3 ahead', '≥ 4 ahead')
    """
    span = np.arange(-(max_distance + 1), max_distance + 2)  # j − i, both ways
    buckets = t5_bucket(span, bidirectional, n_buckets, max_distance)
    nearest = np.zeros(n_buckets, dtype=np.int64)
    farthest = np.zeros(n_buckets, dtype=np.int64)
    empty = np.zeros(n_buckets, dtype=bool)
    labels = []
    for b in range(n_buckets):
        ds = span[(buckets == b) & ((span <= 0) | bidirectional)]  # a decoder's: j − i ≤ 0
        if not len(ds):
            empty[b] = True
            continue
        nearest[b], farthest[b] = ds[np.argmin(np.abs(ds))], ds[np.argmax(np.abs(ds))]
    open_ended = np.abs(farthest) == max_distance + 1  # reaches past the end we looked at
    for b in range(n_buckets):
        near, far = int(nearest[b]), int(farthest[b])
        side = "back" if near < 0 or far < 0 else "ahead"
        if empty[b]:
            labels.append("none")
        elif near == far == 0:
            labels.append("0")
        elif open_ended[b]:
            labels.append(f"≥ {abs(near)} {side}")
        elif near == far:
            labels.append(f"{abs(near)} {side}")
        else:
            labels.append(f"{abs(near)}–{abs(far)} {side}")
    return BucketLayout(n_buckets, max_distance, bidirectional, nearest, farthest, open_ended,
                        empty, tuple(labels))


def reached_buckets(layout: BucketLayout, farthest: int) -> np.ndarray:
    """(n_buckets,) bool: buckets holding a distance of at most ``farthest`` (the longest in
    training), which the model's training could have read."""
    return (np.abs(layout.nearest) <= farthest) & ~layout.empty


def t5_preferences(table: np.ndarray, layout: BucketLayout, farthest: int) -> tuple[HeadPreference, ...]:
    """Per head, the bucket with the largest and the smallest bias among those training reached
    (``table``: the exported ``rel_pos_bias``, (n_buckets, H)); ``best`` is the nearest
    distance of the bucket.

    >>> lay = bucket_layout(4, 3, bidirectional=False)   # 0, 1 back, 2 back, ≥ 3 back
    >>> [p.best_label for p in t5_preferences(np.array([[0.1], [0.9], [0.2], [5.0]]), lay, 2)]
    ['1 back']
    """
    table = np.asarray(table, dtype=np.float64)
    ok = reached_buckets(layout, farthest)
    out = []
    for h in range(table.shape[1]):
        col = np.where(ok, table[:, h], np.nan)
        hi, lo = int(np.nanargmax(col)), int(np.nanargmin(col))
        out.append(HeadPreference(None, h, int(layout.nearest[hi]), layout.labels[hi], float(col[hi]),
                                  int(layout.nearest[lo]), layout.labels[lo], float(col[lo])))
    return tuple(out)


def bias_by_distance(table: np.ndarray, distances: Sequence[int], bidirectional: bool,
                     max_distance: int) -> np.ndarray:
    """(H, n): the bias each head adds to a key at each distance j − i (its bucket's number).

    >>> bias_by_distance(np.array([[0.5], [1.0], [2.0], [3.0]]), [0, -1, -2, -7], False, 3).tolist()
    [[0.5, 1.0, 2.0, 3.0]]
    """
    table = np.asarray(table, dtype=np.float64)
    buckets = t5_bucket(np.asarray(distances), bidirectional, len(table), max_distance)  # (n,)
    return table[buckets].T  # (n, H) -> (H, n)


def preference_rows(prefs: Sequence[HeadPreference], value: str) -> list[dict]:
    """The preferences as table rows, ``value`` naming the number ("mean term", "bias"), rounded
    to 3 decimals as the page shows them; a T5 table's rows have no layer (one table for all).

    >>> preference_rows([HeadPreference(None, 0, -1, "1 back", 0.51234, -3, "3 back", -0.2)], "bias")
    [{'head': 0, 'favourite': '1 back', 'bias': 0.512, 'least favourite': '3 back', 'its bias': -0.2}]
    """
    rows = []
    for p in prefs:
        row = {} if p.layer is None else {"layer": p.layer}
        row.update({"head": p.head, "favourite": p.best_label, value: round(p.best_value, 3),
                    "least favourite": p.worst_label, f"its {value}": round(p.worst_value, 3)})
        rows.append(row)
    return rows


def favourite_counts(prefs: Sequence[HeadPreference]) -> dict[str, int]:
    """How many heads favour each distance, most common first (ties: nearer first).

    >>> favourite_counts([HeadPreference(0, h, d, l, 0, 0, "", 0) for h, (d, l) in
    ...                   enumerate([(-1, "1 back"), (-3, "3 back"), (-1, "1 back")])])
    {'1 back': 2, '3 back': 1}
    """
    counts: dict[str, tuple[int, int]] = {}
    for p in prefs:
        n, d = counts.get(p.best_label, (0, p.best))
        counts[p.best_label] = (n + 1, d)
    order = sorted(counts.items(), key=lambda kv: (-kv[1][0], abs(kv[1][1])))
    return {label: n for label, (n, _) in order}
