"""Instant charts for lesson 11 (mixture of experts): every layer's routing sent at once.

The layer and the followed token are view parameters (``layer``, ``pos``) in the conventions of
``tfviz.viz.instant``; the number of experts per token (top-k) is a what-if that reruns the
model, so each chart is built for one k.

- ``routing_chart``: tokens × experts gate probabilities with the chosen (dot) and dropped
  (cross) experts, the followed token's row outlined, its gates as bars and its routing
  written out (h, p, the chosen set and y). Length-free (``tfviz.viz.instant_length``): laid
  out for ``length_cap`` tokens, it reads the sentence's length and the token it follows
  (``posi``) from its data, so a new sentence of another length within the cap swaps data.
- ``load_chart``: tokens served and choices dropped per expert, with the capacity.
- ``class_chart``: token class × first-choice expert over the sample sentences.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from tfviz.analysis.moe import Routing
from tfviz.viz.instant import SCHEME, rounded, slider, spec, token_axis
from tfviz.viz.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.style import CATEGORICAL, FONT_SIZE, token_labels

STATUS = ("not chosen", "chosen", "dropped (expert full)")  # a (token, expert) pair's fate
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def routing_lines(r: Routing, t: int) -> list[str]:
    """Token ``t``'s routing as text lines (the page's formulas, with the token's numbers).

    >>> r = Routing(np.array([[0.5, 1.5]]), np.array([[0.25, 0.75]]), np.array([[1]]),
    ...             np.array([[0.75]]), np.array([[False]]), np.array([0, 1]))
    >>> routing_lines(r, 0)
    ['router logits h(x) = [0.50, 1.50]   ⇒   gates p = softmax(h) = [0.250, 0.750]', \
'𝒯 = {1}   ⇒   y = 0.750 · E₁(x)']
    """
    chosen = [int(e) for e in r.indices[t]]
    terms = " + ".join(f"{w:.3f} · E{str(e).translate(_SUBSCRIPT)}(x)"
                       for w, e in zip(r.weights[t], chosen))
    lines = [f"router logits h(x) = [{', '.join(f'{v:.2f}' for v in r.logits[t])}]   ⇒   "
             f"gates p = softmax(h) = [{', '.join(f'{v:.3f}' for v in r.probs[t])}]",
             f"𝒯 = {{{', '.join(map(str, chosen))}}}   ⇒   y = {terms}"]
    if r.dropped[t].any():
        lines += ["⚠ At least one of this token's experts was full: that part of y is zero,",
                  "and the token only keeps what the residual connection carries past the layer."]
    return lines


def _status(r: Routing) -> np.ndarray:
    """(T, E) 0 not chosen, 1 chosen and served, 2 chosen but dropped."""
    return np.where(r.dropped_mask(), 2, np.where(r.chosen_mask(), 1, 0))


def routing_chart(routes: Sequence[Routing], tokens: Sequence[str], *, layer: int = 0,
                  pos: int | None = None) -> dict:
    """Every layer's gates for every token, the chosen experts, and one followed token:
    ``pos``, or the sentence's first token when None (a link that names no token)."""
    n_layers = len(routes)
    n, n_experts = routes[0].probs.shape
    cap = length_cap(n)
    k = routes[0].k
    labels = token_labels(tokens)
    gates = []
    for lyr, r in enumerate(routes):
        status = _status(r)
        gates += [{"layer": lyr, "t": t, "e": e, "p": rounded(r.probs[t, e]),
                   "status": STATUS[status[t, e]]} for t in range(n) for e in range(n_experts)]
    follow = [{"layer": lyr, "t": t, "line": i, "text": line} for lyr, r in enumerate(routes)
              for t in range(n) for i, line in enumerate(routing_lines(r, t))]
    tall = max(16, min(28, 640 // max(cap, 1)))
    marks = {"field": "status", "type": "nominal", "title": None,
             "scale": {"domain": list(STATUS[1:]), "range": ["circle", "cross"]},
             "legend": {"orient": "top", "symbolFillColor": CATEGORICAL[5],
                        "symbolStrokeColor": CATEGORICAL[5], "symbolOpacity": 1}}
    heat = {
        "data": {"name": "gates"},
        "transform": [{"filter": "datum.layer == layer"},
                      {"calculate": "tokens[datum.t]", "as": "token"},
                      {"calculate": "'expert ' + datum.e", "as": "expert"}],
        "encoding": {
            "x": {"field": "e", "type": "ordinal", "scale": {"domain": list(range(n_experts))},
                  "axis": {"title": "expert", "labelAngle": 0, "labelExpr": "'expert ' + datum.value",
                           "orient": "top", "labelFlush": False}},
            "y": {"field": "t", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": token_axis("token", n=cap, free=True)},
        },
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "p", "type": "quantitative", "title": "gate p",
                                    "scale": {"scheme": SCHEME, "domain": [0, 1]}},
                          "tooltip": [{"field": "token"}, {"field": "expert"},
                                      {"field": "p", "title": "gate p", "format": ".4f"},
                                      {"field": "status"}]}},
            *([{"transform": [*([{"filter": "ntok <= 40"}] if cap > 40 else []),  # room to read
                              {"calculate": "format(datum.p, '.2f') + (datum.status == 'chosen' ? "
                                            "' ✓' : datum.status == 'not chosen' ? '' : ' ✗')",
                               "as": "shown"}],
                "mark": {"type": "text", "fontSize": FONT_SIZE - 4, "aria": False},
                "encoding": {"text": {"field": "shown"},
                             "color": {"condition": {"test": "datum.p > 0.5", "value": "black"},
                                       "value": "white"}}}] if cap <= 48 else []),
            {"transform": [{"filter": "datum.status != 'not chosen'"}],
             "mark": {"type": "point", "filled": True, "size": 90, "xOffset": 34,
                      "color": CATEGORICAL[5], "stroke": "white", "strokeWidth": 1.5,
                      "opacity": 1},
             "encoding": {"shape": marks,
                          "tooltip": [{"field": "token"}, {"field": "expert"}, {"field": "status"}]}},
            {"transform": [{"filter": "datum.t == posi && datum.e == 0"}],
             "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 3,
                      "aria": False},
             "encoding": {"x": {"value": 0}, "x2": {"value": 90 * n_experts}}},
        ],
        "width": {"step": 90}, "height": {"step": tall},
        "title": {"text": {"expr": f"'Gate probabilities p, layer ' + layer + ', top-{k}'"},
                  "subtitle": "outlined: the token you follow", "subtitleFontSize": FONT_SIZE - 2},
    }
    bars = {
        "data": {"name": "gates"},
        "transform": [{"filter": "datum.layer == layer && datum.t == posi"},
                      {"calculate": "'expert ' + datum.e", "as": "expert"}],
        "encoding": {
            "x": {"field": "expert", "type": "nominal", "title": "expert", "axis": {"labelAngle": 0},
                  "sort": [f"expert {e}" for e in range(n_experts)]},
            "y": {"field": "p", "type": "quantitative", "title": "gate p", "scale": {"domain": [0, 1]}},
        },
        "layer": [{"mark": {"type": "bar"},
                   "encoding": {"color": {"field": "status", "type": "nominal", "title": None,
                                          "scale": {"domain": list(STATUS),
                                                    "range": [CATEGORICAL[0], CATEGORICAL[5],
                                                              CATEGORICAL[7]]},
                                          "legend": {"orient": "top"}},
                                "tooltip": [{"field": "expert"}, {"field": "p", "format": ".4f"},
                                            {"field": "status"}]}},
                  {"mark": {"type": "text", "dy": -10, "fontSize": FONT_SIZE - 2, "aria": False},
                   "encoding": {"text": {"field": "p", "type": "quantitative", "format": ".3f"}}}],
        "width": 90 * n_experts, "height": 220,
        "title": {"text": {"expr": "'Follow ' + tokens[posi] + ': its gates in layer ' + layer"}},
    }
    lines = {
        "data": {"name": "follow"},
        "transform": [{"filter": "datum.layer == layer && datum.t == posi"}],
        "mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": FONT_SIZE - 1},
        "encoding": {"y": {"field": "line", "type": "ordinal", "axis": None},
                     "x": {"value": 0}, "text": {"field": "text"}},
        "width": 720, "height": {"step": 28},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer),
              token_slider(cap - 1, "Follow one token", pos, name="pos")]
    return spec({"vconcat": [heat, bars, lines], "spacing": 24,
                 "resolve": {"scale": {"color": "independent"},
                             "legend": {"color": "independent", "shape": "independent"}}},
                params=params, datasets={"gates": gates, "follow": follow}, tokens=labels,
                free=True, defaults={"pos": 0}, description="Router gates of every token, and one token's routing.")


def load_chart(routes: Sequence[Routing], capacity: int | None, *, layer: int = 0) -> dict:
    """Stacked bars per expert and layer: tokens served and choices dropped, with the
    capacity (the same for every layer) as a dashed line."""
    served = np.stack([r.counts for r in routes])  # (layers, experts)
    dropped = np.stack([r.dropped_per_expert() for r in routes])  # (layers, experts)
    n_layers, n_experts = served.shape
    kinds = ["served", "dropped"]
    rows = [{"layer": lyr, "expert": f"expert {e}", "kind": kind, "order": i,
             "tokens": int(arr[lyr, e])}
            for lyr in range(n_layers) for i, (kind, arr) in enumerate(zip(kinds, (served, dropped)))
            for e in range(n_experts)]
    bars = {
        "transform": [{"filter": "datum.layer == layer"}],
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "expert", "type": "nominal", "title": "expert", "axis": {"labelAngle": 0},
                  "sort": [f"expert {e}" for e in range(n_experts)]},
            "y": {"field": "tokens", "type": "quantitative", "title": "tokens", "stack": True},
            "color": {"field": "kind", "type": "nominal", "title": None, "sort": kinds,
                      "scale": {"domain": kinds, "range": [CATEGORICAL[0], CATEGORICAL[5]]},
                      "legend": {"orient": "top"}},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [{"field": "expert"}, {"field": "kind"}, {"field": "tokens"}],
        },
    }
    layers = [bars]
    if capacity is not None:
        # The capacity follows the sentence's length, so it rides in the data (the first row),
        # not in the spec: a new sentence then swaps the data instead of drawing anew.
        rows[0]["capacity"] = int(capacity)
        one = [{"filter": "isValid(datum.capacity)"},
               {"calculate": "'capacity ' + datum.capacity", "as": "label"}]
        line = {"y": {"field": "capacity", "type": "quantitative"}}
        layers += [{"transform": one,
                    "mark": {"type": "rule", "strokeDash": [6, 4], "size": 2, "color": "black"},
                    "encoding": {**line, "tooltip": {"field": "label"},
                                 "description": {"field": "label"}}},  # the line's accessible name
                   {"transform": one,
                    "mark": {"type": "text", "align": "right", "dy": -10, "fontSize": FONT_SIZE - 2,
                             "x": "width", "aria": False},
                    "encoding": {**line, "text": {"field": "label"}}}]
    body = {"data": {"name": "load"}, "layer": layers, "width": max(300, 110 * n_experts),
            "height": 300,
            "title": {"text": {"expr": "'Tokens per expert, layer ' + layer"},
                      "subtitle": "dashed line: capacity" if capacity is not None else "",
                      "subtitleFontSize": FONT_SIZE - 2}}
    return spec(body, params=[slider("layer", n_layers - 1, "Layer", layer)],
                datasets={"load": rows}, description="Tokens each expert processed, per layer.")


def class_chart(tables: Sequence[tuple[Sequence[str], Sequence[int], np.ndarray]], *,
                layer: int = 0, title: str = "Token class × first-choice expert") -> dict:
    """Rows = token classes, columns = experts; colour = share of the class, text = share and
    count. ``tables`` holds one (classes, experts, counts) per layer
    (``tfviz.analysis.moe.class_expert_table``)."""
    rows = []
    for lyr, (classes, experts, counts) in enumerate(tables):
        counts = np.asarray(counts, dtype=int)
        totals = counts.sum(axis=1)
        for ci, c in enumerate(classes):
            for ei, e in enumerate(experts):
                share = counts[ci, ei] / totals[ci] if totals[ci] else 0.0
                rows.append({"layer": lyr, "class": str(c), "ci": ci, "expert": f"expert {e}",
                             "ei": ei, "share": rounded(share), "count": int(counts[ci, ei])})
    body = {
        "data": {"name": "classes"},
        "transform": [{"filter": "datum.layer == layer"},
                      {"calculate": "format(datum.share, '.0%') + ' (' + datum.count + ')'",
                       "as": "shown"}],
        "encoding": {
            "x": {"field": "expert", "type": "nominal", "title": "expert (first choice)",
                  "sort": {"field": "ei", "op": "min"}, "axis": {"labelAngle": 0, "orient": "top", "labelFlush": False}},
            "y": {"field": "class", "type": "nominal", "title": "token class",
                  "sort": {"field": "ci", "op": "min"}},
        },
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "share", "type": "quantitative", "title": "share of the class",
                                    "scale": {"scheme": SCHEME, "domain": [0, 1]},
                                    "legend": {"format": ".0%"}},
                          "tooltip": [{"field": "class"}, {"field": "expert"},
                                      {"field": "share", "format": ".1%"}, {"field": "count"}]}},
            {"mark": {"type": "text", "fontSize": FONT_SIZE - 3, "aria": False},
             "encoding": {"text": {"field": "shown"},
                          "color": {"condition": {"test": "datum.share > 0.5", "value": "black"},
                                    "value": "white"}}},
        ],
        "width": {"step": 110}, "height": {"step": 34},
        "title": {"text": {"expr": f"{json.dumps(title + ', layer ', ensure_ascii=False)} + layer"}},
    }
    return spec(body, params=[slider("layer", len(tables) - 1, "Layer", layer)],
                datasets={"classes": rows}, description="Which expert each class of token goes to.")
