"""Lesson 17's charts: masks as grids, the receptive field after 1..L layers, cost curves and
Linformer's k×n maps."""
from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np


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


def reach_chart(rows: np.ndarray) -> alt.Chart:
    """(L, n) bool rows: which positions the last token reaches after 1..L layers, one row per
    number of layers, so the growth reads from top to bottom."""
    L, n = rows.shape
    data = [{"layers": l + 1, "position": p, "reached": "yes" if rows[l, p] else "no"}
            for l in range(L) for p in range(n)]
    return alt.Chart(alt.Data(values=data)).mark_rect(stroke="white", strokeWidth=1).encode(
        x=alt.X("position:O", axis=alt.Axis(labelOverlap=True, title="position (the last one is the query)")),
        y=alt.Y("layers:O", title="after layers"),
        color=alt.Color("reached:N", scale=alt.Scale(domain=["no", "yes"], range=["#dddddd", "#c0392b"]),
                        legend=alt.Legend(title="reached")),
        # a fixed step per row, not a fixed height: the axes and their labels come on top of the
        # rows instead of squeezing them (presenter view's 24 px labels left the rows no room)
        tooltip=["layers:Q", "position:Q", "reached:N"]).properties(width=600, height=alt.Step(22))


def cost_chart(ns: Sequence[int], full_ms: Sequence[float], window_ms: Sequence[float]) -> alt.Chart:
    rows = [{"n": int(n), "ms": float(t), "kind": kind}
            for kind, ts in (("full (n²)", full_ms), ("sliding window (n·w)", window_ms))
            for n, t in zip(ns, ts)]
    return alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=alt.X("n:Q", title="sequence length n"), y=alt.Y("ms:Q", title="time (ms)"),
        color=alt.Color("kind:N", title=None), tooltip=["n:Q", "ms:Q", "kind:N"]
    ).properties(width=500, height=260)


def linformer_chart(maps: np.ndarray, tokens: Sequence[str]) -> alt.Chart:
    """(n, k) weights of each query over the k projected rows."""
    rows = [{"query": f"{i}:{tokens[i]}" if i < len(tokens) else str(i), "row": int(r),
             "weight": round(float(maps[i, r]), 4)}
            for i in range(maps.shape[0]) for r in range(maps.shape[1])]
    order = [r["query"] for r in rows[::maps.shape[1]]]
    return alt.Chart(alt.Data(values=rows)).mark_rect().encode(
        x=alt.X("row:O", title="projected row (k)"),
        y=alt.Y("query:N", sort=order, title="query"),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues")),
        tooltip=["query:N", "row:Q", "weight:Q"]).properties(width=300)


def error_chart(ks: Sequence[int], errors: Sequence[float]) -> alt.Chart:
    rows = [{"k": int(k), "error": float(e)} for k, e in zip(ks, errors)]
    return alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=alt.X("k:Q", title="projected rows k", axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("error:Q", title="relative error"),
        tooltip=["k:Q", "error:Q"]).properties(width=400, height=220)
