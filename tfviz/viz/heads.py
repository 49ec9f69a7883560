"""The charts of multi-head attention (lessons 7 and 18): every head's map of the chosen layer
with the chosen head large, each head's share of one token's output, which head tells two
nouns apart (coreference), and the loss as heads are pruned one by one.

The maps and shares are instant charts (``tfviz.viz.kit.instant``): every layer's and head's
numbers travel once and the sliders under the chart choose what is drawn. A grouped-query model
(lesson 18) colours each head's title by the K/V group it reads (``GROUP_COLOURS``). The
coreference bars and the pruning line are plain charts of ``tfviz.viz.kit.charts``.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.experiments.pruning import Pruning
from tfviz.viz.kit.charts import chart, colour, dashed_rule, n, q, tip, view
from tfviz.viz.kit.instant import SEPARATOR, heat_layer, layer_head, rounded, stack_rows, unpack
from tfviz.viz.kit.instant_length import length_cap, token_slider
from tfviz.viz.kit.instant_pictures import PICTURE_CELLS, picture, picture_layer, picture_rows
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels


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

    def small_map(h: int) -> dict:  # always a picture: four maps of cells redraw slowly
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


def coref_figure(weights: np.ndarray, nouns: Sequence[str], *, best: tuple[int, int],
                 probe: str) -> dict:
    """Grouped bars: for each (layer, head) the probe's weight on each noun; (L, H, 2).
    "biggest gap" marks the head whose weights differ most."""
    weights = np.asarray(weights, dtype=float)
    layers, heads, _ = weights.shape
    nouns = [str(x) for x in nouns]
    heads_shown = [f"L{layer} H{head}" for layer in range(layers) for head in range(heads)]
    rows = [{"head": f"L{layer} H{head}", "noun": noun, "weight": float(weights[layer, head, p])}
            for layer in range(layers) for head in range(heads) for p, noun in enumerate(nouns)]
    top = max(0.05, float(weights.max(initial=0.0)) * 1.3)  # room for the note over the bars
    x = n("head", "layer and head", sort=heads_shown, axis={"labelAngle": 0})
    bars = view("bar", x=x, xOffset=n("noun", sort=nouns),
                y=q("weight", "attention weight", scale={"domain": [0, top], "nice": False}),
                color=colour("noun", nouns, [CATEGORICAL[p % len(CATEGORICAL)] for p in range(len(nouns))],
                             title="attends to", sort=nouns),
                tooltip=tip("head", "noun", "weight:.4f"))
    mark = {"head": f"L{best[0]} H{best[1]}", "weight": float(weights[best].max()), "text": "biggest gap ↓"}
    note = view({"type": "text", "dy": -4, "fontSize": FONT_SIZE - 2, "baseline": "bottom"},
                data="best", x=n("head", sort=heads_shown), y=q("weight"), text=n("text"))
    return chart({"layer": [bars, note]}, title=f"How much {probe} attends to each noun, head by head",
                 rows=rows, datasets={"best": [mark]}, height=340,
                 description=f"For every layer and head, the attention weight {probe} puts on each "
                             f"noun ({', '.join(nouns)}); the head with the biggest gap, "
                             f"{mark['head']}, is marked.")


def pruning_chart(result: Pruning, model: str) -> dict:
    """Loss against heads kept (all of them on the left), with the whole model's loss dashed."""
    total = len(result.order)
    rows = [{"kept": kept, "loss": round(loss, 4),
             "removed last": "none" if k == 0 else f"layer {result.order[k - 1][0]}, head {result.order[k - 1][1]}"}
            for k, (kept, loss) in enumerate(zip(result.kept, result.losses))]
    x = q("kept", "heads kept", scale={"domain": [total, 0]}, axis={"tickMinStep": 1, "format": "d"})
    line = view({"type": "line", "point": {"size": 60}, "color": CATEGORICAL[0]}, x=x,
                y=q("loss", "loss (nats)", scale={"zero": False}),
                tooltip=tip("kept", "loss:.4f", "removed last"))
    base = dashed_rule("base", y=q("loss"),
                       tooltip=tip({"field": "loss", "title": "whole model", "format": ".4f"}))
    return chart({"layer": [line, base]}, rows=rows, datasets={"base": [{"loss": round(result.base, 4)}]},
                 height=320,  # the whole chart, title and axes included (Streamlit fits its width)
                 title={"text": f"{model}: loss as heads are removed, least missed first",
                        "subtitle": "dashed: the whole model"},
                 description=f"The next-token loss of {model} with all {total} heads and after each "
                             f"further head is removed, from {result.base:.3f} to {result.losses[-1]:.3f}.")
