"""Lesson 17's charts: masks as grids (a pattern, or what it joins after L layers), what a
token has read after 1..L layers, cost curves with n² and n·w references, attention maps side by
side, and Linformer's maps and errors."""
from __future__ import annotations

from typing import Sequence

import pandas  # noqa: F401  (before altair: see tfviz.ui.warmup)
import altair as alt
import numpy as np

from tfviz.viz.style import CATEGORICAL, token_labels

PAIR = [CATEGORICAL[5], CATEGORICAL[0]]  # vermillion, then blue: the two lines of a cost or error chart


def mask_chart(mask: np.ndarray, title: str, size: int = 220) -> alt.Chart:
    """A boolean (n, n) mask: dark = the query (row) may read the key (column)."""
    i, j = np.indices(mask.shape)
    rows = [{"query": int(a), "key": int(b), "allowed": bool(m)}
            for a, b, m in zip(i.ravel(), j.ravel(), mask.ravel())]
    return alt.Chart(alt.Data(values=rows), title=title).mark_rect().encode(
        x=alt.X("key:O", axis=None), y=alt.Y("query:O", axis=None),
        color=alt.Color("allowed:N", scale=alt.Scale(domain=[False, True],
                                                     range=["#f2f2f2", "#1f4e79"]), legend=None),
        tooltip=["query:Q", "key:Q", "allowed:N"]).properties(width=size, height=size)


def reach_chart(rows: np.ndarray, query: int | None = None) -> alt.Chart:
    """(L, n) bool rows: which positions token ``query`` (default: the last) has read after
    1..L layers, one row per number of layers, so the growth reads from top to bottom."""
    L, n = rows.shape
    query = n - 1 if query is None else query
    data = [{"layers": l + 1, "position": p, "reached": "yes" if rows[l, p] else "no"}
            for l in range(L) for p in range(n)]
    return alt.Chart(alt.Data(values=data)).mark_rect(stroke="white", strokeWidth=1).encode(
        x=alt.X("position:O", axis=alt.Axis(labelOverlap=True,
                                            title=f"position (the query is position {query})")),
        y=alt.Y("layers:O", title="after layers"),
        color=alt.Color("reached:N", scale=alt.Scale(domain=["no", "yes"], range=["#dddddd", "#c0392b"]),
                        legend=alt.Legend(title="reached")),
        # a fixed step per row, not a fixed height: the axes and their labels come on top of the
        # rows instead of squeezing them (presenter view's 24 px labels left the rows no room)
        tooltip=["layers:Q", "position:Q", "reached:N"]).properties(
        width=600, height=alt.Step(22),
        description=f"Which of {n} positions token {query} has read after 1 to {L} layers: "
                    + ", ".join(f"{int(r.sum())} after {l + 1}" for l, r in enumerate(rows)) + ".")


def cost_chart(ns: Sequence[int], full: Sequence[float], window: Sequence[float],
               quantity: str = "time (ms)") -> alt.Chart:
    """Measured ``quantity`` of full and window attention against n (solid, with points), and
    dashed references ∝ n² and ∝ n·w (w fixed, so ∝ n), each scaled to pass through its own
    measured point at the largest n."""
    last = float(max(ns))
    grid = np.linspace(min(ns), last, 24)
    rows = [{"n": int(n), "value": float(t), "kind": kind, "curve": "measured"}
            for kind, ts in (("full", full), ("sliding window", window)) for n, t in zip(ns, ts)]
    for kind, ts, power, name in (("full", full, 2, "reference ∝ n²"),
                                  ("sliding window", window, 1, "reference ∝ n·w")):
        top = float(ts[list(ns).index(max(ns))])
        rows += [{"n": float(n), "value": top * (n / last) ** power, "kind": kind, "curve": name}
                 for n in grid]
    curves = ["measured", "reference ∝ n²", "reference ∝ n·w"]
    return (alt.Chart(alt.Data(values=rows)).mark_line().encode(
        x=alt.X("n:Q", title="sequence length n"), y=alt.Y("value:Q", title=quantity),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=["full", "sliding window"],
                                                              range=PAIR)),
        strokeDash=alt.StrokeDash("curve:N", title=None, sort=curves,
                                  scale=alt.Scale(domain=curves, range=[[1, 0], [6, 4], [2, 3]])),
        detail="curve:N", tooltip=["n:Q", alt.Tooltip("value:Q", format=".3f"), "kind:N", "curve:N"]
    ).properties(width=420, height=260) + alt.Chart(alt.Data(values=[
        r for r in rows if r["curve"] == "measured"])).mark_point(filled=True).encode(
        x="n:Q", y="value:Q", color="kind:N")).properties(
        description=f"Measured {quantity} of full and sliding-window attention at n = "
                    f"{', '.join(str(int(n)) for n in ns)}, with dashed references ∝ n² and ∝ n·w.")


def attention_map(weights: np.ndarray, tokens: Sequence[str], title: str) -> alt.Chart:
    """(n, n) attention weights, queries as rows and keys as columns, labelled "i token"; a
    fixed step per row (24 px for a sentence, smaller for a long text); labels up to 23 tokens."""
    labels = token_labels(tokens)
    n = weights.shape[0]
    rows = [{"query": labels[i], "key": labels[j], "weight": round(float(weights[i, j]), 4)}
            for i in range(n) for j in range(n)]
    # a fixed step per row and column, not the container's width, and 24 px while there are
    # labels: presenter view's 24 px labels then get 36 px each instead of running into each
    # other. From 24 tokens on the cells shrink, and the tooltips name the tokens instead.
    labelled = n <= 23
    axis = alt.Axis(labels=labelled, ticks=labelled, labelLimit=90, labelOverlap=False)
    step = alt.Step(max(3, min(24, 560 // n)))
    return alt.Chart(alt.Data(values=rows), title=title).mark_rect().encode(
        x=alt.X("key:N", sort=labels, axis=axis, title="key"),
        y=alt.Y("query:N", sort=labels, axis=axis, title="query"),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=["query:N", "key:N", "weight:Q"]).properties(width=step, height=step)


def linformer_chart(maps: np.ndarray, tokens: Sequence[str]) -> alt.Chart:
    """(n, k) weights of each query over the k pooled rows of keys."""
    labels = token_labels(tokens)
    rows = [{"query": labels[i], "row": int(r), "weight": round(float(maps[i, r]), 4)}
            for i in range(maps.shape[0]) for r in range(maps.shape[1])]
    return alt.Chart(alt.Data(values=rows)).mark_rect().encode(
        x=alt.X("row:O", title="pooled row (k of them, in order)"),
        y=alt.Y("query:N", sort=labels, title="query"),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues")),
        tooltip=["query:N", "row:Q", "weight:Q"]).properties(
        width=300, description=f"Weights of each of {maps.shape[0]} queries over the "
                               f"{maps.shape[1]} pooled rows of keys.")


def error_chart(ks: Sequence[int], pooled: Sequence[float], best: Sequence[float]) -> alt.Chart:
    """Relative output error against k: K and V mean-pooled to k rows (Linformer's shape,
    untrained) and the closest rank-k map."""
    names = ["mean-pooled keys and values (untrained)", "closest rank-k map (truncated SVD)"]
    rows = [{"k": int(k), "error": float(e), "method": name}
            for name, errs in zip(names, (pooled, best)) for k, e in zip(ks, errs)]
    return alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=alt.X("k:Q", title="projected rows k", axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("error:Q", title="relative error"),
        color=alt.Color("method:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400),
                        scale=alt.Scale(domain=names, range=PAIR)),
        tooltip=["k:Q", alt.Tooltip("error:Q", format=".3f"), "method:N"]
    ).properties(width=420, height=340,
                 description=f"Relative output error against k = {', '.join(str(int(k)) for k in ks)}: "
                             "mean-pooled keys and values, and the closest rank-k map.")
