"""The charts of lesson 5 (self-attention): one query's trip through the three steps, and the
whole layer's matrices and flying arrows; layer, head and query switch in the browser, with no
script run.

The page computes every layer, head and query once (``analysis.attention.all_queries`` and
``analysis.attention_matrix.matrix_forms``); each builder packs what its section needs as rows
of ``tfviz.viz.kit.queries`` and lets the browser choose the layer, head and query. Only a
what-if (scale, causal mask, temperature) or a new text reruns the page. Signed matrices (q, k,
v, z) travel as pictures.

In the order of the lesson:
- step 1, the query's q beside every key's k and v (``query_vectors``);
- step 2, its scores step by step: dot product, scale, mask, softmax (``score_steps``);
- step 3, the weighted sum of the values (``weighted_sum``);
- every token at once as matrices (``matrix_views``), and the flying arrows
  (``flying_arrows``): lines from one query to every key, as wide as the weight. The exercises'
  arrows are the same chart (``arrows_for_heads``).

Every chart is length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap(n)``
tokens, it reads the sentence's length ``ntok`` (and its default query ``dq``) from its data, so
a new sentence of another length within the cap swaps the data instead of drawing the chart
anew. A page with a query slider places ``tfviz.ui.views.length_marker`` beside it.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.analysis.attention import SHIFT_SEEN, AllQueries, strongest_keys
from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import (constant, heat_layer, packed, slider, stack_rows, token_axis,
                                   unpack)
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap
from tfviz.viz.kit.instant_pictures import (PICTURE_CELLS, image_layer, index_layer, picture,
                                            picture_layer, picture_rows)
from tfviz.viz.kit.queries import (FREE_ROW, WHERE, keyed, query_rows, shown_weights, split_keys,
                                   title_expr, view_params)
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, GREY, LIGHT_GREY, token_labels


BLUE, VERMILLION, HIDDEN = CATEGORICAL[0], CATEGORICAL[5], "#bdbdbd"  # allowed, query, masked


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
    keeps: one image instead of rows × cols marks, so a view change swaps one picture (a
    thousand cells redraw slowly: bench/bench_views.py). The axes name the tokens and dimensions;
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
    4.2766 as a learner would check it, and a long text's data stays small (bench/bench_payload.py)."""
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
            "color": {"condition": {"test": "datum.allowed", "value": BLUE}, "value": HIDDEN},
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
    hidden["mark"] = {**line["mark"], "fontSize": FONT_SIZE - 2, "color": GREY}
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
                      "value": LIGHT_GREY}},
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


MAX_WIDTH = 14.0  # a line of weight 1 in the flying arrows, in pixels
HEAD = "datum.layer == layer && datum.head == head"  # the rows of the chosen layer and head


# --- all tokens as matrices, and the flying arrows -------------------------------------------


def matrix_views(forms: dict[str, np.ndarray], tokens: Sequence[str], *, layer: int = 0,
                 head: int = 0) -> dict:
    """Q, K, V and Z = A V of the chosen layer and head as heatmaps (2 × 2), and A below.
    ``forms`` is ``analysis.attention_matrix.matrix_forms``'s dictionary of (L, H, ...) arrays.
    Length-free, as lesson 5's other charts (``tfviz.viz.self_attention``)."""
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
    """Lesson 5's flying arrows: ``arrows`` of every layer, head and query of the trace."""
    return arrows(shown_weights(aq), aq.tokens, layer=layer, head=head, query=query,
                  default_query=default_query)


def arrows(weights: np.ndarray, tokens: Sequence[str], *, layer: int = 0, head: int = 0,
           query: int | None = None, default_query: int | None = None) -> dict:
    """The flying arrows: tokens in two columns; from the chosen query on the left a line runs
    to every key it may see on the right, as wide as its weight (1 would be MAX_WIDTH px) and
    darker for the keys it prefers, with the weight written beside the key. ``weights`` is
    (layers, heads, n, n), NaN where the mask hides a key (no line). Length-free, as lesson 5's
    other charts: the columns share out the same height. A model of one layer gets no layer
    slider."""
    n_layers, n_heads, n, _ = weights.shape
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
        "color": {"condition": {"test": "isValid(datum.w)", "value": BLUE}, "value": HIDDEN}}}
    key_text = {"transform": [{"calculate": "datum.label + '  ' + (isValid(datum.w) ? "
                                            "format(datum.w, '.2f') : '(masked)')", "as": "text"}],
                "mark": {"type": "text", "align": "left", "dx": 12, "fontSize": FONT_SIZE - 3,
                         "limit": 200},
                "encoding": {"x": {"value": right}, "y": y, "text": {"field": "text"}}}
    chosen = {"test": "datum.key == qi", "value": VERMILLION}
    queries = {"mark": dot, "encoding": {
        "x": {"value": left}, "y": y, "color": {"condition": chosen, "value": HIDDEN},
        "tooltip": [{"field": "label", "title": "query"}]}}
    query_text = {"mark": {"type": "text", "align": "right", "dx": -12, "fontSize": FONT_SIZE - 3,
                           "limit": 180},
                  "encoding": {"x": {"value": left}, "y": y, "text": {"field": "label"},
                               "color": {"condition": chosen, "value": "black"}}}
    body = {"data": {"name": "weights"}, "transform": base, "width": width, "height": height,
            "layer": [keyed(mark, "key") for mark in (lines, keys, key_text, queries, query_text)],
            "title": title_expr("'Where ' + tokens[qi] + ' looks' + " + WHERE)}
    params = view_params((n_layers, n_heads, cap), layer, head, query, free=True)
    if n_layers == 1:  # nothing to choose
        params[0] = constant("layer", 0)
    return chart(body, params=params,
                 datasets={"weights": query_rows(w=weights)}, marks=5 * cap,
                 tokens=token_labels(tokens),
                 free=True, default_query=default_query,
                 description="Lines from the chosen query to every key, as wide as the attention "
                            "weight.", own_size=True)
