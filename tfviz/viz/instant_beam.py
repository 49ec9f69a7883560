"""Beam search drawn as a tree (lesson 14), from ``tfviz.analysis.decoding.beam_tree``.

Columns are steps, the prompt on the left. In each column: every kept beam and the best few
children of each parent; the rest of the expansions are only counted (the subtitle). A node
reads its token and, below it, the summed log-probability the beams are ranked by. Blue: kept; grey:
pruned; vermillion: the path of the best final beam; a green ring and a dashed green line:
the path greedy decoding takes, wherever it leaves the beam. A static chart (no view
control): everything is drawn at once.
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import rounded
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE

BEST, KEPT, PRUNED, GREEDY = CATEGORICAL[5], CATEGORICAL[0], "#9a9a9a", CATEGORICAL[2]
WIDTH = 1040  # the whole tree fits a laptop's page: columns narrow as steps are added
COLUMN = (90, 150)  # pixels per step, least and most
ROW = 36  # two lines per node: the token, then its sum (two text marks: a
# list of lines would reach Vega as an Arrow vector, not an array)
LABEL_END = 0.74  # where a node's label ends, in steps: edges start there


def column_width(steps: int) -> int:
    """Pixels per column for a tree of ``steps`` steps (and the prompt's column).

    >>> column_width(6), column_width(10)
    (148, 94)
    """
    return max(COLUMN[0], min(COLUMN[1], WIDTH // (steps + 1)))


def _status(n) -> str:
    return "best beam" if n.best else "kept" if n.kept else "pruned"


def beam_tree_chart(tree, *, scored_note: str | Sequence[str] = "") -> dict:
    """``tree`` is a ``BeamTree``. ``scored_note`` (say "1,800 candidates scored per step"; a
    list for several lines) becomes the subtitle."""
    steps = max(n.step for n in tree.nodes)
    column = column_width(steps)
    rows = [{"step": n.step, "slot": n.slot, "from_step": n.step - 1 + LABEL_END,
             "from_slot": n.parent_slot, "label": n.label, "lp": rounded(n.logprob),
             "sum": rounded(n.total), "status": _status(n), "greedy": n.greedy, "rank": n.rank,
             "sum_text": "" if n.step == 0 else f"{n.total:.2f}"}
            for n in tree.nodes]
    x = {"type": "quantitative", "scale": {"domain": [-0.05, steps + 0.95], "nice": False},
         "axis": {"title": None, "orient": "top", "values": list(range(steps + 1)), "grid": False,
                  "labelExpr": "datum.value == 0 ? 'prompt' : 'step ' + datum.value",
                  "labelAlign": "left", "domain": False, "ticks": False}}
    y = {"type": "quantitative", "axis": None,
         "scale": {"domain": [tree.rows - 0.5, -0.5], "nice": False, "zero": False}}
    colour = {"field": "status", "type": "nominal", "title": None,
              "scale": {"domain": ["best beam", "kept", "pruned"], "range": [BEST, KEPT, PRUNED]},
              "legend": {"orient": "bottom"}}
    edges = [{"filter": "datum.step > 0"}]
    tooltip = [{"field": "label", "title": "token"}, {"field": "lp", "title": "log p(token)", "format": ".4f"},
               {"field": "sum", "title": "sum of log p", "format": ".4f"},
               {"field": "rank", "title": "rank among the step's candidates"},
               {"field": "status"}, {"field": "greedy", "title": "on greedy's path"}]
    layers = [
        {"transform": edges, "mark": {"type": "rule", "aria": False},
         "encoding": {"x": {**x, "field": "from_step"}, "y": {**y, "field": "from_slot"},
                      "x2": {"field": "step"}, "y2": {"field": "slot"},
                      "color": colour,
                      "strokeWidth": {"condition": {"test": "datum.status == 'best beam'", "value": 3},
                                      "value": 1.3}}},
        {"transform": [*edges, {"filter": "datum.greedy"}],
         "mark": {"type": "rule", "color": GREEDY, "strokeDash": [5, 4], "strokeWidth": 2, "aria": False},
         "encoding": {"x": {**x, "field": "from_step"}, "y": {**y, "field": "from_slot"},
                      "x2": {"field": "step"}, "y2": {"field": "slot"}}},
        {"transform": [{"filter": "datum.greedy"}],
         "mark": {"type": "point", "color": GREEDY, "size": 170, "strokeWidth": 2, "aria": False},
         "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"}}},
        {"mark": {"type": "point", "filled": True, "size": 60},
         "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"}, "color": colour,
                      "tooltip": tooltip}},
        *({"transform": [{"filter": f"datum.status {'==' if bold else '!='} 'best beam'"}],
           "mark": {"type": "text", "align": "left", "dx": 8, "dy": dy, "fontSize": FONT_SIZE - 3,
                    "aria": False, "limit": int(column * LABEL_END) - 12,
                    "fontWeight": "bold" if bold else "normal"},
           "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"},
                        "text": {"field": field},
                        "color": {"condition": {"test": "datum.status == 'pruned'", "value": "#777777"},
                                  "value": "black"}}}
          for bold in (True, False) for field, dy in (("label", -7), ("sum_text", 8))),
    ]
    body = {"data": {"name": "nodes"}, "layer": layers,
            "width": column * (steps + 1), "height": ROW * tree.rows,
            "title": {"text": "Beam search, step by step",
                      "subtitle": scored_note if isinstance(scored_note, str) else list(scored_note),
                      "subtitleFontSize": FONT_SIZE - 3}}
    return chart(body, datasets={"nodes": rows}, marks=4 * len(rows),
                 description="Beam search as a tree: every kept beam and the best pruned expansions.",
                 own_size=True)
