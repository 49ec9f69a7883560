"""Instant charts of attention (lessons 4, 5, 7 and 18): layer, head and query switch in the
browser, with no script run.

The page computes every layer, head and query once (``analysis.attention.all_queries`` and
``analysis.attention_matrix.matrix_forms``); each builder here packs what its section needs and
lets the browser choose the layer, head and query (parameters ``layer``, ``head``, ``query``,
bound to labelled inputs under the chart). Only a what-if (scale, causal mask, temperature) or a
new text reruns the page. Every builder returns plain JSON.

In three parts, top to bottom:
- the shared rows and controls: a dataset row holds one (layer, head, query) and that query's
  numbers over the keys, packed as in ``tfviz.viz.kit.instant.packed``; a weight the mask hides is
  sent empty, so the browser knows the mask without a separate field, and ``split_keys`` turns
  the chosen row back into one datum per key in the browser; signed matrices go as pictures;
- lesson 5's trip of one query through the three steps (its vectors, its scores step by step,
  the weighted sum);
- whole maps: multi-head's maps of every layer and head and each head's share of the output
  (lessons 7 and 18), lesson 5's matrices and flying arrows, lesson 4's lookup bars.

Every chart is length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap(n)``
tokens, it reads the sentence's length ``ntok`` (and its default query ``dq``) from its data, so
a new sentence of another length within the cap swaps the data instead of drawing the chart
anew. ``query`` is the slider's start (-1 or None: the sentence's ``default_query``, else its
last token), and the expressions read the query shown as ``qi``. A page with a query slider
places ``tfviz.ui.views.length_marker`` beside it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.attention import SHIFT_SEEN, AllQueries, strongest_keys
from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import (SEPARATOR, constant, heat_layer, layer_head, packed, rounded,
                                   slider, stack_rows, token_axis, unpack)
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.kit.instant_pictures import (PICTURE_CELLS, image_layer, index_layer, picture, picture_layer,
                                        picture_rows)
from tfviz.viz import lookup as vlookup
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, meaning_scale, token_labels

ROW = "datum.layer == layer && datum.head == head && datum.q == query"
FREE_ROW = "datum.layer == layer && datum.head == head && datum.q == qi"  # length-free charts
BLUE, VERMILLION, GREY = CATEGORICAL[0], CATEGORICAL[5], "#bdbdbd"  # allowed, query, masked
NAMES = "Layer", "Head", "Query token"


def view_params(shape: tuple[int, int, int], layer: int, head: int,
                query: int | None, *, free: bool = False) -> list[dict]:
    """Layer, head and query-token sliders (no query slider when ``query`` is None). The
    token labels the expressions read travel with the data: pass ``tokens=token_labels(...)``
    to ``spec`` (``tfviz.viz.kit.instant``'s docstring says why). ``free``: ``shape``'s length
    is the layout's ``length_cap`` and the query slider a ``token_slider`` (-1: the
    sentence's default query)."""
    n_layers, n_heads, n = shape
    params = layer_head(n_layers, n_heads, layer, head)
    if free:
        params.append(token_slider(n - 1, NAMES[2], query))
    elif query is not None:
        params.append(slider("query", n - 1, NAMES[2], query))
    return params


def query_rows(**fields: np.ndarray) -> list[dict]:
    """One row per (layer, head, query) of (L, H, n, m) arrays, each field packed over m.

    >>> query_rows(w=np.arange(8.0).reshape(1, 1, 2, 4))[1]
    {'layer': 0, 'head': 0, 'q': 1, 'w': '4,5,6,7'}
    """
    first = next(iter(fields.values()))
    return [{"layer": int(lyr), "head": int(h), "q": int(i),
             **{name: packed(a[lyr, h, i]) for name, a in fields.items()}}
            for lyr, h, i in np.ndindex(*first.shape[:3])]


def shown_weights(aq: AllQueries) -> np.ndarray:
    """The weights with NaN where the mask hides a key: ``packed`` sends those empty."""
    return np.where(aq.allowed, aq.weights, np.nan)


def split_keys(*fields: str, key: str = "key") -> list[dict]:
    """Transforms: split the packed ``fields`` of the chosen row, one datum per key (``key``
    numbered from 0)."""
    return [*({"calculate": f"split(datum.{f}, ',')", "as": f} for f in fields),
            {"flatten": list(fields)}, {"window": [{"op": "row_number", "as": key}]},
            {"calculate": f"datum.{key} - 1", "as": key}]


def keyed(view: dict, field: str = "cell") -> dict:
    """``view``'s marks matched to their data by ``field`` when the view changes: the browser
    then updates the SVG elements it has instead of replacing every one (a third less work
    per change on a heatmap)."""
    for layer in view.get("layer", [view]):
        layer["encoding"]["key"] = {"field": field}
    return view


def title_expr(text: str) -> dict:
    """A title whose text is a Vega expression (it follows the view parameters)."""
    return {"text": {"expr": text}}


WHERE = "' (layer ' + layer + ', head ' + head + ')'"


# --- signed matrices (q, k, v, z) as pictures ---------------------------------------------

# Vega's "redblue" reversed, at eleven stops (d3's RdBu): blue negative, white 0, red positive.
BLUE_RED = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7",
            "#f4a582", "#d6604d", "#b2182b", "#67001f"]


def signed_pictures(matrices: np.ndarray, *names: str) -> list[dict]:
    """``picture_rows`` for signed matrices: each (L, H, ...) matrix a picture coloured from
    −m (blue) to +m (red), m its largest |value|, sent as ``m`` for the legend.

    >>> row = signed_pictures(np.array([[[1.0, -2.0]]]), "layer")[0]
    >>> row["layer"], row["m"], row["img"][:22]
    (0, 2.0, 'data:image/png;base64,')
    """
    arr = np.asarray(matrices, dtype=float)
    rows = []
    for index in np.ndindex(*arr.shape[:len(names)]):
        m = float(np.abs(arr[index]).max()) or 1.0  # an all-zero matrix stays white
        rows.append({**dict(zip(names, (int(i) for i in index))), "m": round(m, 4),
                     "img": picture(arr[index], low=-m, high=m, colours=BLUE_RED)})
    return rows


def signed_picture_layer(cols: int, rows: int, *, x_title: str, y_title: str, value_title: str,
                         before: Sequence[dict], cell: int = 14, x_labels: str = "dims",
                         free: bool = False) -> dict:
    """A heatmap of token vectors (rows) drawn from a ``signed_pictures`` row that ``before``
    keeps: one image instead of rows × cols marks, so a view change swaps one picture (the
    matrices tab changed in ~70 ms as 1,000 cells). The axes name the tokens and dimensions;
    the legend runs from −m to +m of the picture shown. No hover values: step 2's table and
    the q row carry the numbers a learner checks. ``free``: ``rows`` is the layout's
    ``length_cap`` and the picture's ``ntok`` rows fill its height."""
    height = min(20 * rows, 720)
    image = image_layer(cell * cols, height, before)
    x = index_layer("x", cols, title=x_title, labels=x_labels)
    y = index_layer("y", rows, title=y_title, free=free, overlap=False if rows <= 40 else None)
    legend = {"transform": [*before, {"calculate": "-datum.m", "as": "low"},
                            {"fold": ["low", "m"], "as": ["end", "v"]}],
              "mark": {"type": "point", "opacity": 0, "aria": False},
              "encoding": {"color": {"field": "v", "type": "quantitative", "title": value_title,
                                     "scale": {"scheme": "redblue", "reverse": True,
                                               "domainMid": 0}}}}
    return {"width": cell * cols, "height": height, "layer": [image, x, y, legend]}

# === lesson 5: one query's trip through the three steps ===================================

# --- step 1: the query's q, every key's k and v ---------------------------------------------


def query_vectors(aq: AllQueries, *, layer: int = 0, head: int = 0, query: int | None = None,
                  default_query: int | None = None, shift: np.ndarray | None = None) -> dict:
    """q of the chosen query (one row of d_k numbers), and k and v of every token for the
    chosen layer's key/value head.

    ``shift`` (L, H, n), from a what-if run (``analysis.attention.query_shift``): a line under
    q says whether the what-if moved the query shown, and by how much."""
    n_layers, n_heads, n, dk = aq.q.shape
    cap = length_cap(n)
    q_view = {
        "data": {"name": "q"},
        **keyed(heat_layer(dk, 1, x_title="dimension", y_title="", value_title="q", diverging=True,
                     domain=None, cell=30, x_labels="dims", y_labels="[tokens[qi]]",
                     text=dk <= 16,
                     before=[{"filter": "datum.layer == layer && datum.head == head"},
                             *unpack(dk), {"filter": "datum.row == qi"},
                             {"calculate": "0", "as": "row"}]), "col"),
        "title": title_expr("'q for ' + tokens[qi] + " + WHERE),
    }
    gqa = any(kv != h for h, kv in enumerate(aq.kv_heads))
    shared = " + (kv[head] == head ? '' : ', shared key/value head ' + kv[head])" if gqa else ""

    def panel(name: str, title: str) -> dict:
        view = signed_picture_layer(dk, cap, x_title="dimension", y_title=title,
                                    value_title=name, free=True,
                                    before=[{"filter": "datum.layer == layer && "
                                                       "datum.head == kv[head]"}])
        return {"data": {"name": name}, **view,
                "title": title_expr(f"'{name} for every token'{shared}")}

    apart = {"scale": {"color": "independent"}}  # each its own colour scale, legend beside it
    pair = {"hconcat": [panel("k", "key token"), panel("v", "value token")], "spacing": 24,
            "resolve": apart}
    params = [*view_params((n_layers, n_heads, cap), layer, head, query, free=True),
              constant("dims", [str(i) for i in range(dk)]), constant("kv", list(aq.kv_heads))]
    q_rows = stack_rows(aq.q, "layer", "head")
    views = [q_view, pair]
    if shift is not None:
        for row, moved in zip(q_rows, np.asarray(shift, dtype=float).reshape(-1, n)):
            row["shift"] = packed(moved)
        views.insert(1, shift_line())
    return chart({"vconcat": views, "spacing": 24, "resolve": apart}, params=params,
                 datasets={"q": q_rows,
                          **{name: signed_pictures(getattr(aq, name), "layer", "head")
                             for name in "kv"}},
                 marks=2 * dk + 2 * cap, tokens=token_labels(aq.tokens),
                 free=True, default_query=default_query,
                 description="The chosen query's q, and every token's k and v, for the chosen "
                            "layer and head.", own_size=True)


def shift_line() -> dict:
    """Two lines under q, from the packed ``shift`` of the chosen layer and head: whether the
    what-if moved the query shown, and why (every layer runs with it, so a later layer reads
    vectors the earlier ones now compute differently)."""
    moved = ("'The what-if moves this query too (an entry by up to ' + format(datum.shift, '.4f')"
             " + '):\\nthe layers before this one now pass on different vectors.'")
    same = "'This query is as in the model\u2019s own run:\\nnothing it is made from changed.'"
    return {
        "transform": [{"filter": "datum.layer == layer && datum.head == head"},
                      *split_keys("shift"), {"filter": "datum.key == qi"},
                      {"calculate": "toNumber(datum.shift)", "as": "shift"},
                      {"calculate": f"datum.shift > {SHIFT_SEEN} ? {moved} : {same}",
                       "as": "line"}],
        "data": {"name": "q"},
        "mark": {"type": "text", "align": "left", "baseline": "top", "fontSize": FONT_SIZE - 1,
                 "lineBreak": "\n", "limit": 600},
        "encoding": {"x": {"value": 0}, "y": {"value": 0}, "text": {"field": "line"}},
        "width": 600, "height": 40}


# --- step 2: scores, scale, mask, softmax ----------------------------------------------------


def score_steps(aq: AllQueries, *, layer: int = 0, head: int = 0, query: int | None = None,
                default_query: int | None = None) -> dict:
    """Four bar rows over the keys (q·k, ÷ divisor, masked, softmax α), a sentence about the
    key with the most weight, and the table of those numbers, for the chosen view.

    When the scaled scores are the raw ones ÷ divisor (no positional bias such as ALiBi),
    only the raw ones travel and the browser divides: the table then shows 17.1065 ÷ 4 =
    4.2766 as a learner would check it, and a 64-token text's data stays under 1 MB."""
    n_layers, n_heads, n, _ = aq.raw.shape
    cap = length_cap(n)
    div = f"{aq.divisor:.4g}"
    width = max(320, min(820, 26 * cap))  # the bars share it out among the sentence's keys
    divided = np.allclose(aq.scaled, aq.raw / aq.divisor, rtol=1e-6, atol=1e-6)
    rows = query_rows(raw=aq.raw, w=shown_weights(aq), **({} if divided else {"s": aq.scaled}))
    for row, top in zip(rows, aq.weights.argmax(-1).ravel()):
        row["top"] = int(top)
    base = [{"filter": FREE_ROW}, *split_keys("raw", "w", *(() if divided else ("s",))),
            {"calculate": "datum.w !== ''", "as": "allowed"},
            {"calculate": "toNumber(datum.raw)", "as": "raw"},
            {"calculate": f"datum.raw / {aq.divisor!r}" if divided else "toNumber(datum.s)",
             "as": "s"},
            {"calculate": "datum.allowed ? toNumber(datum.w) : 0", "as": "w"},
            {"calculate": "datum.allowed ? datum.s : 0", "as": "m"},
            {"calculate": "datum.allowed ? format(datum.s, '.4f') : '−∞'", "as": "mtext"},
            {"calculate": "tokens[datum.key]", "as": "label"}]
    steps = [("raw", "q · k", "raw"), ("s", f"÷ {div}", "s"), ("m", "after the mask", "mtext"),
             ("w", "softmax α", "w")]

    def bars(field: str, name: str, shown: str, last: bool) -> dict:
        x_axis = (token_axis("key token", n=cap, free=True) if last else
                  {"title": None, "labels": False, "ticks": False})
        tip = ({"field": shown, "title": name} if shown == "mtext" else
               {"field": shown, "title": name, "format": ".4f"})
        layers = [{"mark": {"type": "bar"}, "encoding": {
            "x": {"field": "key", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": x_axis},
            "y": {"field": field, "type": "quantitative", "title": None},
            "color": {"condition": {"test": "datum.allowed", "value": BLUE}, "value": GREY},
            "tooltip": [{"field": "label", "title": "key"}, tip], "key": {"field": "key"}}}]
        if field == "m":
            layers.append({"transform": [{"filter": "!datum.allowed"}],
                           "mark": {"type": "text", "dy": -8, "fontSize": FONT_SIZE - 4},
                           "encoding": {"x": {"field": "key", "type": "ordinal"},
                                        "y": {"datum": 0, "type": "quantitative"},
                                        "text": {"value": "−∞"}, "key": {"field": "key"}}})
        return {"width": width, "height": 95, "title": {"text": name, "fontSize": FONT_SIZE - 1},
                "layer": layers}

    sentence = ("'The key with the most weight is ' + datum.label + ':   q·k = '"
                f" + format(datum.raw, '.4f') + '  →  ÷ {div} = ' + format(datum.s, '.4f')"
                " + '  →  α = ' + format(datum.w, '.4f')")
    line = {"mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": FONT_SIZE,
                     "limit": width + 200},
            "encoding": {"x": {"value": 0}, "y": {"value": 11}, "text": {"field": "line"}},
            "width": width, "height": 22}
    best = {**line, "transform": [{"filter": "datum.key == datum.top"},
                                  {"calculate": sentence, "as": "line"}]}
    hidden = {**line, "transform": [
        {"calculate": "datum.allowed ? 0 : 1", "as": "hid"},
        {"aggregate": [{"op": "sum", "field": "hid", "as": "hid"}]},
        {"filter": "datum.hid > 0"},
        {"calculate": "datum.hid + ' later key(s) are masked with −∞, so their weight is "
                      "exactly 0.'", "as": "line"}]}
    hidden["mark"] = {**line["mark"], "fontSize": FONT_SIZE - 2, "color": "#555555"}
    columns = [("key", "datum.label"), ("q·k", "format(datum.raw, '.4f')"),
               (f"÷ {div}", "format(datum.s, '.4f')"), ("after mask", "datum.mtext"),
               ("softmax α", "format(datum.w, '.4f')")]
    col_w = 130
    names = [f"c{i}" for i in range(len(columns))]  # the table's columns, as fields
    table = {
        "width": col_w * len(columns), "height": {"step": 20},
        "transform": [*({"calculate": expr, "as": f"c{i}"} for i, (_, expr) in enumerate(columns)),
                      {"fold": names, "as": ["column", "cell"]},
                      {"calculate": "datum.column + datum.key", "as": "id"}],
        "mark": {"type": "text", "fontSize": FONT_SIZE - 3, "limit": col_w - 8},
        "encoding": {
            "x": {"field": "column", "type": "nominal", "scale": {"domain": names},
                  "axis": {"orient": "top", "title": None, "labelAngle": 0, "ticks": False,
                           "domain": False, "labelFontWeight": "bold",
                           "labelExpr": f"{[c for c, _ in columns]}"
                                        "[toNumber(slice(datum.value, 1))]"}},
            "y": {"field": "key", "type": "ordinal", "axis": None},
            "text": {"field": "cell"}, "key": {"field": "id"},
            "color": {"condition": {"test": "datum.allowed", "value": "black"},
                      "value": "#777777"}},
        "title": {"text": "The same numbers as a table", "fontSize": FONT_SIZE - 1},
    }
    rows_shown = [best, hidden, *(bars(*s, last=i == 3) for i, s in enumerate(steps)), table]
    body = {"data": {"name": "steps"}, "transform": base, "vconcat": rows_shown, "spacing": 16,
            "title": title_expr("'Scores of query ' + tokens[qi] + ' with every key' + "
                                + WHERE)}
    return chart(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                 datasets={"steps": rows}, marks=10 * cap, tokens=token_labels(aq.tokens),
                 free=True, default_query=default_query,
                 description="One query's scores with every key: raw, scaled, masked and after "
                            "the softmax.", own_size=True)


# --- step 3: the weighted sum of the values --------------------------------------------------


def weighted_sum(aq: AllQueries, *, keep: int = 10, layer: int = 0, head: int = 0,
                 query: int | None = None, default_query: int | None = None) -> dict:
    """Rows α_j v_j for the ``keep`` keys with the most weight (in text order), the other keys
    summed in one row, then z = Σ_j α_j v_j as the model recorded it. The browser multiplies
    each α_j (sent per query) by v_j (sent per key/value head)."""
    n_layers, n_heads, n, dk = aq.z.shape
    cap = length_cap(n)
    kept = f"min(ntok, {keep})"  # rows: the kept keys, the others (if any), z
    rows = query_rows(w=aq.weights, z=aq.z)
    for row in rows:
        weights = aq.weights[row["layer"], row["head"], row["q"]]
        row["best"] = ",".join(map(str, strongest_keys(weights, keep)))
    values = [{"id": f"{r['layer']}-{r['head']}", "layer": r["layer"], "v": r["v"]}  # by key/value
              # head; its layer lets a deep model's page send one layer (viz.instant_layer)
              for r in stack_rows(aq.v, "layer", "head")]
    # One chain for every layer: the chosen row, its values v_j, each cell's α_j v_j and the
    # row it is drawn in (its place among the kept keys, or -1 for the others).
    cells = [{"filter": FREE_ROW}, {"calculate": "datum.layer + '-' + kv[datum.head]", "as": "id"},
             {"lookup": "id", "from": {"data": {"name": "values"}, "key": "id", "fields": ["v"]}},
             {"calculate": "split(datum.w, ',')", "as": "alphas"},
             {"calculate": "split(datum.best, ',')", "as": "best"},
             *split_keys("v", key="cell"),
             {"calculate": f"floor(datum.cell / {dk})", "as": "j"},
             {"calculate": f"datum.cell % {dk}", "as": "col"},
             {"calculate": "toNumber(datum.alphas[datum.j])", "as": "alpha"},
             {"calculate": "datum.alpha * toNumber(datum.v)", "as": "v"},
             {"calculate": "indexof(datum.best, '' + datum.j)", "as": "row"}]
    n_rows = f"{kept} + (ntok > {keep} ? 1 : 0) + 1"
    top = [{"filter": "datum.row >= 0"},
           {"calculate": "tokens[datum.j] + '  α=' + format(datum.alpha, '.3f')",
            "as": "rowlabel"}]
    rest = [{"filter": "datum.row < 0"},
            {"aggregate": [{"op": "sum", "field": "v", "as": "v"},
                           {"op": "sum", "field": "alpha", "as": "alpha"},
                           {"op": "count", "as": "count"}], "groupby": ["col"]},
            {"calculate": kept, "as": "row"},
            {"calculate": "datum.count + ' other keys  α=' + format(datum.alpha, '.3f')",
             "as": "rowlabel"}]
    total = [{"filter": "datum.j == 0"},  # one cell per dimension carries z's string
             {"calculate": "toNumber(split(datum.z, ',')[datum.col])", "as": "v"},
             {"calculate": f"{n_rows} - 1", "as": "row"},
             {"calculate": "'z = Σ α_j v_j'", "as": "rowlabel"}]
    colour = {"field": "v", "type": "quantitative", "title": "value",
              "scale": {"scheme": "redblue", "reverse": True, "domainMid": 0}}

    def part(transform: list[dict]) -> list[dict]:
        rect = {"transform": transform, "mark": {"type": "rect"}, "encoding": {
            "x": {"field": "col", "type": "ordinal", "scale": {"domain": list(range(dk))},
                  "axis": {"title": "dimension of the head", "labelAngle": 0}},
            "y": {"field": "row", "type": "ordinal",
                  "scale": {"domain": {"expr": f"sequence(0, {n_rows})"}}, "axis": None},
            "color": colour, "key": {"field": "col"},  # marks kept, not redrawn, on a change
            "tooltip": [{"field": "rowlabel", "title": "row"},
                        {"field": "col", "title": "dimension"},
                        {"field": "v", "title": "value", "format": ".4f"}]}}
        if transform is top:
            rect["encoding"]["key"] = {"field": "cell"}
        label = {"transform": [*transform, {"filter": "datum.col == 0"}],
                 "mark": {"type": "text", "align": "right", "dx": -8, "fontSize": FONT_SIZE - 2,
                          "limit": 260},
                 "encoding": {"x": {"value": 0},
                              "y": {"field": "row", "type": "ordinal", "axis": None},
                              "text": {"field": "rowlabel"}, "key": {"field": "row"}}}
        return [rect, label]

    cell = 24
    body = {"data": {"name": "weights"}, "transform": cells, "width": cell * dk,
            "height": {"step": cell},
            "layer": [*part(top), *(part(rest) if cap > keep else []), *part(total)],
            "title": title_expr("'Weighted values α_j v_j and their sum z for ' + tokens[qi]"
                                " + " + WHERE)}
    params = [*view_params((n_layers, n_heads, cap), layer, head, query, free=True),
              constant("kv", list(aq.kv_heads))]
    return chart(body, params=params, datasets={"weights": rows, "values": values},
                 marks=(min(cap, keep) + 2) * (dk + 1), tokens=token_labels(aq.tokens),
                 free=True, default_query=default_query,
                 description="The chosen query's weighted values, the rest summed, and their sum z.",
                 own_size=True)

# === whole maps: every layer and head, the matrices, flying arrows, lookup bars ===========

MAX_WIDTH = 14.0  # a line of weight 1 in the flying arrows, in pixels (as viz.arrows)
HEAD = "datum.layer == layer && datum.head == head"  # the rows of the chosen layer and head


#: Title colours of the K/V groups (grouped-query attention): Okabe and Ito's blue, vermillion,
#: green and purple, the last three darkened to 4.5:1 on white, as text needs (WCAG 2.2 AA).
GROUP_COLOURS = ("#0072B2", "#B34700", "#007A5E", "#A8537F")
ROW_OF_MAPS = 4  # small maps that fit across a wide page


def attention_maps(patterns: np.ndarray, tokens: Sequence[str], *, names: Sequence[Sequence[str]],
                   layer: int = 0, head: int = 0, groups: Sequence[int] | None = None) -> dict:
    """Multi-head's section 2: the chosen layer's heads side by side, and the chosen head large.

    ``patterns`` is (layers, heads, query, key); ``names`` the role label of each (layer, head).
    Layer and head are sliders; both maps follow them in the browser. The role labels, which
    follow the sentence, travel in the data (``names``, one string: label of layer 0 head 0,
    then head 1, ...). ``groups``: the K/V head each query head reads, under grouped-query
    attention; the small maps are then drawn in one box per K/V head, titled with it, each
    group's titles in its own colour.
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

    maps = [{**data, **small_map(h),
             "title": {"text": {"expr": f"'head {h} · ' + " + role.format(n_heads, h)},
                       "fontSize": FONT_SIZE}} for h in range(n_heads)]
    grid = {"hconcat": maps, "spacing": 12}
    if groups is not None and len(set(groups)) < n_heads:  # shared K/V heads: one box a group
        boxes = []
        for g in sorted(set(groups)):
            members = [h for h in range(n_heads) if groups[h] == g]
            hue = GROUP_COLOURS[g % len(GROUP_COLOURS)]
            for h in members:
                maps[h]["title"]["color"] = hue
            heads = f"{members[0]}–{members[-1]}" if len(members) > 1 else f"{members[0]}"
            boxes.append({"concat": [maps[h] for h in members], "columns": ROW_OF_MAPS, "spacing": 8,
                          "title": {"text": f"K/V head {g}: query heads {heads}", "color": hue,
                                    "fontSize": FONT_SIZE, "anchor": "start"}})
        # the boxes side by side while every map fits one row, else one box under the other
        grid = {"hconcat": boxes, "spacing": 28} if n_heads <= ROW_OF_MAPS else {"vconcat": boxes, "spacing": 20}
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
    params = layer_head(n_layers, n_heads, layer, head)
    rows = picture_rows(patterns, "layer", "head")
    if not pictures:  # the large map's cells, with their values on hover
        rows = [{**r, **s} for r, s in zip(rows, stack_rows(patterns, "layer", "head"))]
    return chart({"vconcat": [grid, big], "spacing": 30}, params=params, free=True,
                 marks=0 if pictures else cap * cap, datasets={"maps": rows}, sentence={"names": roles},
                 tokens=labels,
                 description="Attention weights of every head; layer and head are chosen below.",
                 own_size=True)


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
    params = [*layer_head(n_layers, n_heads, layer, head),
              token_slider(length_cap(n) - 1, "Token", query)]
    return chart(body, params=params, datasets={"shares": rows}, tokens=labels, free=True,
                 default_query=default_query,
                 description="Each head's share of one token's attention output.", own_size=True)


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
    return chart({"vconcat": [grid, big], "spacing": 30, "resolve": apart,
                 "title": title_expr("'Layer ' + layer + ', head ' + head + ' as matrices'")},
                 params=params, datasets=datasets, marks=4 * cap + (0 if pictures else cap * cap),
                 tokens=token_labels(tokens), free=True,
                 description="Q, K, V, Z and A of the chosen layer and head.", own_size=True)


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
    return chart(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                 datasets={"weights": query_rows(w=shown_weights(aq))}, marks=5 * cap,
                 tokens=token_labels(aq.tokens),
                 free=True, default_query=default_query,
                 description="Lines from the chosen query to every key, as wide as the attention "
                            "weight.", own_size=True)


# --- lesson 4: what one query of the model looks up ------------------------------------------

HARD, SOFT = vlookup.HARD, vlookup.SOFT  # the toy table's bars above it use the same kinds


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
    kinds = {"domain": list(vlookup.KINDS)}
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
                      "scale": meaning_scale(vlookup.KINDS),
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
