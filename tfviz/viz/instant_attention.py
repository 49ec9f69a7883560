"""Instant charts of self-attention (lesson 5): one query's trip through the three steps.

The page computes every layer, head and query once (``analysis.attention.
all_queries`` and ``analysis.attention_matrix.matrix_forms``); each builder here packs what its
section needs and lets the browser choose the layer, head and query (parameters ``layer``,
``head``, ``query``, bound to labelled inputs under the chart). Only a what-if (scale, causal
mask, temperature) or a new text reruns the page.

They are length-free (``tfviz.viz.instant_length``): a sentence of 1-16 tokens gets the
same spec as any other, so a new sentence swaps the charts' data instead of drawing them anew.
``query`` is the slider's start (-1 or None: the sentence's ``default_query``, else its last
token), and the expressions read the query shown as ``qi``.

The rows and view controls are ``instant_queries``'s. Every builder returns plain JSON. The
matrices, the flying arrows and lesson 4's lookup bars are in ``instant_attention_maps``.
"""
from __future__ import annotations

import numpy as np

from tfviz.analysis.attention import AllQueries, strongest_keys
from tfviz.viz.instant import constant, heat_layer, spec, stack_rows, token_axis, unpack
from tfviz.viz.instant_length import TOKENS_DOMAIN, length_cap
from tfviz.viz.instant_queries import (BLUE, FREE_ROW, GREY, WHERE, keyed, query_rows,
                                       shown_weights, signed_picture_layer, signed_pictures,
                                       split_keys, title_expr, view_params)
from tfviz.viz.style import FONT_SIZE, token_labels


# --- step 1: the query's q, every key's k and v ---------------------------------------------


def query_vectors(aq: AllQueries, *, layer: int = 0, head: int = 0, query: int | None = None,
                  default_query: int | None = None) -> dict:
    """q of the chosen query (one row of d_k numbers), and k and v of every token for the
    chosen layer's key/value head."""
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
    return spec({"vconcat": [q_view, pair], "spacing": 24, "resolve": apart}, params=params,
                datasets={"q": stack_rows(aq.q, "layer", "head"),
                          **{name: signed_pictures(getattr(aq, name), "layer", "head")
                             for name in "kv"}},
                marks=2 * dk + 2 * cap, tokens=token_labels(aq.tokens),
                free=True, default_query=default_query,
                description="The chosen query's q, and every token's k and v, for the chosen "
                            "layer and head.")


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
    return spec(body, params=view_params((n_layers, n_heads, cap), layer, head, query, free=True),
                datasets={"steps": rows}, marks=10 * cap, tokens=token_labels(aq.tokens),
                free=True, default_query=default_query,
                description="One query's scores with every key: raw, scaled, masked and after "
                            "the softmax.")


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
    return spec(body, params=params, datasets={"weights": rows, "values": values},
                marks=(min(cap, keep) + 2) * (dk + 1), tokens=token_labels(aq.tokens),
                free=True, default_query=default_query,
                description="The chosen query's weighted values, the rest summed, and their sum z.")
