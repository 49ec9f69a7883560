"""Instant charts for lesson 11 (mixture of experts): every layer's routing sent at once.

The layer and the followed token are view parameters (``layer``, ``pos``) in the conventions of
``tfviz.viz.kit.instant``; the number of experts per token (top-k) is a what-if that reruns the
model, so each chart is built for one k.

- ``routing_chart``: tokens × experts gate probabilities with the chosen (dot) and dropped
  (cross) experts, the followed token's row outlined, its gates as bars with the weight the
  model's rule gave each chosen expert, and its routing written out by that rule (h, p, the
  chosen set, the weights' formula and y). Length-free (``tfviz.viz.kit.instant_length``): laid
  out for ``length_cap`` tokens, it reads the sentence's length and the token it follows
  (``posi``) from its data, so a new sentence of another length within the cap swaps data.
- ``load_chart``: tokens served and choices dropped per expert, with the capacity;
  ``load_map_chart``: every layer's load at once, against an even share.
- ``rules_chart``: the three routing rules (``tfviz.analysis.moe_rules``) on the same logits,
  the followed token's weights side by side and what softmax → top-k keeps of p per token.
- ``class_chart``: token class × first-choice expert over the sample sentences.

Many experts (Granite's 32) get narrow columns numbered without the word "expert"
(``expert_step``, ``expert_label``), and a token's lines give the range of its 32 logits
instead of listing them.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from tfviz.analysis.moe import Routing
from tfviz.analysis.moe_rules import PLAIN, RENORMALISED, RULE, RULES, TOPK_SOFTMAX, RulesCompared, spread
from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import SCHEME, rounded, slider, token_axis
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels

STATUS = ("not chosen", "chosen", "dropped (expert full)")  # a (token, expert) pair's fate
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
LIST_UP_TO = 8  # experts whose logits and gates a token's lines list one by one
TERMS_A_LINE = 4  # terms of y = Σ w_i E_i(x) on one line of text


def _sub(e: int) -> str:
    return str(int(e)).translate(_SUBSCRIPT)


def expert_step(n_experts: int) -> int:
    """Pixels per expert column: 90 for a few experts (room for a number in each cell),
    narrower for many (Granite's 32 at 24 px is 768 px).

    >>> [expert_step(e) for e in (4, 8, 32)]
    [90, 67, 24]
    """
    return 90 if n_experts <= 6 else max(24, 540 // n_experts)


def expert_label(n_experts: int) -> str:
    """Vega expression of an expert column's label: "expert 3", or "3" when there are many."""
    return "'expert ' + datum.value" if n_experts <= LIST_UP_TO else "datum.value"


def _numbers(values, fmt: str) -> str:
    return "[" + ", ".join(format(float(v), fmt) for v in values) + "]"


def routing_lines(r: Routing, t: int) -> list[str]:
    """Token ``t``'s routing as text lines, by the routing's own rule (``r.rule``): its router
    logits h and gates p (listed for up to ``LIST_UP_TO`` experts, their range beyond), the
    chosen set with the weights' formula, and y with the weights the model used.

    >>> r = Routing(np.array([[0.5, 1.5]]), np.array([[0.25, 0.75]]), np.array([[1]]),
    ...             np.array([[0.75]]), np.array([[False]]), np.array([0, 1]))
    >>> routing_lines(r, 0)
    ['router logits h(x) = [0.50, 1.50]', 'gates p = softmax(h) = [0.250, 0.750]', '𝒯 = the largest p = {1}   ⇒   w = p', 'y = 0.750 · E₁(x)']
    """
    chosen = [int(e) for e in r.indices[t]]
    k, E = len(chosen), r.n_experts
    h, p = r.logits[t], r.probs[t]
    if E <= LIST_UP_TO:
        lines = [f"router logits h(x) = {_numbers(h, '.2f')}",
                 f"gates p = softmax(h) = {_numbers(p, '.3f')}"]
    else:
        lines = [f"router logits h(x): {E} numbers, from {h.min():.2f} to {h.max():.2f}",
                 f"gates p = softmax(h) over all {E}: from {p.min():.3f} to {p.max():.3f}"]
    best = "the largest" if k == 1 else f"the {k} largest"
    picked = "{" + ", ".join(map(str, chosen)) + "}"
    mass = float(p[chosen].sum())
    if r.rule == TOPK_SOFTMAX:
        over = ", ".join(f"h{_sub(e)}" for e in chosen) if k <= 3 else f"those {k} logits"
        lines.append(f"𝒯 = {best} h = {picked}   ⇒   w = softmax({over})")
    elif r.rule == RENORMALISED:
        total = " + ".join(f"p{_sub(e)}" for e in chosen) if k <= 3 else "Σ𝒯 p"
        lines.append(f"𝒯 = {best} p = {picked}   ⇒   w = p / ({total}) = p / {mass:.3f}")
    else:
        lines.append(f"𝒯 = {best} p = {picked}   ⇒   w = p"
                     + ("" if k == 1 else f", adding up to {mass:.3f}"))
    terms = [f"{w:.3f} · E{_sub(e)}(x)" for w, e in zip(r.weights[t], chosen)]
    for i in range(0, k, TERMS_A_LINE):
        lines.append(("y = " if i == 0 else "    + ") + " + ".join(terms[i:i + TERMS_A_LINE]))
    if r.dropped[t].any():
        lines += ["⚠ At least one of this token's experts was full: that part of y is zero,",
                  "and the token only keeps what the residual connection carries past the layer."]
    return lines


def _status(r: Routing) -> np.ndarray:
    """(T, E) 0 not chosen, 1 chosen and served, 2 chosen but dropped."""
    return np.where(r.dropped_mask(), 2, np.where(r.chosen_mask(), 1, 0))


def routing_chart(routes: Sequence[Routing], tokens: Sequence[str], *, layer: int = 0,
                  pos: int | None = None, drops: bool = True) -> dict:
    """Every layer's gates for every token, the chosen experts and the weights the model gave
    them, and one followed token: ``pos``, or the sentence's first token when None (a link
    that names no token). ``drops``: the model has a capacity, so the legends name a dropped
    choice (a model without one never drops)."""
    n_layers = len(routes)
    n, n_experts = routes[0].probs.shape
    cap = length_cap(n)
    k = routes[0].k
    step = expert_step(n_experts)
    labels = token_labels(tokens)
    gates = []
    for lyr, r in enumerate(routes):
        status = _status(r)
        w = spread(r.indices, r.weights, n_experts)  # (T, E) the weight used, 0 if not
        gates += [{"layer": lyr, "t": t, "e": e, "p": rounded(r.probs[t, e]),
                   "w": rounded(w[t, e]), "status": STATUS[status[t, e]]}
                  for t in range(n) for e in range(n_experts)]
    follow = [{"layer": lyr, "t": t, "line": i, "text": line} for lyr, r in enumerate(routes)
              for t in range(n) for i, line in enumerate(routing_lines(r, t))]
    tall = max(16, min(28, 640 // max(cap, 1)))
    fates = STATUS if drops else STATUS[:2]
    marks = {"field": "status", "type": "nominal", "title": None,
             "scale": {"domain": list(fates[1:]), "range": ["circle", "cross"][:len(fates) - 1]},
             "legend": {"orient": "top", "symbolFillColor": CATEGORICAL[5],
                        "symbolStrokeColor": CATEGORICAL[5], "symbolOpacity": 1}}
    tip = [{"field": "token"}, {"field": "expert"}, {"field": "p", "title": "gate p", "format": ".4f"},
           {"field": "w", "title": "weight w", "format": ".4f"}, {"field": "status"}]
    bar_tip = [{"field": "expert"}, {"field": "p", "format": ".4f"},
               {"field": "w", "title": "weight w", "format": ".4f"}, {"field": "status"}]
    heat = {
        "data": {"name": "gates"},
        "transform": [{"filter": "datum.layer == layer"},
                      {"calculate": "tokens[datum.t]", "as": "token"},
                      {"calculate": "'expert ' + datum.e", "as": "expert"}],
        "encoding": {
            "x": {"field": "e", "type": "ordinal", "scale": {"domain": list(range(n_experts))},
                  "axis": {"title": "expert", "labelAngle": 0, "labelExpr": expert_label(n_experts),
                           "orient": "top", "labelFlush": False}},
            "y": {"field": "t", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": token_axis("token", n=cap, free=True)},
        },
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "p", "type": "quantitative", "title": "gate p",
                                    "scale": {"scheme": SCHEME, "domain": [0, 1]}},
                          "tooltip": tip}},
            *([{"transform": [*([{"filter": "ntok <= 40"}] if cap > 40 else []),  # room to read
                              {"calculate": "format(datum.p, '.2f') + (datum.status == 'chosen' ? "
                                            "' ✓' : datum.status == 'not chosen' ? '' : ' ✗')",
                               "as": "shown"}],
                "mark": {"type": "text", "fontSize": FONT_SIZE - 4, "aria": False},
                "encoding": {"text": {"field": "shown"},
                             "color": {"condition": {"test": "datum.p > 0.5", "value": "black"},
                                       "value": "white"}}}] if cap <= 48 and step >= 60 else []),
            {"transform": [{"filter": "datum.status != 'not chosen'"}],
             "mark": {"type": "point", "filled": True, "size": 90 if step >= 60 else 40,
                      "xOffset": round(step * 0.38) if step >= 60 else 0,
                      "color": CATEGORICAL[5], "stroke": "white", "strokeWidth": 1.5,
                      "opacity": 1},
             "encoding": {"shape": marks, "tooltip": tip}},
            {"transform": [{"filter": "datum.t == posi && datum.e == 0"}],
             "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 3,
                      "aria": False},
             "encoding": {"x": {"value": 0}, "x2": {"value": step * n_experts}}},
        ],
        "width": {"step": step}, "height": {"step": tall},
        "title": {"text": {"expr": f"'Gate probabilities p, layer ' + layer + ', top-{k}'"},
                  "subtitle": "outlined: the token you follow", "subtitleFontSize": FONT_SIZE - 2},
    }
    bars = {
        "data": {"name": "gates"},
        "transform": [{"filter": "datum.layer == layer && datum.t == posi"},
                      {"calculate": "'expert ' + datum.e", "as": "expert"}],
        "encoding": {
            "x": {"field": "e", "type": "ordinal", "title": "expert",
                  "scale": {"domain": list(range(n_experts))},
                  "axis": {"labelAngle": 0, "labelExpr": expert_label(n_experts)}},
        },
        "layer": [{"mark": {"type": "bar"},
                   "encoding": {"y": {"field": "p", "type": "quantitative", "title": "gate p, weight w",
                                      "scale": {"domain": [0, 1]}},
                                "color": {"field": "status", "type": "nominal", "title": None,
                                          "scale": {"domain": list(fates),
                                                    "range": [CATEGORICAL[0], CATEGORICAL[5],
                                                              CATEGORICAL[7]][:len(fates)]},
                                          "legend": {"orient": "top"}},
                                "tooltip": bar_tip}},
                  *([{"transform": [{"calculate": "max(datum.p, datum.w)", "as": "top"}],
                      "mark": {"type": "text", "dy": -12, "fontSize": FONT_SIZE - 2, "aria": False},
                      "encoding": {"y": {"field": "top", "type": "quantitative"},
                                   "text": {"field": "p", "type": "quantitative", "format": ".3f"}}}]
                    if step >= 60 else []),
                  {"transform": [{"filter": "datum.status != 'not chosen'"}],
                   "mark": {"type": "tick", "color": "black", "thickness": 3, "opacity": 1,
                            "size": round(step * 0.8)},
                   "encoding": {"y": {"field": "w", "type": "quantitative"},
                                "tooltip": bar_tip}}],
        "width": step * n_experts, "height": 220,
        "title": {"text": {"expr": "'Follow ' + tokens[posi] + ': its gates in layer ' + layer"},
                  "subtitle": "bars: gate p = softmax(h); black tick: the weight w the rule gives it",
                  "subtitleFontSize": FONT_SIZE - 2},
    }
    # room for the most lines a token can have (routing_lines), whichever token is followed
    most = 3 + -(-k // TERMS_A_LINE) + (2 if drops else 0)
    lines = {
        "data": {"name": "follow"},
        "transform": [{"filter": "datum.layer == layer && datum.t == posi"}],
        "mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": FONT_SIZE - 1},
        "encoding": {"y": {"field": "line", "type": "ordinal", "axis": None,
                           "scale": {"domain": list(range(most))}},
                     "x": {"value": 0}, "text": {"field": "text"}},
        "width": 720, "height": {"step": 28},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer),
              token_slider(cap - 1, "Follow one token", pos, name="pos")]
    return chart({"vconcat": [heat, bars, lines], "spacing": 24,
                 "resolve": {"scale": {"color": "independent"},
                             "legend": {"color": "independent", "shape": "independent"}}},
                 params=params, datasets={"gates": gates, "follow": follow}, tokens=labels,
                 free=True, defaults={"pos": 0}, marks=2 * cap * n_experts,
                 description="Router gates of every token, the chosen experts' weights, and one "
                            "token's routing.", own_size=True)


def load_chart(routes: Sequence[Routing], capacity: int | None, *, layer: int = 0) -> dict:
    """Stacked bars per expert and layer: tokens served and choices dropped, with the
    capacity (the same for every layer) as a dashed line."""
    served = np.stack([r.counts for r in routes])  # (layers, experts)
    dropped = np.stack([r.dropped_per_expert() for r in routes])  # (layers, experts)
    n_layers, n_experts = served.shape
    kinds = ["served", "dropped"] if capacity is not None else ["served"]
    rows = [{"layer": lyr, "e": e, "expert": f"expert {e}", "kind": kind, "order": i,
             "tokens": int(arr[lyr, e])}
            for lyr in range(n_layers) for i, (kind, arr) in enumerate(zip(kinds, (served, dropped)))
            for e in range(n_experts)]
    bars = {
        "transform": [{"filter": "datum.layer == layer"}],
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "e", "type": "ordinal", "title": "expert",
                  "scale": {"domain": list(range(n_experts))},
                  "axis": {"labelAngle": 0, "labelExpr": expert_label(n_experts)}},
            "y": {"field": "tokens", "type": "quantitative", "title": "tokens", "stack": True},
            "color": {"field": "kind", "type": "nominal", "title": None, "sort": kinds,
                      "scale": {"domain": kinds, "range": [CATEGORICAL[0], CATEGORICAL[5]][:len(kinds)]},
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
    body = {"data": {"name": "load"}, "layer": layers,
            "width": max(300, (110 if n_experts <= 6 else expert_step(n_experts)) * n_experts),
            "height": 300,
            "title": {"text": {"expr": "'Tokens per expert, layer ' + layer"},
                      "subtitle": "dashed line: capacity" if capacity is not None else "",
                      "subtitleFontSize": FONT_SIZE - 2}}
    return chart(body, params=[slider("layer", n_layers - 1, "Layer", layer)],
                 datasets={"load": rows}, description="Tokens each expert processed, per layer.",
                 own_size=True)


def load_map_chart(routes: Sequence[Routing]) -> dict:
    """Tokens each expert served in every layer at once: layers × experts, coloured by the
    expert's load against an even spread (1 = its fair share, 1/E of the layer's served
    choices; 2 or more is one colour), the count written in each cell. A static overview: no
    view parameters, and nothing of the sentence in the spec (a new one swaps the data)."""
    served = np.stack([r.counts for r in routes])  # (layers, experts)
    n_layers, n_experts = served.shape
    even = np.maximum(served.sum(axis=1, keepdims=True), 1) / n_experts  # (layers, 1)
    rows = [{"row": lyr, "e": e, "tokens": int(served[lyr, e]),
             "even": rounded(served[lyr, e] / even[lyr, 0])}
            for lyr in range(n_layers) for e in range(n_experts)]
    step = expert_step(n_experts)
    body = {"data": {"name": "loadmap"},
            "encoding": {"x": {"field": "e", "type": "ordinal", "title": "expert",
                               "axis": {"labelAngle": 0, "labelExpr": expert_label(n_experts),
                                        "orient": "top"}},
                         "y": {"field": "row", "type": "ordinal", "title": "layer"}},
            "layer": [
                {"mark": {"type": "rect"},
                 "encoding": {"color": {"field": "even", "type": "quantitative",
                                        "title": "× an even share",
                                        "scale": {"scheme": SCHEME, "domain": [0, 2], "clamp": True}},
                              "tooltip": [{"field": "row", "title": "layer"}, {"field": "e", "title": "expert"},
                                          {"field": "tokens"},
                                          {"field": "even", "title": "× an even share", "format": ".2f"}]}},
                {"mark": {"type": "text", "fontSize": FONT_SIZE - (4 if step < 60 else 2), "aria": False},
                 "encoding": {"text": {"field": "tokens"},
                              "color": {"condition": {"test": "datum.even > 1", "value": "black"},
                                        "value": "white"}}}],
            "width": {"step": step}, "height": {"step": 24 if n_layers > 8 else 34},
            "title": "Tokens per expert, every layer"}
    # the layer's rows are numbered "row", not "layer": this overview keeps every layer when a
    # deep model's page sends the other charts one layer at a time (tfviz.viz.kit.instant_layer)
    return chart(body, datasets={"loadmap": rows}, marks=2 * n_layers * n_experts,
                 description="How many tokens each expert served, in every layer, against an even share.",
                 own_size=True)


RULE_COLOURS = {PLAIN: CATEGORICAL[0], RENORMALISED: CATEGORICAL[1], TOPK_SOFTMAX: CATEGORICAL[2]}


RULE_OWNERS = {PLAIN: "Switch", RENORMALISED: "Mixtral", TOPK_SOFTMAX: "Granite"}


def rules_chart(compared: RulesCompared, tokens: Sequence[str], *, own: str | None = None,
                layer: int = 0, pos: int | None = None) -> dict:
    """The three routing rules on the same router logits (``tfviz.analysis.moe_rules``): the
    followed token's chosen experts with each rule's weight side by side, and, for every
    token of the layer, Σ_T p, what softmax → top-k's weights add up to (and what
    renormalising divides by). ``own``: the open model's rule, marked in the legend. ``pos``
    None: the sentence's first token."""
    n_layers, n, n_experts = compared.logits.shape
    k, cap = compared.k, length_cap(n)
    labels = [f"{RULE[r].label} ({RULE_OWNERS[r]})" + (": this model's" if r == own else "")
              for r in RULES]
    rows = [{"layer": lyr, "t": t, "j": j, "rule": labels[ri], "ri": ri,
             "expert": f"expert {int(compared.indices[rule][lyr, t, j])}",
             "w": rounded(compared.weights[rule][lyr, t, j])}
            for lyr in range(n_layers) for t in range(n) for j in range(k)
            for ri, rule in enumerate(RULES)]
    mass = compared.mass  # (L, T)
    masses = [{"layer": lyr, "t": t, "m": rounded(mass[lyr, t])}
              for lyr in range(n_layers) for t in range(n)]
    colour = {"field": "rule", "type": "nominal", "title": None, "sort": labels,
              "scale": {"domain": labels, "range": [RULE_COLOURS[r] for r in RULES]},
              "legend": {"orient": "top", "direction": "vertical", "labelLimit": 400}}
    offset = {"field": "rule", "type": "nominal", "sort": labels}
    tip = [{"field": "expert"}, {"field": "rule"}, {"field": "w", "title": "weight w", "format": ".4f"}]
    weights = {
        "data": {"name": "weights"},
        "transform": [{"filter": "datum.layer == layer && datum.t == posi"}],
        "encoding": {"x": {"field": "expert", "type": "nominal", "title": "the chosen experts, best first",
                           "sort": {"field": "j", "op": "min"}, "axis": {"labelAngle": 0}},
                     "xOffset": offset,
                     "y": {"field": "w", "type": "quantitative", "title": "weight w",
                           "scale": {"domain": [0, 1]}}},
        "layer": [{"mark": {"type": "bar"}, "encoding": {"color": colour, "tooltip": tip}},
                  *([{"mark": {"type": "text", "dy": -8, "fontSize": FONT_SIZE - 4, "aria": False},
                      "encoding": {"text": {"field": "w", "type": "quantitative", "format": ".3f"}}}]
                    if k <= 3 else [])],
        "width": min(720, max(300, 3 * k * (48 if k <= 3 else 30))), "height": 220,
        "title": {"text": {"expr": "tokens[posi] + ': its weights under each rule, layer ' + layer"},
                  "subtitle": "the same logits h, the same experts",
                  "subtitleFontSize": FONT_SIZE - 2},
    }
    tall = max(16, min(24, 560 // max(cap, 1)))
    shares = {
        "data": {"name": "mass"},
        "transform": [{"filter": "datum.layer == layer"}, {"calculate": "tokens[datum.t]", "as": "token"}],
        "encoding": {"y": {"field": "t", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                           "axis": token_axis("token", n=cap, free=True)},
                     "x": {"field": "m", "type": "quantitative", "scale": {"domain": [0, 1]},
                           "title": "Σ p over the chosen experts"}},
        "layer": [{"mark": {"type": "bar"},
                   "encoding": {"color": {"condition": {"test": "datum.t == posi", "value": CATEGORICAL[5]},
                                          "value": RULE_COLOURS[PLAIN]},
                                "tooltip": [{"field": "token"},
                                            {"field": "m", "title": "Σ p over the chosen", "format": ".4f"}]}},
                  {"mark": {"type": "text", "align": "left", "dx": 4, "fontSize": FONT_SIZE - 4, "aria": False},
                   "encoding": {"text": {"field": "m", "type": "quantitative", "format": ".3f"}}}],
        "width": 320, "height": {"step": tall},
        "title": {"text": {"expr": "'What softmax → top-k keeps of p, layer ' + layer"},
                  "subtitle": "its weights add up to this; renormalising divides by it",
                  "subtitleFontSize": FONT_SIZE - 2},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer),
              token_slider(cap - 1, "Follow one token", pos, name="pos")]
    return chart({"vconcat": [weights, shares], "spacing": 28,
                 "resolve": {"scale": {"color": "independent"}}},
                 params=params, datasets={"weights": rows, "mass": masses}, tokens=token_labels(tokens),
                 free=True, defaults={"pos": 0}, marks=3 * k * 2 + 2 * cap,
                 description="The same router logits under three routing rules: each chosen "
                            "expert's weight, and the probability the chosen experts hold.",
                            own_size=True)


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
    return chart(body, params=[slider("layer", len(tables) - 1, "Layer", layer)],
                 datasets={"classes": rows}, description="Which expert each class of token goes to.",
                 own_size=True)
