"""The "flying arrows" picture: lines from one query token to every key, thick where it looks.

Tokens stand in two columns, queries on the left and keys on the right. From the chosen query
a line runs to each key; its width is proportional to the attention weight (a weight of 1
would be MAX_WIDTH pixels), it is darker for the keys this query prefers, and the weight is
written beside the key (and shown exactly on hover). Keys the mask hides get no line.
A plain Vega-Lite dict (``tfviz.viz.kit.charts``); token labels are drawn as typed.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, n, q, tip, view
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels

QUERY_COLOUR = CATEGORICAL[5]  # vermillion
LINE_COLOUR = CATEGORICAL[0]  # blue
OTHER = "#767676"  # the other tokens' dots: grey, 4.5:1 on white
MAX_WIDTH = 14.0


def arrows_figure(weights: np.ndarray, tokens: Sequence[str], query_pos: int, *, title: str,
                  allowed: np.ndarray | None = None) -> dict:
    """weights: (n,) one query row of an attention map; tokens: the n raw token strings.

    >>> spec = arrows_figure(np.array([0.88, 0.12]), ["Thinking", "Machines"], 0, title="t")
    >>> [round(r["width"], 2) for r in spec["datasets"]["rows"]]
    [12.38, 2.12]
    """
    w = np.asarray(weights, dtype=float)
    size = len(w)
    allowed = np.ones(size, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    top = float(w.max()) if size and w.max() > 0 else 1.0
    names = token_labels(tokens)  # "3 cat"
    rows = [{"pos": j, "token": names[j], "query": int(query_pos),
             "weight": float(w[j]) if allowed[j] else None,
             "shown": f"{w[j]:.4f}" if allowed[j] else "masked (−∞)",
             "key text": f"{names[j]}  {w[j]:.2f}" if allowed[j] else f"{names[j]}  (masked)",
             "seen": bool(allowed[j]), "asking": j == query_pos,
             "width": 0.5 + (MAX_WIDTH - 0.5) * float(w[j]) if allowed[j] else 0.0,
             "opacity": 0.25 + 0.75 * float(w[j]) / top if allowed[j] else 0.0}  # darkest: its favourite
            for j in range(size)]
    x_scale = {"domain": [-0.6, 1.7], "nice": False}
    x_axis = {"labels": False, "ticks": False, "grid": False, "domain": False,
              "title": "query (left) → keys (right)"}
    y = q("pos", scale={"domain": [size - 0.5, -0.5], "nice": False, "zero": False}, axis=None)
    at = lambda side: {"datum": side, "type": "quantitative", "scale": x_scale, "axis": x_axis}  # noqa: E731
    lines = view({"type": "rule", "strokeCap": "round"}, transform=[{"filter": "datum.seen"}],
                 x=at(0), x2={"datum": 1}, y=q("query", scale=y["scale"], axis=None), y2={"field": "pos"},
                 strokeWidth={"field": "width", "type": "quantitative", "scale": None},
                 opacity={"field": "opacity", "type": "quantitative", "scale": None},
                 color={"value": LINE_COLOUR}, tooltip=tip("token", {"field": "shown", "title": "weight"}))
    keys = view({"type": "point", "filled": True, "size": 100}, x=at(1), y=y,
                color={"condition": {"test": "datum.seen", "value": LINE_COLOUR}, "value": OTHER},
                tooltip=[{"field": "token", "title": "key"}, {"field": "shown", "title": "weight"}])
    key_text = view({"type": "text", "align": "left", "dx": 10, "fontSize": FONT_SIZE - 2},
                    x=at(1), y=y, text=n("key text"))
    queries = view({"type": "point", "filled": True, "size": 100}, x=at(0), y=y,
                   color={"condition": {"test": "datum.asking", "value": QUERY_COLOUR}, "value": OTHER},
                   tooltip=[{"field": "token", "title": "query"}])
    query_text = view({"type": "text", "align": "right", "dx": -10, "fontSize": FONT_SIZE - 2},
                      x=at(0), y=y, text=n("token"))
    return chart({"layer": [lines, keys, key_text, queries, query_text]}, title=title, rows=rows,
                 height=max(260, min(1300, 26 * size)),
                 description=f"Lines from the query {names[query_pos]} (left) to every key it may "
                             "see (right), thicker and darker for more attention weight; each "
                             "key's weight is written beside it.")
