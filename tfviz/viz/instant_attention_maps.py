"""Instant charts of whole attention maps: multi-head's maps of every layer and head and each
head's share of the output (lessons 7 and 18), lesson 5's matrices and flying arrows, lesson 4's
lookup bars. Layer, head and query switch in the browser (rows and controls from
``instant_queries``).

Every chart here is length-free (``tfviz.viz.instant_length``): laid out for ``length_cap(n)``
tokens, it reads the sentence's length ``ntok`` (and its default query ``dq``) from its data,
so a new sentence of another length within the cap swaps the data instead of drawing the
chart anew. A page with a query slider places ``tfviz.ui.views.length_marker`` beside it."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.attention import AllQueries
from tfviz.viz.instant import (SEPARATOR, constant, heat_layer, rounded, slider, spec, stack_rows,
                               unpack)
from tfviz.viz.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.instant_pictures import PICTURE_CELLS, picture_layer, picture_rows
from tfviz.viz.instant_queries import (BLUE, FREE_ROW, GREY, VERMILLION, WHERE, query_rows,
                                         keyed, shown_weights, signed_picture_layer,
                                         signed_pictures, split_keys, title_expr, view_params)
from tfviz.viz.style import CATEGORICAL, FONT_SIZE, token_labels

MAX_WIDTH = 14.0  # a line of weight 1 in the flying arrows, in pixels (as viz.arrows)
HEAD = "datum.layer == layer && datum.head == head"  # the rows of the chosen layer and head


def attention_maps(patterns: np.ndarray, tokens: Sequence[str], *, names: Sequence[Sequence[str]],
                   layer: int = 0, head: int = 0) -> dict:
    """Multi-head's section 2: the chosen layer's heads side by side, and the chosen head large.

    ``patterns`` is (layers, heads, query, key); ``names`` the role label of each (layer, head).
    Layer and head are sliders; both maps follow them in the browser. The role labels, which
    follow the sentence, travel in the data (``names``, one string: label of layer 0 head 0,
    then head 1, ...).
    """
    n_layers, n_heads, n, m = patterns.shape
    if n != m:
        raise ValueError(f"expected square maps (layers, heads, n, n), got {patterns.shape}")
    labels = token_labels(tokens)
    cap = length_cap(n)
    small = max(3, min(22, 190 // cap))  # four small maps fit a wide page
    pictures = cap * cap > PICTURE_CELLS
    data = {"data": {"name": "maps"}}
    role = "split(names, '\\u001f')[layer * {0} + {1}]"  # names[layer][head]

    def small_map(h: int) -> dict:  # always a picture: four maps of cells cost 0.2 s at 24 tokens
        keep = [{"filter": f"datum.layer == layer && datum.head == {h}"}]
        return picture_layer(cap, cap, x_title="key", y_title="query", value_title="weight",
                             before=keep, cell=small, axes=False, legend=False, free=True)

    grid = {"hconcat": [{**data, **small_map(h),
                         "title": {"text": {"expr": f"'head {h} · ' + " + role.format(n_heads, h)},
                                   "fontSize": FONT_SIZE}} for h in range(n_heads)], "spacing": 12}
    grid["title"] = {"text": {"expr": "'Every head of layer ' + layer"}}
    keep = [{"filter": "datum.layer == layer && datum.head == head"}]
    big = {
        **data,
        **(picture_layer(cap, cap, x_title="key (attended to)", y_title="query (attending)",
                         value_title="weight", before=keep, free=True) if pictures else
           heat_layer(cap, cap, x_title="key (attended to)", y_title="query (attending)",
                      value_title="weight", masked=False, free=True,
                      before=[*keep, *unpack("ntok")])),
        "title": {"text": {"expr": "'Layer ' + layer + ', head ' + head + ' (' + "
                                   + role.format(n_heads, "head") + " + ')'"}},
    }
    roles = SEPARATOR.join(str(name).replace(SEPARATOR, " ") for row in names for name in row)
    params = [slider("layer", n_layers - 1, "Layer", layer), slider("head", n_heads - 1, "Head", head)]
    rows = picture_rows(patterns, "layer", "head")
    if not pictures:  # the large map's cells, with their values on hover
        rows = [{**r, **s} for r, s in zip(rows, stack_rows(patterns, "layer", "head"))]
    return spec({"vconcat": [grid, big], "spacing": 30}, params=params, free=True,
                marks=0 if pictures else cap * cap, datasets={"maps": rows}, sentence={"names": roles},
                tokens=labels,
                description="Attention weights of every head; layer and head are chosen below.")


def head_shares(lengths: np.ndarray, tokens: Sequence[str], *, layer: int = 0, head: int = 0,
                query: int | None = None, default_query: int | None = None) -> dict:
    """Multi-head's section 3: for each layer and token, the length ‖z_h W^O_h‖ of each head's
    share of the attention output. ``lengths`` is (layers, tokens, heads); layer, head (the
    highlighted bar) and the token are chosen below the chart. ``query`` None: the
    sentence's ``default_query`` (else its last token), which travels in the data."""
    n_layers, n, n_heads = lengths.shape
    labels = token_labels(tokens)
    rows = [{"layer": int(lyr), "q": int(q), "head": int(h), "v": rounded(lengths[lyr, q, h])}
            for lyr in range(n_layers) for q in range(n) for h in range(n_heads)]
    base = {
        "data": {"name": "shares"},
        "transform": [{"filter": "datum.layer == layer && datum.q == qi"},
                      {"calculate": "datum.head == head ? 'chosen head' : 'other heads'", "as": "chosen"}],
        "encoding": {
            "x": {"field": "head", "type": "ordinal", "title": "head", "axis": {"labelAngle": 0}},
            "y": {"field": "v", "type": "quantitative", "title": "length of z_h · W^O_h"},
            "tooltip": [{"field": "head"}, {"field": "v", "title": "length", "format": ".4f"}],
        },
    }
    bars = {"mark": {"type": "bar"}, "encoding": {"color": {
        "field": "chosen", "type": "nominal", "title": None, "legend": {"orient": "top"},
        "scale": {"domain": ["other heads", "chosen head"], "range": [CATEGORICAL[0], CATEGORICAL[5]]}}}}
    values = {"mark": {"type": "text", "dy": -10, "fontSize": FONT_SIZE - 2},
              "encoding": {"text": {"field": "v", "type": "quantitative", "format": ".3f"}}}
    body = {**base, "layer": [bars, values], "width": max(240, 90 * n_heads), "height": 300,
            "title": {"text": {"expr": "'How much each head adds to the output for ' + tokens[qi] + ' (layer ' + layer + ')'"}}}
    params = [slider("layer", n_layers - 1, "Layer", layer), slider("head", n_heads - 1, "Head", head),
              token_slider(length_cap(n) - 1, "Token", query)]
    return spec(body, params=params, datasets={"shares": rows}, tokens=labels, free=True,
                default_query=default_query,
                description="Each head's share of one token's attention output.")


# --- all tokens as matrices, and the flying arrows -------------------------------------------


def matrix_views(forms: dict[str, np.ndarray], tokens: Sequence[str], *, layer: int = 0,
                 head: int = 0) -> dict:
    """Q, K, V and Z = A V of the chosen layer and head as heatmaps (2 × 2), and A below.
    ``forms`` is ``analysis.attention_matrix.matrix_forms``'s dictionary of (L, H, ...) arrays.
    Length-free, as lesson 5's other charts (``tfviz.viz.instant_attention``)."""
    n_layers, n_heads, n, dk = forms["Q"].shape
    cap = length_cap(n)

    def panel(name: str, title: str) -> dict:
        view = signed_picture_layer(dk, cap, x_title="dimension", y_title="token",
                                    value_title=name, before=[{"filter": HEAD}], free=True)
        return {"data": {"name": name}, **view,
                "title": title_expr(f"'{title}  (' + ntok + '×{dk})'")}

    apart = {"scale": {"color": "independent"}}  # each matrix its own colour scale
    grid = {"vconcat": [{"hconcat": [panel("Q", "Q"), panel("K", "K")], "spacing": 24,
                         "resolve": apart},
                        {"hconcat": [panel("V", "V"), panel("Z", "Z = A V")], "spacing": 24,
                         "resolve": apart}],
            "resolve": apart, "spacing": 24}
    pictures = cap * cap > PICTURE_CELLS  # a long text's A is a picture (instant_pictures.picture)
    titles = {"x_title": "key", "y_title": "query", "value_title": "weight"}
    big = {"data": {"name": "A"},
           **(picture_layer(cap, cap, **titles, before=[{"filter": HEAD}], free=True) if pictures
              else keyed(heat_layer(cap, cap, **titles, free=True,
                                    before=[{"filter": HEAD}, *unpack("ntok")]))),
           "title": title_expr("'A = attention weights (' + ntok + '×' + ntok + ')' + " + WHERE)}
    params = [*view_params((n_layers, n_heads, cap), layer, head, None),
              constant("dims", [str(i) for i in range(dk)])]
    datasets = {name: signed_pictures(forms[name], "layer", "head") for name in "QKVZ"}
    datasets["A"] = (picture_rows if pictures else stack_rows)(forms["A"], "layer", "head")
    return spec({"vconcat": [grid, big], "spacing": 30, "resolve": apart,
                 "title": title_expr("'Layer ' + layer + ', head ' + head + ' as matrices'")},
                params=params, datasets=datasets, marks=4 * cap + (0 if pictures else cap * cap),
                tokens=token_labels(tokens), free=True,
                description="Q, K, V, Z and A of the chosen layer and head.")


def flying_arrows(aq: AllQueries, *, layer: int = 0, head: int = 0, query: int | None = None,
                  default_query: int | None = None) -> dict:
    """Tokens in two columns; from the chosen query on the left a line runs to every key it
    may see on the right, as wide as its weight (1 would be MAX_WIDTH px) and darker for the
    keys it prefers, with the weight written beside the key. Length-free, as lesson 5's other
    charts (``tfviz.viz.instant_attention``): the columns share out the same height."""
    n_layers, n_heads, n, _ = aq.weights.shape
    cap = length_cap(n)
    left, right, width = 200, 420, 640
    height = max(300, min(1400, 26 * cap))
    y = {"field": "key", "type": "quantitative", "axis": None,
         "scale": {"domain": {"expr": "[-0.5, ntok - 0.5]"}, "reverse": True, "nice": False,
                   "zero": False}}
    weight_tip = [{"field": "label", "title": "key"},
                  {"field": "w", "title": "weight", "format": ".4f"}]
    base = [{"filter": FREE_ROW}, *split_keys("w"),
            {"calculate": "datum.w === '' ? null : toNumber(datum.w)", "as": "w"},
            {"joinaggregate": [{"op": "max", "field": "w", "as": "top"}]},
            {"calculate": "tokens[datum.key]", "as": "label"},
            {"calculate": "qi", "as": "from"}]
    lines = {"transform": [{"filter": "isValid(datum.w)"},
                           {"calculate": "0.25 + 0.75 * datum.w / (datum.top > 0 ? datum.top : 1)",
                            "as": "dark"}],  # darkest for the key it likes most
             "mark": {"type": "rule", "color": BLUE, "strokeCap": "round"},
             "encoding": {"x": {"value": left}, "x2": {"value": right},
                          "y": {**y, "field": "from"}, "y2": {"field": "key"},
                          "strokeWidth": {"field": "w", "type": "quantitative", "legend": None,
                                          "scale": {"domain": [0, 1], "range": [0.5, MAX_WIDTH]}},
                          "opacity": {"field": "dark", "type": "quantitative", "scale": None},
                          "tooltip": weight_tip}}
    dot = {"type": "circle", "size": 90, "opacity": 1}
    keys = {"mark": dot, "encoding": {
        "x": {"value": right}, "y": y, "tooltip": weight_tip,
        "color": {"condition": {"test": "isValid(datum.w)", "value": BLUE}, "value": GREY}}}
    key_text = {"transform": [{"calculate": "datum.label + '  ' + (isValid(datum.w) ? "
                                            "format(datum.w, '.2f') : '(masked)')", "as": "text"}],
                "mark": {"type": "text", "align": "left", "dx": 12, "fontSize": FONT_SIZE - 3,
                         "limit": 200},
                "encoding": {"x": {"value": right}, "y": y, "text": {"field": "text"}}}
    chosen = {"test": "datum.key == qi", "value": VERMILLION}
    queries = {"mark": dot, "encoding": {
        "x": {"value": left}, "y": y, "color": {"condition": chosen, "value": GREY},
        "tooltip": [{"field": "label", "title": "query"}]}}
    query_text = {"mark": {"type": "text", "align": "right", "dx": -12, "fontSize": FONT_SIZE - 3,
                           "limit": 180},
                  "encoding": {"x": {"value": left}, "y": y, "text": {"field": "label"},
                               "color": {"condition": chosen, "value": "black"}}}
    body = {"data": {"name": "weights"}, "transform": base, "width": width, "height": height,
            "layer": [keyed(mark, "key") for mark in (lines, keys, key_text, queries, query_text)],
            "title": title_expr("'Where ' + tokens[qi] + ' looks' + " + WHERE)}
    return spec(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                datasets={"weights": query_rows(w=shown_weights(aq))}, marks=5 * cap,
                tokens=token_labels(aq.tokens),
                free=True, default_query=default_query,
                description="Lines from the chosen query to every key, as wide as the attention "
                            "weight.")


# --- lesson 4: what one query of the model looks up ------------------------------------------

HARD, SOFT = "hard lookup (best key only)", "attention (softmax blend)"  # as viz.lookup


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
    kinds = {"domain": [HARD, SOFT]}
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
                      "scale": {**kinds, "range": [CATEGORICAL[0], CATEGORICAL[1]]},
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
    return spec(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                datasets={"rows": rows}, marks=2 * cap + 1, tokens=token_labels(tokens),
                free=True, default_query=default_query,
                description="Softmax weights of the chosen query beside a hard lookup's one-hot "
                            "weights.")
