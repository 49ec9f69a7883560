"""Figures for "attention as soft lookup": the key plane, hard vs soft weights, the τ sweep.
and, for the model, what one query of a head looks up (``lookup_weights``, an instant chart).
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart, n, q, tip, view
from tfviz.viz.kit.instant import rounded
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap
from tfviz.viz.kit.queries import FREE_ROW, query_rows, split_keys, title_expr, view_params
from tfviz.viz.kit.style import FONT_SIZE, MEANINGS, meaning_scale, token_labels


HARD = "hard lookup (best key only)"
SOFT = "attention (softmax blend)"
KINDS = {SOFT: "attention", HARD: "hard lookup"}  # the legend, in order, and what each means
QUERY = MEANINGS["query"]  # vermillion: the query, as on the other attention pages


def key_plane(names: Sequence[str], keys: np.ndarray, query: np.ndarray, weights: np.ndarray, *,
              title: str = "Keys and your query") -> dict:
    """Keys as dots (bigger = more attention weight), the query as an arrow from the origin."""
    keys = np.asarray(keys, dtype=float)
    weights = np.asarray(weights, dtype=float)
    rows = [{"key": str(name), "x": float(k[0]), "y": float(k[1]), "weight": float(w)}
            for name, k, w in zip(names, keys, weights)]
    qx, qy = (float(v) for v in np.asarray(query, dtype=float)[:2])
    reach = float(max(np.abs(keys).max(initial=0.0), np.abs(query).max(initial=0.0), 1.0)) * 1.3
    scale = {"domain": [-reach, reach], "nice": False}
    x = q("x", "key dimension 1", scale=scale)
    y = q("y", "key dimension 2", scale=scale)
    zero = [{"data": {"values": [{"z": 0}]}, "mark": {"type": "rule", "color": "#444444", "aria": False},
             "encoding": {ch: {"field": "z", "type": "quantitative", "scale": scale}}}
            for ch in ("x", "y")]
    size = {"field": "weight", "type": "quantitative", "scale": {"domain": [0, 1], "range": [120, 2200]},
            "legend": None}
    layers = [
        *zero,
        view({"type": "point", "filled": True, "color": MEANINGS["attention"], "stroke": "black",
              "strokeWidth": 1, "opacity": 0.9}, x=x, y=y, size=size,
             tooltip=tip("key", "x:.2f", "y:.2f", "weight:.3f")),
        view({"type": "text", "dy": -22, "fontSize": FONT_SIZE - 2}, x=x, y=y, text=n("key")),
        view({"type": "rule", "color": QUERY, "strokeWidth": 3}, data="query", x=q("x0"),
             y=q("y0"), x2={"field": "x"}, y2={"field": "y"}),
        view({"type": "point", "shape": "diamond", "filled": True, "size": 160, "color": QUERY},
             data="query", x=q("x"), y=q("y"), tooltip=tip("what", "x:.2f", "y:.2f")),
        view({"type": "text", "dy": 20, "fontSize": FONT_SIZE - 2, "color": QUERY}, data="query",
             x=q("x"), y=q("y"), text=n("what")),
    ]
    return chart({"layer": layers}, title=title, rows=rows,
                 datasets={"query": [{"what": "query q", "x0": 0, "y0": 0, "x": qx, "y": qy}]},
                 width=420, height=420,
                 description="The keys as dots in their plane, bigger for more attention weight, "
                             "and the query as an arrow from the origin.")


def weights_chart(names: Sequence[str], soft: np.ndarray, hard: np.ndarray, *,
                  title: str = "Weight on each value") -> dict:
    """Grouped bars: the hashtable's one-hot weights beside attention's softmax weights."""
    names = [str(x) for x in names]
    rows = [{"entry": name, "lookup": kind, "weight": float(w)}
            for kind, weights in ((HARD, hard), (SOFT, soft))
            for name, w in zip(names, np.asarray(weights, float))]
    kinds = list(KINDS)  # the model's bars in lesson 4 (lookup_weights) share them
    bars = view("bar", x=n("entry", "entry (key → value)", sort=names),
                xOffset=n("lookup", sort=kinds),
                y=q("weight", "weight", scale={"domain": [0, 1]}),
                color=n("lookup", "", scale=meaning_scale(KINDS)),
                tooltip=tip("entry", "lookup", "weight:.4f"))
    return chart(bars, title=title, rows=rows, height=300,
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 160}},
                 description="For each entry, the weight a hard lookup puts on its value beside "
                             "the weight attention's softmax puts on it.")


def sweep_chart(rows, current: float | None = None, *,
                title: str = "Sharper softmax → closer to the hashtable") -> dict:
    """Weight on the best key against temperature τ (log scale); a dashed line marks the
    current τ. rows from :func:`tfviz.analysis.lookup.temperature_sweep`."""
    data = [{"temperature": float(r["temperature"]), "weight on best key": float(r["weight on best key"]),
             "distance from hard answer": float(r["distance from hard answer"])} for r in rows]
    x = q("temperature", "temperature τ (log scale)", scale={"type": "log", "nice": False})
    layers = [view({"type": "line", "point": True, "strokeWidth": 3, "color": MEANINGS["attention"]},
                   x=x, y=q("weight on best key", "weight on the best-matching key",
                            scale={"domain": [0, 1.05], "nice": False}),
                   tooltip=tip({"field": "temperature", "title": "τ", "format": ".3g"},
                               "weight on best key:.4f", "distance from hard answer:.4f"))]
    sets = {}
    if current is not None:
        sets["current"] = [{"temperature": float(current), "label": f"your τ = {current:g}"}]
        layers += [view({"type": "rule", "color": QUERY, "strokeDash": [6, 4], "strokeWidth": 2},
                        data="current", x=q("temperature")),
                   view({"type": "text", "color": QUERY, "align": "left", "dx": 6, "y": 8,
                         "baseline": "top", "fontSize": FONT_SIZE - 2},
                        data="current", x=q("temperature"), text=n("label"))]
    return chart({"layer": layers}, title=title, rows=data, datasets=sets, height=360,
                 description="The weight softmax puts on the best-matching key, against the "
                             "temperature τ on a log scale"
                             + (f"; a dashed line marks your τ = {current:g}." if current is not None
                                else "."))


def lookup_weights(patterns: np.ndarray, tokens: Sequence[str], counts: np.ndarray, *,
                   layer: int = 0, head: int = 0, query: int | None = None,
                   default_query: int | None = None) -> dict:
    """Lesson 4's bars for the model: the chosen query's softmax weights beside the one-hot
    weights of a hard lookup, and a line naming the largest weight and how many values the
    head mixes. ``patterns`` is (L, H, n, n); ``counts`` (L, H, n) holds each row's 1 / Σα²
    (``analysis.lookup.effective_counts``), sent as ``mix``. ``query`` None: the sentence's
    ``default_query`` (else its last token), which travels in the data."""
    n_layers, n_heads, n, _ = patterns.shape
    cap = length_cap(n)
    rows = query_rows(w=patterns)
    for row, top, count in zip(rows, patterns.argmax(-1).ravel(), rounded(counts.ravel())):
        row.update(top=int(top), mix=count)
    width = max(320, min(820, 34 * cap))
    base = [{"filter": FREE_ROW}, *split_keys("w"), {"calculate": "toNumber(datum.w)", "as": "w"},
            {"calculate": "tokens[datum.key]", "as": "label"}]
    kinds = {"domain": list(KINDS)}
    bars = {
        "transform": [{"calculate": "datum.key == datum.top ? 1 : 0", "as": "hard"},
                      {"fold": ["hard", "w"], "as": ["lookup", "weight"]},
                      {"calculate": f"datum.lookup == 'hard' ? '{HARD}' : '{SOFT}'",
                       "as": "lookup"}],
        "mark": {"type": "bar"}, "width": width, "height": 300,
        "encoding": {
            "x": {"field": "key", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": {"title": "key token", "labelExpr": "tokens[datum.value]",
                           "labelLimit": 160}},
            "xOffset": {"field": "lookup", "type": "nominal", "scale": kinds},
            "y": {"field": "weight", "type": "quantitative", "title": "weight",
                  "scale": {"domain": [0, 1]}},
            "color": {"field": "lookup", "type": "nominal", "title": None,
                      "scale": meaning_scale(KINDS),
                      "legend": {"orient": "top", "labelLimit": 400}},
            "tooltip": [{"field": "label", "title": "key"}, {"field": "lookup"},
                        {"field": "weight", "format": ".4f"}]}}
    sentence = ("'The largest weight is ' + format(datum.w, '.3f') + ' on “' + datum.label"
                " + '”; this head mixes about ' + format(datum.mix, '.1f') + ' of the ' + ntok"
                " + ' values (1 / Σα²).'")
    line = {
        "transform": [{"filter": "datum.key == datum.top"}, {"calculate": sentence, "as": "line"}],
        "mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": FONT_SIZE - 1,
                 "limit": 860},
        "encoding": {"x": {"value": 0}, "y": {"value": 11}, "text": {"field": "line"}},
        "width": width, "height": 22}
    body = {"data": {"name": "rows"}, "transform": base, "vconcat": [bars, line], "spacing": 12,
            "title": title_expr("'Layer ' + layer + ', head ' + head + ': what ' + tokens[qi]"
                                " + ' looks up'")}
    return chart(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                 datasets={"rows": rows}, marks=2 * cap + 1, tokens=token_labels(tokens),
                 free=True, default_query=default_query,
                 description="Softmax weights of the chosen query beside a hard lookup's one-hot "
                            "weights.", own_size=True)
