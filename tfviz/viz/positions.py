"""Charts for the embeddings-and-positions lesson (pure: arrays and token strings in, Vega-Lite
dicts out), and its shifted-reading chart (``shifted_chart``: loss against the position a
sentence starts at, one line per position scheme; ``tfviz.experiments.extrapolation``). Heatmaps are ``instant_matrix.matrix_chart``'s, or ``instant_matrix.token_rows_chart``'s when
their rows are the sentence's tokens; lines and planes are written with ``tfviz.viz.kit.charts``.

Every chart that follows the learner's sentence is length-free (``tfviz.viz.kit.instant_length``):
its labels, colour and axis ranges ride in its data, so a new sentence swaps the data of the
charts already drawn instead of drawing them anew.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Mapping, Sequence

from tfviz.experiments.extrapolation import Shifted
from tfviz.viz.kit.charts import ROWS, chart, colour, dashed_rule, n, q, tip, view
from tfviz.viz.kit.instant import heat_layer, stack_rows, unpack
from tfviz.viz.kit.instant_length import SENTENCE_PREFIX, sentence_params
from tfviz.viz.kit.instant_matrix import matrix_chart, token_rows_chart
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels


WIDE = 760  # pixels across a table of dimensions: the page's width less labels and legend


def _tall(rows: int, per_row: int, low: int, high: int) -> int:
    return max(low, min(high, per_row * rows))


def vectors_heatmap(vectors: np.ndarray, tokens: Sequence[str], *, title: str) -> dict:
    """One row per token, one column per dimension (blue negative, red positive), length-free
    (``instant_matrix.token_rows_chart``): "{n}" in ``title`` is the sentence's number of tokens."""
    vectors = np.asarray(vectors, dtype=float)
    return token_rows_chart(vectors, token_labels(tokens), title=title, x_title="dimension",
                            width=WIDE, description=f"One row of {vectors.shape[1]} numbers per "
                                                    "token, blue negative and red positive.")


def pe_heatmap(table: np.ndarray, *, title: str) -> dict:
    """The sine table: positions k down, dimensions j across, values between -1 and 1."""
    table = np.asarray(table, dtype=float)
    return matrix_chart(table, title=title, x_title="dimension j", y_title="position k",
                        diverging=True, domain=(-1.0, 1.0), width=WIDE,
                        height=_tall(len(table), 12, 240, 540),
                        description="The sine table of position vectors: one row per position "
                                    "k, one column per dimension j, values from −1 to 1.")


def similarity_chart(curves: Mapping[str, np.ndarray], *,
                     title: str = "How alike are two position vectors, by distance?") -> dict:
    """Cosine similarity against distance, one line per table ({name: values by distance})."""
    rows = [{"distance": d, "cosine similarity": float(s), "table": name}
            for name, values in curves.items() for d, s in enumerate(np.asarray(values, float))]
    names = sorted(curves)  # colours in name order, as the lesson has always drawn them
    line = view({"type": "line", "point": True, "strokeWidth": 3},
                x=q("distance", "distance between positions |k₁ − k₂|"),
                y=q("cosine similarity", "cosine similarity"),
                color=colour("table", names, title="positions"),
                strokeDash=n("table", "positions", sort=names),  # overlapping lines stay visible
                tooltip=tip("table", "distance", "cosine similarity:.4f"))
    return chart(line, title=title, rows=rows, height=320,
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 160}},
                 description="Cosine similarity of two position vectors against the distance "
                             "between their positions, one line per table: " + ", ".join(names) + ".")


def rope_chart(rows, *, title: str = "RoPE: q·k depends only on the distance",
               model_point: Mapping | None = None) -> dict:
    """Score against the query's position, one line per distance (flat lines = the point).

    ``model_point`` ({"query position", "distance", "q·k after rotation"}): the score the model
    itself computed for the pair, drawn as a black diamond that should sit on its line.
    """
    rows = [{k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()}
            for r in rows]
    # the distances drawn follow the sentence (its last token's distance to the key): the
    # colours take them from the data in ascending order, so the spec stays the same
    layers = [view({"type": "line", "point": True, "strokeWidth": 3},
                   x=q("query position", "position of the query token m"),
                   y=q("q·k after rotation", "q·k after rotation"),
                   color=n("distance", "distance m − n", scale={"range": CATEGORICAL}),
                   tooltip=tip("query position", "key position", "distance",
                               "q·k after rotation:.4f"))]
    sets = {}
    if model_point is not None:
        sets["model"] = [{**{k: (float(v) if isinstance(v, (float, np.floating)) else v)
                             for k, v in model_point.items()}, "what": "the model's own score"}]
        layers.append(view({"type": "point", "shape": "diamond", "size": 260, "filled": True,
                            "color": "black"}, data="model",
                           x=q("query position"), y=q("q·k after rotation"),
                           tooltip=tip("what", "query position", "distance",
                                       "q·k after rotation:.4f")))
    return chart({"layer": layers}, title=title, rows=rows, datasets=sets, height=300,
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 160}},
                 description="RoPE scores q·k against the query's position, one line per "
                             "distance between query and key"
                             + ("; a black diamond marks the model's own score." if model_point
                                else "."))


def position_cosine_heatmap(cosine: np.ndarray, trained: int, *, title: str) -> dict:
    """Cosine of every pair of learned position rows; a frame marks the rows training reached."""
    cosine = np.asarray(cosine, dtype=float)
    size = len(cosine)
    edge = min(trained, size) - 1
    frame = {"data": {"values": [{"a": 0, "b": edge}]},
             "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 2,
                      "aria": False},
             "encoding": {"x": {"field": "a", "type": "ordinal", "bandPosition": 0},
                          "x2": {"field": "b", "bandPosition": 1},
                          "y": {"field": "a", "type": "ordinal", "bandPosition": 0},
                          "y2": {"field": "b", "bandPosition": 1}}}
    side = _tall(size, 12, 300, 520)
    return matrix_chart(cosine, title=title, x_title="position", y_title="position",
                        value_title="cosine", diverging=True, domain=(-1.0, 1.0), width=side,
                        height=side, extra_layers=[frame],
                        description=f"Cosine similarity of every pair of the first {size} learned "
                                    f"position rows; a black frame marks the first {edge + 1}, "
                                    "the rows training reached.")


def rope_turn_figure(q_vec: np.ndarray, q_turned: np.ndarray, k_vec: np.ndarray,
                     k_turned: np.ndarray, query_pos: int, key_pos: int, *,
                     pairs: Sequence[int] = (0, 1, 2, 3),
                     planes: Sequence[tuple[int, int]] | None = None,
                     title: str = "Each pair of q and k, before (dotted) and after (solid) the turn"
                     ) -> dict:
    """One small plane per pair of dimensions: q and k as arrows from the origin, before and
    after RoPE turned them by position · θ_i. ``planes`` names the two dimensions of each pair
    in ``pairs`` (Llama's rotate_half pairs dimension i with i + d/2); left out, pair i is
    (x[2i], x[2i+1]) as in the RoFormer paper. Each plane's range fits its longest arrow and
    rides in the data, so the spec holds nothing of the vectors."""
    vectors = {"q": (np.asarray(q_vec, float), np.asarray(q_turned, float), query_pos),
               "k": (np.asarray(k_vec, float), np.asarray(k_turned, float), key_pos)}
    dims = dict(zip(pairs, planes)) if planes is not None else {i: (2 * i, 2 * i + 1) for i in pairs}
    series = ["q before", "q turned", "k before", "k turned"]
    rows = []
    for i in pairs:
        a, b = dims[i]
        for name, (before, after, pos) in vectors.items():
            for vec, when in ((before, "before"), (after, "turned")):
                rows.append({"pair": int(i), "vector": name, "series": f"{name} {when}",
                             "when": when if when == "before" else f"turned at position {pos}",
                             "x0": 0.0, "y0": 0.0, "x": float(vec[a]), "y": float(vec[b])})
    bounds = {f"b{i}": max(float(np.hypot(v[dims[i][0]], v[dims[i][1]])) for pair in vectors.values()
                           for v in pair[:2]) * 1.15 or 1.0 for i in pairs}
    rows[0].update({f"{SENTENCE_PREFIX}{name}": b for name, b in bounds.items()})
    panels = []
    for i in pairs:
        scale = {"domain": {"expr": f"[-b{i}, b{i}]"}, "nice": False}
        axis = {"labels": False, "ticks": False, "title": None, "grid": False}
        where = [{"filter": f"datum.pair == {int(i)}"}]
        hue = {"field": "series", "type": "nominal", "title": None,
               "scale": {"domain": series, "range": [CATEGORICAL[0]] * 2 + [CATEGORICAL[1]] * 2},
               "legend": {"symbolType": "stroke", "symbolStrokeWidth": 3}}
        dashes = {"field": "series", "type": "nominal", "title": None,  # dotted before, solid after
                  "scale": {"domain": series, "range": [[2, 4], [1, 0], [2, 4], [1, 0]]}}
        tooltip = tip("vector", "when", "x:.3f", "y:.3f")
        axes = [{"data": {"values": [{"z": 0}]}, "mark": {"type": "rule", "color": "#bbbbbb",
                                                           "aria": False},
                 "encoding": {ch: {"field": "z", "type": "quantitative", "scale": scale,
                                   "axis": axis}}} for ch in ("x", "y")]
        panels.append({
            "title": {"text": f"pair {i}", "subtitle": f"dimensions {dims[i][0]} and {dims[i][1]}",
                      "fontSize": FONT_SIZE, "subtitleFontSize": FONT_SIZE - 2},
            "width": 170, "height": 170,
            "layer": [*axes,
                      view({"type": "rule", "strokeWidth": 3}, transform=where,
                           x=q("x0", scale=scale, axis=axis), y=q("y0", scale=scale, axis=axis),
                           x2={"field": "x"}, y2={"field": "y"}, color=hue,
                           strokeDash=dashes, tooltip=tooltip),
                      view({"type": "point", "filled": True, "size": 70}, transform=where,
                           x=q("x"), y=q("y"), color=hue, tooltip=tooltip)],
        })
    # the axes' ranges follow the vectors, so they ride in the data (``sentence_params``): a
    # new sentence then swaps the data of the same chart
    return chart({"hconcat": panels, "spacing": 14}, title=title, rows=rows,
                 params=sentence_params(ROWS, bounds),
                 description="For each of the first pairs of dimensions, the query q and the key "
                             "k as arrows from the origin, dotted before RoPE turned them and "
                             "solid after: " + "; ".join(f"pair {i} is dimensions {a} and {b}"
                                                        for i, (a, b) in dims.items()) + ".")


def rope_frequency_chart(rows: Sequence[Mapping], *,
                         title: str = "How fast each pair turns, plain and stretched") -> dict:
    """θ_i against pair i, one line per scheme (plain, and each scaling), on a log scale: the
    rows of ``tfviz.experiments.rope.stretched_frequencies``."""
    rows = [dict(r) for r in rows]
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))  # plain first, as computed
    line = view({"type": "line", "point": True, "strokeWidth": 3},
                x=q("pair i", "pair i", axis={"tickMinStep": 1}),
                y=q("θ_i (radians per position)", "θ_i, radians a step (log)", scale={"type": "log"}),
                color=colour("scheme", schemes, title="frequencies"),
                strokeDash=n("scheme", "frequencies", sort=schemes),  # overlapping lines stay visible
                tooltip=tip("scheme", "pair i", "θ_i (radians per position):.4g",
                            "wavelength (positions per turn):,.1f"))
    return chart(line, title=title, rows=rows, height=300,
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 200}},
                 description="The angle each pair of dimensions turns per position, against the "
                             "pair's index, on a log scale: one line per scheme (" + ", ".join(schemes)
                             + "). Later pairs turn more slowly.")


def rope_reach_chart(rows: Sequence[Mapping], position: int, trained: int, *,
                     edge_label: str | None = None, title: str | None = None) -> dict:
    """For each pair i and scheme, the position a far ``position`` is read as (its scaled turn
    equals the plain turn of that position), with a rule at the last position of the original
    context (``trained`` − 1, named by ``edge_label``): rows {pair i, scheme, reads as}."""
    rows = [dict(r) for r in rows]
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    line = view({"type": "line", "point": True, "strokeWidth": 3},
                x=q("pair i", "pair i", axis={"tickMinStep": 1}),
                y=q("reads as", f"position {position} reads as"),
                color=colour("scheme", schemes, title="frequencies"),
                strokeDash=n("scheme", "frequencies", sort=schemes),
                tooltip=tip("scheme", "pair i", "reads as:,.1f"))
    rule = dashed_rule("edge", y=q("edge"), tooltip=tip("what"))
    label = view({"type": "text", "align": "left", "dy": -8, "color": "#333333"}, data="edge",
                 x={"datum": 0}, y=q("edge"), text={"field": "what"})
    edge = [{"edge": trained - 1, "what": edge_label or f"original context: {trained} positions"}]
    return chart({"layer": [line, rule, label]}, rows=rows, datasets={"edge": edge}, height=300,
                 title=title or f"Position {position}, as each pair reads it",
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 200}},
                 description=f"For each pair of dimensions, the position that position {position} "
                             "is turned like, one line per scheme (" + ", ".join(schemes) + "); a "
                             f"dashed line marks position {trained - 1}, the last of the original "
                             "context.")


ALIBI_TOKENS = 12  # the lesson draws the penalty over at most the sentence's first 12 tokens


def alibi_figure(bias: np.ndarray, slopes: np.ndarray, tokens: Sequence[str] | None = None, *,
                 title: str = "ALiBi: the penalty −m·|i − j| added to each head's scores"
                 ) -> dict:
    """One (query x key) heatmap of the bias per head, side by side. Length-free
    (``tfviz.viz.kit.instant_length``): laid out for ``ALIBI_TOKENS`` tokens, with the labels and
    the colour range (the largest penalty drawn) in the data, so a shorter sentence swaps it."""
    bias = np.asarray(bias, dtype=float)
    heads, size, _ = bias.shape
    labels = token_labels(tokens) if tokens is not None else [str(i) for i in range(size)]
    cap = max(size, ALIBI_TOKENS)
    low = float(bias.min()) if bias.size and bias.min() < 0 else -1.0
    cell = max(10, min(28, 720 // max(heads * cap, 1)))  # the heads side by side on the page
    tall = max(cell, 22)  # every row's token label fits beside it (taller than wide if need be)
    panels = []
    for h in range(heads):
        panel = heat_layer(cap, cap, x_title="key", y_title="query" if h == 0 else "",
                           value_title="bias", before=[{"filter": f"datum.head == {h}"},
                                                       *unpack("ntok")],
                           diverging=True, domain="[low, -low]", cell=cell, text=False,
                           x_axis=False, y_axis=h == 0, free=True)
        panel["height"] = {"step": tall}
        if h == 0 and cap <= 40:  # every row has room for its label: keep them all
            panel["layer"][0]["encoding"]["y"]["axis"]["labelOverlap"] = False
        panels.append({"data": {"name": "bias"}, **panel,
                       "title": {"text": f"head {h}: m = {slopes[h]:.4g}", "fontSize": FONT_SIZE}})
    return chart({"hconcat": panels, "spacing": 10}, params=[],
                 datasets={"bias": stack_rows(bias, "head")}, title=title, marks=heads * cap * cap,
                 tokens=labels, free=True, sentence={"low": low},
                 description=f"ALiBi's distance penalty for each of {heads} heads: one query × key "
                            "map per head, darker blue for a larger penalty.", own_size=True)


def permutation_map(original: np.ndarray, permuted: np.ndarray, order: np.ndarray,
                    tokens: Sequence[str], *, reordered_first: bool = False,
                    dims: int = 12) -> dict:
    """One of the two pictures of the order test, on one colour scale for both:
    the outputs of the sentence as typed with rows put in the new order ("run, then reorder"),
    or with ``reordered_first`` the outputs of the reordered sentence ("reorder, then run").
    Equal pictures = order-blind.

    Row r is labelled with its token and where that token stood originally: "cat (was 1)".
    """
    order = np.asarray(order)
    rows = [f"{tokens[i]} (was {i})" for i in order]
    a = np.asarray(original, dtype=float)[order][:, :dims]  # (T, dims) rows in the new order
    b = np.asarray(permuted, dtype=float)[:, :dims]  # (T, dims)
    bound = float(max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0))) or 1.0
    shown = b if reordered_first else a
    title = "reorder, then run" if reordered_first else "run, then reorder"
    out = token_rows_chart(shown, rows, title=title, x_title="output dimension",
                           width=20 * shown.shape[1], row=24, most=600, bound=bound,
                           description=f"Outputs of the model without positions, {title}: one "
                                       "row per token, labelled with where it stood.")
    # The two pictures stand side by side: with columns 20 px wide and its colour bar under it
    # rather than beside it, each fits half of the 820 px a page has beside the sidebar at
    # 1280 × 800
    out["config"]["legend"] = {**out["config"]["legend"], "orient": "bottom"}
    return out


# ----- relative positions inside attention: Shaw et al.'s vectors, T5's buckets -----------------
def distance_vectors_chart(keys: np.ndarray, values: np.ndarray, distances: Sequence[int],
                           used: Sequence[bool], *, title: str) -> dict:
    """One layer's Shaw tables side by side: a row per distance j − i (−k at the top), the
    columns of a^K (K0 …) then those of a^V (V0 …), blue negative and red positive; a black
    frame holds the rows training could read (``used``, one run of rows)."""
    keys, values = np.asarray(keys, dtype=float), np.asarray(values, dtype=float)
    both = np.concatenate([keys, values], axis=1)  # (2k + 1, 2 d_head)
    dh = keys.shape[1]
    used = np.asarray(used, dtype=bool)
    first, last = int(np.argmax(used)), int(len(used) - 1 - np.argmax(used[::-1]))
    frame = {"data": {"values": [{"r0": first, "r1": last, "c0": 0, "c1": 2 * dh - 1}]},
             "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 2, "aria": False},
             "encoding": {"x": {"field": "c0", "type": "ordinal", "bandPosition": 0},
                          "x2": {"field": "c1", "bandPosition": 1},
                          "y": {"field": "r0", "type": "ordinal", "bandPosition": 0},
                          "y2": {"field": "r1", "bandPosition": 1}}}
    split = {"data": {"values": [{"c": dh}]},  # a white line between a^K's columns and a^V's
             "mark": {"type": "rule", "color": "white", "strokeWidth": 3, "aria": False},
             "encoding": {"x": {"field": "c", "type": "ordinal", "bandPosition": 0}}}
    labels = [f"{'−' if d < 0 else '+'}{abs(d)}" if d else "0" for d in distances]
    return matrix_chart(both, title=title, x_title="aᴷ (K0 …) and aⱽ (V0 …), one column a dimension",
                        y_title="distance j − i", x_labels=[f"K{c}" for c in range(dh)] + [f"V{c}" for c in range(dh)],
                        y_labels=labels, diverging=True, width=min(WIDE, 20 * 2 * dh),
                        height=_tall(len(both), 14, 240, 520), extra_layers=[frame, split],
                        description=f"Shaw et al.'s learned vectors of one layer: one row per distance "
                                    f"j − i from {distances[0]} to {distances[-1]}, the {dh} numbers "
                                    f"of the key vector a^K and then the {dh} of the value vector a^V; "
                                    f"a black frame holds the rows from {distances[first]} to "
                                    f"{distances[last]}, the distances training could read.")


def distance_preference_chart(distances: Sequence[int], mean: np.ndarray, pairs: Sequence[int],
                              *, title: str, panel: str = "layer") -> dict:
    """Each head's mean position term by distance (``mean`` (L, H, n), Shaw's
    ``shaw_preferences``), one small panel a layer, one line a head; each head's highest point
    is drawn larger."""
    mean = np.asarray(mean, dtype=float)
    L, H, _ = mean.shape
    heads = [f"head {h}" for h in range(H)]
    rows = []
    for layer in range(L):
        best = np.nanargmax(mean[layer], axis=1)  # (H,)
        for h in range(H):
            for c, (d, count) in enumerate(zip(distances, pairs)):
                if np.isfinite(mean[layer, h, c]):
                    rows.append({"layer": layer, "head": heads[h], "distance": int(d),
                                 "mean term": float(mean[layer, h, c]), "pairs": int(count),
                                 "favourite": bool(c == best[h])})
    panels = []
    for layer in range(L):
        where = [{"filter": f"datum.layer == {layer}"}]
        hue = colour("head", heads, title="head")
        panels.append({"title": {"text": f"{panel} {layer}", "fontSize": FONT_SIZE}, "width": 190,
                       "height": 220, "layer": [
            view({"type": "line", "strokeWidth": 2}, transform=where,
                 x=q("distance", "distance j − i"),
                 y=q("mean term", "mean q·aᴷ/√d" if layer == 0 else None), color=hue,  # one title
                 tooltip=tip("head", "distance", "mean term:.4f", "pairs")),
            view({"type": "point", "filled": True, "size": 140}, transform=[*where, {"filter": "datum.favourite"}],
                 x=q("distance"), y=q("mean term"), color=hue,
                 tooltip=tip("head", "distance", "mean term:.4f", "pairs"))]})
    return chart({"hconcat": panels, "spacing": 12}, title=title, rows=rows,
                 resolve={"scale": {"y": "shared"}},  # three panels and the legend fit 820 px
                 config={"legend": {"titleFontSize": FONT_SIZE - 2, "orient": "top"}},
                 description=f"For each of {L} layers, each head's position term q·aᴷ/√d averaged "
                             "over many query and key pairs, against the distance j − i between "
                             "them, one line a head; a large dot marks each head's highest.")


def bucket_chart(rows: Sequence[Mapping], *, title: str) -> dict:
    """T5's bucket of each distance j − i, one stepped line per way of bucketing (rows
    {"distance", "bucket", "bucketing"}): flat stretches are distances that share a bucket."""
    rows = [dict(r) for r in rows]
    kinds = list(dict.fromkeys(r["bucketing"] for r in rows))
    line = view({"type": "line", "interpolate": "step-after", "strokeWidth": 2.5},
                x=q("distance", "distance j − i (key minus query)"), y=q("bucket", "bucket"),
                color=colour("bucketing", kinds, title=None), strokeDash=n("bucketing", None, sort=kinds),
                tooltip=tip("bucketing", "distance", "bucket", "label"))
    return chart(line, title=title, rows=rows, height=280,
                 config={"legend": {"orient": "top", "labelLimit": 320}},
                 description="T5's bucket of every distance j − i, one stepped line per way of "
                             "bucketing (" + ", ".join(kinds) + "): one bucket per distance near "
                             "the query, then ever wider ranges of distances sharing one.")


def bucket_bias_chart(distances: Sequence[int], bias: np.ndarray, farthest: int, *, title: str) -> dict:
    """The bias each head adds to a key at each distance back (``bias`` (H, n) for
    ``distances`` ≤ 0), one stepped line a head, with a dashed rule at the farthest distance
    training read (``farthest`` back)."""
    bias = np.asarray(bias, dtype=float)
    heads = [f"head {h}" for h in range(len(bias))]
    rows = [{"head": heads[h], "back": -int(d), "bias": float(bias[h, c])}
            for h in range(len(bias)) for c, d in enumerate(distances)]
    line = view({"type": "line", "interpolate": "step-after", "strokeWidth": 2.5, "point": True},
                x=q("back", "distance back (i − j)"), y=q("bias", "bias added to the score"),
                color=colour("head", heads, title="head"), tooltip=tip("head", "back", "bias:.4f"))
    edge = [{"back": farthest, "what": f"training read keys up to {farthest} back"}]
    rule = dashed_rule("edge", x=q("back"), tooltip=tip("what"))
    label = view({"type": "text", "align": "left", "dx": 4, "baseline": "top", "color": "#333333"},
                 data="edge", x=q("back"), y={"value": 4}, text={"field": "what"})
    return chart({"layer": [line, rule, label]}, title=title, rows=rows, datasets={"edge": edge},
                 height=300, config={"legend": {"titleFontSize": FONT_SIZE - 2}},
                 description=f"The bias each of {len(bias)} heads adds to a score, against how far "
                             f"back the key is, from {-int(max(distances))} to {-int(min(distances))}; "
                             f"a dashed line at {farthest} back marks the farthest distance training read.")


def shifted_chart(runs: Mapping[str, Shifted], trained: int | None) -> dict:
    """``runs``: {line name: Shifted}; ``trained``: the longest training row (positions
    0..trained-1 were used), drawn as the offset from which a longest row leaves them."""
    names = list(runs)
    rows = [{"model": name, "starts at": k, "loss": round(loss, 4)}
            for name, run in runs.items() for k, loss in zip(run.offsets, run.losses)]
    x = q("starts at", "position the sentence starts at (k)", scale={"type": "symlog"},
          axis={"values": sorted({k for run in runs.values() for k in run.offsets}), "format": "d"})
    lines = view({"type": "line", "point": True}, x=x, y=q("loss", "held-out loss (nats)"),
                 color=colour("model", names, title=None, legend={"orient": "bottom", "columns": 3,
                                                                  "labelLimit": 260}),
                 tooltip=tip("model", "starts at", "loss:.4f"))
    return chart({"layer": [lines]}, rows=rows, height=360,  # title and axes included
                 title={"text": "The same sentences, read further along",
                        "subtitle": "k padding tokens first, hidden from every query"
                                    + (f"; training rows were at most {trained} tokens" if trained else "")},
                 description="Held-out loss of each position scheme's model when its sentences start "
                             "at position k instead of 0: " + "; ".join(
                                 f"{name} from {run.losses[0]:.3f} at 0 to {run.losses[-1]:.3f} at "
                                 f"{run.offsets[-1]}" for name, run in runs.items()) + ".")
