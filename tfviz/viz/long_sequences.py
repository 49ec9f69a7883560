"""Lesson 17's charts: masks as grids (a pattern, or what it joins after L layers), what a
token has read after 1..L layers, cost curves with n² and n·w references, the what-if's
attention maps and Linformer's maps and errors.

The what-if's maps and Linformer's views hold every layer and head at once, with layer and
head sliders under the chart (``tfviz.viz.kit.instant``): choosing what to look at repaints in the
browser, with no script run. What changes the computation (the pattern, k) stays a widget of
the page.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, n as nominal, o, q, tip, view
from tfviz.viz.kit.instant import layer_head, constant, heat_layer, packed, rounded, unpack
from tfviz.viz.kit.maps import cells, map_pair, map_rows, view_filter
from tfviz.viz.kit.style import CATEGORICAL, token_labels

PAIR = [CATEGORICAL[5], CATEGORICAL[0]]  # vermillion, then blue: the two lines of a cost or error chart
ALLOWED, BLOCKED = "#1f4e79", "#f2f2f2"  # a mask grid's cells
REACHED, UNREACHED = "#c0392b", "#dddddd"
VIEW = ("layer", "head")


def mask_chart(mask: np.ndarray, title: str, size: int = 220) -> dict:
    """A boolean (n, n) mask: dark = the query (row) may read the key (column). The cells
    travel packed in one row (``instant.packed``): a 64-token grid is 4,096 cells."""
    n_rows, n_cols = mask.shape
    cells_drawn = view("rect", transform=unpack(n_cols),
                       x=o("col", axis=None), y=o("row", axis=None),
                       color=colour("allowed", [False, True], [BLOCKED, ALLOWED], legend=None),
                       tooltip=tip({"field": "row", "title": "query"}, {"field": "col", "title": "key"},
                                   "allowed"))
    cells_drawn["transform"].append({"calculate": "datum.v > 0", "as": "allowed"})
    allowed = int(np.asarray(mask).sum())
    return chart(cells_drawn, title=title, width=size, height=size,
                 rows=[{"v": packed(np.asarray(mask, dtype=float))}],
                 description=f"{title}: a grid of {n_rows} queries (rows) by {n_cols} keys "
                             f"(columns); {allowed} of the {n_rows * n_cols} pairs may read.")


def reach_chart(rows: np.ndarray, query: int | None = None) -> dict:
    """(L, n) bool rows: which positions token ``query`` (default: the last) has read after
    1..L layers, one row per number of layers, so the growth reads from top to bottom."""
    L, n = rows.shape
    query = n - 1 if query is None else query
    data = [{"layers": l + 1, "position": p, "reached": "yes" if rows[l, p] else "no"}
            for l in range(L) for p in range(n)]
    grid = view({"type": "rect", "stroke": "white", "strokeWidth": 1},
                x=o("position", axis={"labelOverlap": True,
                                      "title": f"position (the query is position {query})"}),
                y=o("layers", "after layers"),
                color=colour("reached", ["no", "yes"], [UNREACHED, REACHED],
                             legend={"title": "reached"}),
                tooltip=tip("layers", "position", "reached"))
    # a fixed step per row, not a fixed height: the axes and their labels come on top of the
    # rows instead of squeezing them (presenter view's 24 px labels left the rows no room)
    return chart(grid, rows=data, width=600, height={"step": 22},
                 description=f"Which of {n} positions token {query} has read after 1 to {L} layers: "
                             + ", ".join(f"{int(r.sum())} after {l + 1}" for l, r in enumerate(rows))
                             + ".")


CURVES = ["measured", "reference ∝ n²", "reference ∝ n·w"]


def cost_chart(ns: Sequence[int], full: Sequence[float], window: Sequence[float],
               quantity: str = "time (ms)") -> dict:
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
    x, y = q("n", "sequence length n"), q("value", quantity)
    kind = colour("kind", ["full", "sliding window"], PAIR, title=None)
    lines = view("line", x=x, y=y, color=kind, detail=nominal("curve"),
                 strokeDash=nominal("curve", None, sort=CURVES,
                                    scale={"domain": CURVES, "range": [[1, 0], [6, 4], [2, 3]]}),
                 tooltip=tip("n", "value:.3f", "kind", "curve"))
    points = view({"type": "point", "filled": True}, x=x, y=y, color=kind,
                  transform=[{"filter": "datum.curve == 'measured'"}])
    return chart({"layer": [lines, points]}, rows=rows, width=420, height=260,
                 description=f"Measured {quantity} of full and sliding-window attention at n = "
                             f"{', '.join(str(int(n)) for n in ns)}, with dashed references ∝ n² "
                             "and ∝ n·w.")


def whatif_maps(full: np.ndarray, sparse: np.ndarray, tokens: Sequence[str], pattern: str, *,
                layer: int = 0, head: int = 0) -> dict:
    """The what-if's attention maps, full attention beside the chosen ``pattern``: ``full``
    and ``sparse`` are the two runs' weights (layers, heads, n, n); the layer and head sliders
    under the chart pick the map shown. Rows are queries, columns keys."""
    n_layers, n_heads, n, _ = full.shape
    if sparse.shape != full.shape:
        raise ValueError("the two runs must cover the same layers, heads and tokens")
    maps = map_pair(("full", "sparse"), ("full", pattern), n,
                    title={"text": {"expr": "'Layer ' + layer + ', head ' + head + "
                                            f"': full attention and {pattern}'"}})
    return chart(maps, params=layer_head(n_layers, n_heads, layer, head),
                 tokens=token_labels(tokens), marks=cells(n, 2),
                 datasets={"full": map_rows(full, *VIEW), "sparse": map_rows(sparse, *VIEW)},
                 description=f"One head's attention weights as the trained model reads the text "
                            f"with full attention and through the {pattern} pattern, queries as "
                            "rows and keys as columns; the layer and head sliders pick the head.",
                            own_size=True)


ERROR_NAMES = ["mean-pooled keys and values (untrained)", "closest rank-k map (truncated SVD)"]


def linformer_views(maps: np.ndarray, pooled: np.ndarray, best: np.ndarray,
                    tokens: Sequence[str], *, layer: int = 0, head: int = 0) -> dict:
    """Linformer on every layer and head, picked by the sliders under the chart: each query's
    weights over the k pooled rows of keys (``maps``, (layers, heads, n, k)), then the
    relative output error of the layer against k = 1..n (``pooled`` for mean-pooled keys and
    values, ``best`` for the closest rank-k map; each (layers, n)), the chosen k marked."""
    n_layers, n_heads, n, k = maps.shape
    heat = heat_layer(k, n, x_title="pooled row (k of them, in order)", y_title="query",
                      value_title="weight", x_labels="pooled",
                      before=[view_filter(*VIEW), *unpack(k)], masked=False)
    heat["title"] = {"text": {"expr": "'Layer ' + layer + ', head ' + head + ': each query\\'s "
                                      f"weights over the k = {k} pooled rows'"}}
    heat = {"data": {"name": "maps"}, **heat}
    errs = [{"layer": l, "k": kk + 1, "error": e, "method": name}
            for l in range(n_layers)
            for name, errors in zip(ERROR_NAMES, (pooled, best))
            for kk, e in enumerate(rounded(errors[l]))]
    x = q("k", "projected rows k", axis={"tickMinStep": 1, "format": "d"})
    y = q("error", "relative error")
    method = colour("method", ERROR_NAMES, PAIR, title=None,
                    legend={"orient": "bottom", "labelLimit": 400})
    lines = view({"type": "line", "point": True}, data="errors", x=x, y=y, color=method,
                 transform=[view_filter("layer")], tooltip=tip("k", "error:.3f", "method"))
    chosen = view({"type": "rule", "strokeDash": [4, 4], "color": "#555"}, data="chosen", x=x,
                  tooltip=tip({"field": "k", "title": "k on the map"}))
    said = ("'Layer ' + layer + ' at k = " + str(k) + ": pooled ' + format(at[layer][0], '.3f') + "
            "', closest rank-k ' + format(at[layer][1], '.3f')")
    errors = {"layer": [lines, chosen], "width": 420, "height": 300,
              "title": {"text": {"expr": f"['Relative output error of the layer against k', {said}]"}}}
    at = [[float(pooled[l, k - 1]), float(best[l, k - 1])] for l in range(n_layers)]
    return chart({"vconcat": [heat, errors], "spacing": 30,
                 "resolve": {"scale": {"color": "independent"}}},
                 params=[*layer_head(n_layers, n_heads, layer, head),
                        constant("pooled", [str(i) for i in range(k)]), constant("at", at)],
                 tokens=token_labels(tokens), marks=n * k + 4 * n,
                 datasets={"maps": [{"layer": l, "head": h, "v": packed(maps[l, h])}
                                   for l in range(n_layers) for h in range(n_heads)],
                          "errors": errs, "chosen": [{"k": k}]},
                 description=f"Linformer with keys and values mean-pooled to k = {k} rows: each "
                            "query's weights over the pooled rows for the chosen layer and head, "
                            "then the layer's relative output error against k for mean-pooling "
                            "and for the closest rank-k map.", own_size=True)
