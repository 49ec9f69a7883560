"""Charts for lesson 10 (the feed-forward network): every layer, head and token at once.

Three instant charts, in the conventions of ``tfviz.viz.kit.instant``, and one static one:

- ``neuron_chart``: the layer's strongest neurons for every token, and the share of neurons
  above zero per token. The layer and how many neurons to show are view parameters
  (``layer``, ``neurons``); the server sends each layer's ``max_shown`` strongest neurons.
- ``mixing_chart``: one head's output for one query token as a weighted average of the value
  vectors (weights >= 0, summing to 1), with the checks the page used to print as metrics.
  ``layer``, ``head`` and ``query`` are view parameters.
- ``neuron_steps_chart``: one token's strongest neurons through each step of its layer's
  feed-forward (a SwiGLU's gate, SiLU(gate), up and product; a ReLU's or GELU's input and
  output), then down through W_out to the FFN's output, by hand next to the model's own.
  ``layer`` and ``pos`` are view parameters.
- ``activation_curves_chart`` (static): ReLU, GELU and SiLU side by side, the model's own
  function drawn thick.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, q, tip, view
from tfviz.viz.kit.instant import (DIVERGING_SCHEME, SCHEME, constant, layer_head, packed, rounded,
                                   slider, stack_rows, token_axis, unpack)
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels


PEAK = "toNumber(split(peak, ',')[layer])"  # the chosen layer's colour range, from the data
NEURON = "split(ids, ',')[layer * {most} + {col}]"  # the id of the chosen layer's neuron in a column


def neuron_chart(ids: np.ndarray, acts: np.ndarray, active: np.ndarray, tokens: Sequence[str], *,
                 d_ff: int, activation: str, layer: int = 0, neurons: int = 12,
                 fewest: int = 4) -> dict:
    """Tokens × the layer's strongest neurons, and each token's share of neurons above zero.

    ``ids`` (L, m) are each layer's neurons ranked by their peak activation, ``acts`` (L, T, m)
    their activations in that order, ``active`` (L, T) the share of all ``d_ff`` neurons > 0
    (``tfviz.analysis.ffn.neuron_views``). The chart shows the first ``neurons`` of the m.
    Length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap(T)`` tokens, with
    the neurons' ids and each layer's colour range in the data, so a new sentence of another
    length within the cap swaps the chart's data.
    """
    n_layers, n, most = acts.shape
    labels = token_labels(tokens)
    cap = length_cap(n)
    tall = max(12, min(28, 640 // cap))  # a row per token: labels stay readable
    wide = max(12, min(28, 680 // max(most, 1)))  # a column per neuron: 32 fit in 680 px
    # Each layer's map gets the colour range of its own values (the legend says which), so a
    # layer with small activations is not drawn all dark; GELU's small negatives get a range
    # symmetric about 0, so that -0.1 looks as faint as +0.1.
    peak = [float(np.abs(a).max(initial=0.0)) or 1.0 for a in acts]  # per layer
    if float(np.min(acts, initial=0.0)) < 0:
        scale = {"scheme": DIVERGING_SCHEME, "reverse": True,
                 "domain": {"expr": f"[-{PEAK}, {PEAK}]"}}
    else:
        scale = {"scheme": SCHEME, "domain": {"expr": f"[0, {PEAK}]"}}
    heat = {
        "data": {"name": "neurons"},
        "transform": [{"filter": "datum.layer == layer"}, *unpack(most),
                      {"filter": "datum.col < neurons"},
                      {"calculate": "tokens[datum.row]", "as": "token"},
                      {"calculate": f"'n' + {NEURON.format(most=most, col='datum.col')}", "as": "neuron"}],
        "mark": {"type": "rect"},
        "encoding": {
            "x": {"field": "col", "type": "ordinal",
                  "axis": {"title": "neuron (strongest first)", "labelAngle": -90,
                           "labelExpr": f"'n' + {NEURON.format(most=most, col='datum.value')}"}},
            "y": {"field": "row", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": token_axis("token", n=cap, free=True)},
            "color": {"field": "v", "type": "quantitative", "title": f"after {activation}",
                      "scale": scale},
            "tooltip": [{"field": "token"}, {"field": "neuron"},
                        {"field": "v", "title": "activation", "format": ".4f"}],
        },
        "width": {"step": wide}, "height": {"step": tall},
        "title": {"text": {"expr": "'The ' + neurons + ' neurons of layer ' + layer + "
                                   "' with the largest value anywhere in your text'"},
                  "subtitle": f"mlp.hook_post, after the {activation}: tokens × neurons",
                  "subtitleFontSize": FONT_SIZE - 2},
    }
    bars = {
        "data": {"name": "active"},
        "transform": [{"filter": "datum.layer == layer"},
                      {"calculate": "tokens[datum.t]", "as": "token"}],
        "layer": [
            {"mark": {"type": "bar", "color": CATEGORICAL[0]}},
            {"mark": {"type": "text", "dy": -8, "fontSize": FONT_SIZE - 5},
             "encoding": {"text": {"field": "v", "type": "quantitative", "format": ".0%"}}},
        ] if cap <= 24 else [{"mark": {"type": "bar", "color": CATEGORICAL[0]}}],
        "encoding": {
            "x": {"field": "t", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": token_axis("token", n=cap, free=True)},
            "y": {"field": "v", "type": "quantitative", "title": "share of neurons > 0",
                  "scale": {"domain": [0, 1]}, "axis": {"format": "%"}},
            "tooltip": [{"field": "token"}, {"field": "v", "title": "share active", "format": ".1%"}],
        },
        "width": max(300, min(680, 40 * cap)), "height": 240,
        "title": {"text": {"expr": f"'Share of the {d_ff} neurons above zero, layer ' + layer"}},
    }
    # the strongest neurons and each layer's range follow the sentence: they ride in the data
    sentence = {"ids": ",".join(map(str, np.asarray(ids).astype(int).ravel())), "peak": packed(peak)}
    params = [slider("layer", n_layers - 1, "Layer", layer),
              slider("neurons", most, "Neurons shown", neurons, lower=min(fewest, most))]
    return chart({"vconcat": [heat, bars], "spacing": 30,
                 "resolve": {"legend": {"color": "independent"}}}, params=params,
                 datasets={"neurons": stack_rows(acts, "layer"),
                          "active": [{"layer": int(lyr), "t": int(t), "v": rounded(active[lyr, t])}
                                     for lyr in range(n_layers) for t in range(n)]},
                 tokens=labels, free=True, sentence=sentence,
                 description="The strongest feed-forward neurons of a layer for every token.",
                 own_size=True)


def mixing_chart(weights: np.ndarray, values: np.ndarray, z: np.ndarray, inside: np.ndarray,
                 tokens: Sequence[str], *, layer: int = 0, head: int = 0, query: int | None = None,
                 default_query: int | None = None) -> dict:
    """One head's output for one query, as a weighted average of the value vectors.

    ``weights`` (L, H, T, T), ``values`` (L, H, T, dh), ``z`` (L, H, T, dh) and ``inside``
    (L, H, T) come from ``tfviz.analysis.ffn.mixing_views``. Three panels follow the view:
    the checks (smallest weight, their sum, z inside the range), the weights over the keys,
    and per coordinate every value vector as a tick (darker = more weight) with z as a dot.
    Length-free (``tfviz.viz.kit.instant_length``): ``query`` None opens on the sentence's
    ``default_query`` (else its last token), which travels in the data; the page's
    ``length_marker`` fits the slider to the sentence.
    """
    n_layers, n_heads, n, m = weights.shape
    if n != m:
        raise ValueError(f"expected self-attention weights (L, H, T, T), got {weights.shape}")
    cap = length_cap(n)
    dh = values.shape[-1]
    labels = token_labels(tokens)
    mix = [{"layer": lyr, "head": h, "w": packed(weights[lyr, h]), "val": packed(values[lyr, h]),
            "z": packed(z[lyr, h])} for lyr in range(n_layers) for h in range(n_heads)]
    checks = [{"layer": lyr, "head": h, "q": q, "min": float(weights[lyr, h, q].min()),
               "sum": float(weights[lyr, h, q].sum()), "inside": bool(inside[lyr, h, q])}
              for lyr in range(n_layers) for h in range(n_heads) for q in range(n)]
    this = {"filter": "datum.layer == layer && datum.head == head"}
    metrics = {
        "data": {"name": "checks"},
        "transform": [{"filter": "datum.layer == layer && datum.head == head && datum.q == qi"},
                      {"fold": ["min", "sum", "inside"], "as": ["what", "x"]},
                      {"calculate": "datum.what == 'min' ? 'smallest weight' : datum.what == 'sum' ? "
                                    "'sum of weights' : 'z inside the range'", "as": "name"},
                      {"calculate": "datum.what == 'min' ? format(datum.x, '.4f') : datum.what == "
                                    "'sum' ? format(datum.x, '.6f') : (datum.x ? 'yes' : 'no')",
                       "as": "shown"}],
        "encoding": {"x": {"field": "what", "type": "nominal", "sort": ["min", "sum", "inside"],
                           "axis": None}},
        "layer": [{"mark": {"type": "text", "fontSize": FONT_SIZE - 2, "baseline": "bottom", "dy": -4},
                   "encoding": {"text": {"field": "name"}}},
                  {"mark": {"type": "text", "fontSize": FONT_SIZE + 12, "baseline": "top", "dy": 4},
                   "encoding": {"text": {"field": "shown"}}}],
        "width": 680, "height": 70,  # three names side by side, even at presenter view's 24 px
        "title": {"text": {"expr": "'Head ' + head + ', layer ' + layer + ', query ' + tokens[qi]"}},
    }
    row = [this, {"calculate": "slice(split(datum.w, ','), qi * ntok, qi * ntok + ntok)",
                  "as": "wq"}]
    bars = {
        "data": {"name": "mix"},
        "transform": [*row, {"flatten": ["wq"]},
                      {"window": [{"op": "row_number", "as": "key"}]},
                      {"calculate": "datum.key - 1", "as": "key"},
                      {"calculate": "toNumber(datum.wq)", "as": "weight"},
                      {"calculate": "tokens[datum.key]", "as": "token"}],
        "encoding": {
            "x": {"field": "key", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": token_axis("key token", n=cap, free=True)},
            "y": {"field": "weight", "type": "quantitative", "title": "weight α",
                  "scale": {"domain": [0, 1]}},
            "tooltip": [{"field": "token", "title": "key"},
                        {"field": "weight", "title": "weight α", "format": ".4f"}],
        },
        "layer": [{"mark": {"type": "bar", "color": CATEGORICAL[0]}}]
        + ([{"mark": {"type": "text", "dy": -8, "fontSize": FONT_SIZE - 5},
             "encoding": {"text": {"field": "weight", "type": "quantitative", "format": ".2f"}}}]
           if cap <= 24 else []),
        "width": max(300, min(680, 40 * cap)), "height": 200,
        "title": {"text": {"expr": "'Weights α of ' + tokens[qi] + ' over the keys (they sum to 1)'"}},
    }
    ticks = {
        "transform": [*row, {"calculate": "split(datum.val, ',')", "as": "val"},
                      {"flatten": ["val"]},
                      {"window": [{"op": "row_number", "as": "cell"}]},
                      {"calculate": f"floor((datum.cell - 1) / {dh})", "as": "key"},
                      # keys the query cannot see go first: Streamlit's Vega interprets each
                      # expression per tick, and a GPT-2 head has 64 x 64 of them
                      {"calculate": "toNumber(datum.wq[datum.key])", "as": "weight"},
                      {"filter": "datum.weight > 0"},
                      {"calculate": f"(datum.cell - 1) % {dh}", "as": "coordinate"},
                      {"calculate": "toNumber(datum.val)", "as": "value"},
                      {"calculate": "tokens[datum.key]", "as": "token"}],
        "mark": {"type": "tick", "thickness": 2, "size": 18},
        "encoding": {
            "x": {"field": "coordinate", "type": "ordinal", "title": "coordinate of the head's vector",
                  "axis": {"labelAngle": 0}, "scale": {"domain": list(range(dh))}},
            "y": {"field": "value", "type": "quantitative", "title": "value"},
            "color": {"field": "weight", "type": "quantitative", "title": "weight",
                      "scale": {"scheme": {"name": "greys", "extent": [0.2, 1]}, "domainMin": 0}},
            "tooltip": [{"field": "token", "title": "key"}, {"field": "coordinate"},
                        {"field": "value", "format": ".4f"}, {"field": "weight", "format": ".4f"}],
        },
    }
    dots = {
        "transform": [this, {"calculate": f"slice(split(datum.z, ','), qi * {dh}, qi * {dh} + {dh})",
                             "as": "zq"},
                      {"flatten": ["zq"]},
                      {"window": [{"op": "row_number", "as": "coordinate"}]},
                      {"calculate": "datum.coordinate - 1", "as": "coordinate"},
                      {"calculate": "toNumber(datum.zq)", "as": "value"},
                      {"calculate": "'z (the mix)'", "as": "what"}],
        "mark": {"type": "point", "filled": True, "size": 120, "color": CATEGORICAL[5], "opacity": 1},
        "encoding": {"x": {"field": "coordinate", "type": "ordinal"},
                     "y": {"field": "value", "type": "quantitative"},
                     "tooltip": [{"field": "what", "title": "mark"}, {"field": "coordinate"},
                                 {"field": "value", "format": ".4f"}]},
    }
    spread = {
        "data": {"name": "mix"}, "layer": [ticks, dots], "width": max(300, min(680, 36 * dh)),
        "height": 320,
        "title": {"text": {"expr": "'Head ' + head + ', layer ' + layer + ': values seen by ' + "
                                   "tokens[qi] + ' (ticks) and their mix z (dots)'"}},
    }
    params = [*layer_head(n_layers, n_heads, layer, head),
              token_slider(cap - 1, "Query token", query)]
    return chart({"vconcat": [metrics, bars, spread], "spacing": 30}, params=params,
                 datasets={"mix": mix, "checks": checks}, tokens=labels, free=True,
                 # ticks (counted twice), bars, dots: every view change makes each tick anew (the
                 # flatten), so in SVG every tick's element is removed and made again, where a
                 # map's cells keep theirs; a head of d_head 64 then redraws on a canvas
                 default_query=default_query, marks=2 * cap * dh + cap + dh,
                 description="An attention head's output as a weighted average of value vectors.",
                 own_size=True)


# ----- one token's neurons, step by step, then down ------------------------------------------

HAND_MODEL = ("by hand: h · W_out", "the model's mlp.hook_mlp_out")


def neuron_steps_chart(ids: np.ndarray, values: np.ndarray, share: np.ndarray,
                       output: np.ndarray, model_output: np.ndarray, tokens: Sequence[str], *,
                       columns: Sequence[str], d_ff: int, layer: int = 0,
                       pos: int | None = None, experts: np.ndarray | None = None,
                       expert_weights: np.ndarray | None = None, top_k: int = 1,
                       residual_multiplier: float = 1.0) -> dict:
    """The chosen token's ``m`` strongest neurons of the chosen layer, each step of the
    feed-forward in a column (``columns``: a SwiGLU's gate, SiLU(gate), up, product), then
    the way down: the FFN's first ``k`` outputs rebuilt as h · W_out next to the model's own.

    Arrays from ``tfviz.analysis.ffn.neuron_steps``: ``ids`` (L, T, m), ``values``
    (L, T, m, C), ``share`` (L, T), ``output`` and ``model_output`` (L, T, k). Length-free
    (``tfviz.viz.kit.instant_length``). Each table is coloured from its own largest |value| (``b``,
    in its row): one outlier token elsewhere in the text would leave every other table pale.

    A mixture of experts (``tfviz.analysis.ffn.expert_steps``) also gives ``experts`` and
    ``expert_weights`` (L, T): the neurons are those of each token's first-choice expert, named
    with its router weight under the table, and the way down mixes the token's ``top_k``
    experts (times a Granite's ``residual_multiplier``, as its hook_mlp_out holds them).
    """
    n_layers, n, m, c = values.shape
    k = output.shape[-1]
    cols = list(columns)
    moe = experts is not None
    which = list(HAND_MODEL)
    if moe:
        times = f"{residual_multiplier:g} · " if residual_multiplier != 1.0 else ""
        which = [f"by hand: {times}Σ w_i · h_i W_out^i", HAND_MODEL[1]]
    steps = [{"layer": lyr, "pos": t, "ids": ",".join(map(str, np.asarray(ids[lyr, t]).astype(int))),
              "share": rounded(share[lyr, t]), "v": packed(values[lyr, t]),
              "b": rounded(float(np.abs(values[lyr, t]).max(initial=0.0)) or 1.0)}
             | ({"e": int(experts[lyr, t]), "w": rounded(expert_weights[lyr, t])} if moe else {})
             for lyr, t in np.ndindex(n_layers, n)]
    outs = [{"layer": lyr, "pos": t, "v": packed(np.stack([output[lyr, t], model_output[lyr, t]]))}
            for lyr, t in np.ndindex(n_layers, n)]
    chosen = {"filter": "datum.layer == layer && datum.pos == posi"}
    neuron = {"calculate": "'n' + split(datum.ids, ',')[datum.row]", "as": "neuron"}
    label = {"calculate": "(datum.row + 1) + '. ' + datum.neuron", "as": "nlabel"}
    y = {"field": "nlabel", "type": "ordinal", "title": "neuron (largest |output| first)",
         "sort": {"field": "row", "op": "min"}}
    x = {"field": "col", "type": "ordinal", "scale": {"domain": list(range(c))},
         "axis": {"orient": "top", "title": None, "labelExpr": "columns[datum.value]", "labelAngle": 0,
                  "labelFontSize": FONT_SIZE - 2, "labelLimit": 200}}
    table = {
        "data": {"name": "nsteps"},
        "transform": [chosen, *unpack(c), neuron, label, {"calculate": "columns[datum.col]", "as": "step"},
                      {"calculate": "datum.v / datum.b", "as": "shade"}],
        "encoding": {"x": x, "y": y},
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "shade", "type": "quantitative", "legend": None,
                                    "scale": {"scheme": DIVERGING_SCHEME, "reverse": True, "domainMid": 0,
                                              "domain": [-1, 1]}},
                          "tooltip": [{"field": "neuron"}, {"field": "step"},
                                      {"field": "v", "title": "value", "format": ".4f"}]}},
            {"mark": {"type": "text", "fontSize": FONT_SIZE - 4},
             "encoding": {"text": {"field": "v", "type": "quantitative", "format": ".3f"},
                          "color": {"value": "black"}}},
        ],
        "width": 170 * c, "height": {"step": 24},
        "title": {"text": {"expr": "'Layer ' + layer + ', ' + tokens[posi] + ': ' + "
                                   f"{m} + ' strongest of {d_ff} neurons{' of its first expert' if moe else ''}'"},
                  "subtitle": "red +, blue −; darkest: this table's largest",
                  "subtitleFontSize": FONT_SIZE - 2},
    }
    # two short lines: presenter view draws them at 24 px or more, and one ran past its screen
    lines = (f"'These {m} neurons carry ' + format(datum.share, '.0%') + ' of the sum of "
             f"|{cols[-1]}| over all {d_ff};'", f"'then W_out turns all {d_ff} into the output below.'")
    if moe:  # the expert followed, and how the token's k experts make the output
        mix = ((f"'then each of its {top_k} experts\\' W_out takes its {d_ff} back down,'",
                "'and their router weights mix them into the output below.'") if top_k > 1 else
               (f"'then the expert\\'s W_out takes them back down,'", "'times its weight, into the output below.'"))
        lines = ("'Expert ' + datum.e + ', this token\\'s first choice (router weight ' + "
                 "format(datum.w, '.2f') + '):'",
                 f"'its {m} strongest neurons carry ' + format(datum.share, '.0%') + ' of the sum of "
                 f"|{cols[-1]}| over its {d_ff};'", *mix)
    words = {
        "data": {"name": "nsteps"}, "width": 640, "height": 28 * len(lines) + 4, "transform": [chosen],
        "layer": [{"transform": [{"calculate": text, "as": "line"}],
                   "mark": {"type": "text", "align": "left", "baseline": "top",
                            "fontSize": FONT_SIZE - 2, "limit": 760},
                   "encoding": {"x": {"value": 0}, "y": {"value": 28 * i},
                                "text": {"field": "line", "type": "nominal"}}}
                  for i, text in enumerate(lines)],
    }
    down = {
        "data": {"name": "nout"},
        "transform": [chosen, *unpack(k), {"calculate": "which[datum.row]", "as": "what"}],
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "title": "output dimension",
                  "scale": {"domain": list(range(k))}, "axis": {"labelAngle": 0}},
            "y": {"field": "v", "type": "quantitative", "title": "value"},
            "color": {"field": "what", "type": "nominal", "title": None,
                      "scale": {"domain": which, "range": CATEGORICAL[:2]},
                      "legend": {"orient": "bottom", "labelLimit": 320}},
            "tooltip": [{"field": "what"}, {"field": "col", "title": "dimension"},
                        {"field": "v", "title": "value", "format": ".4f"}],
        },
        "layer": [{"transform": [{"filter": "datum.row == 0"}], "mark": {"type": "line", "point": True}},
                  {"transform": [{"filter": "datum.row == 1"}],
                   "mark": {"type": "point", "size": 140, "filled": False, "strokeWidth": 2}}],
        "width": max(320, min(640, 40 * k)), "height": 220,
        "title": {"text": f"Then down: the first {k} numbers of the "
                          + ("experts' weighted output" if moe else "FFN's output"), "fontSize": FONT_SIZE},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer),
              token_slider(length_cap(n) - 1, "Token", pos, name="pos"),
              constant("columns", cols), constant("which", which)]
    return chart({"vconcat": [table, words, down], "spacing": 20,
                 "resolve": {"scale": {"color": "independent"}}}, params=params,
                 datasets={"nsteps": steps, "nout": outs}, tokens=token_labels(tokens), free=True,
                 defaults={"pos": 0},
                 description="One token's strongest feed-forward neurons through each step, then "
                            "the way down to the block's output.", own_size=True)


def activation_curves_chart(curves: dict[str, np.ndarray], *, own: str) -> dict:
    """ReLU, GELU and SiLU over ``curves["u"]`` (``tfviz.analysis.ffn.activation_curves``),
    one line each; ``own`` (the model's function, "SiLU" for a SwiGLU) is drawn thick."""
    names = [k for k in curves if k != "u"]
    rows = [{"u": float(u), "function": name, "value": float(v)}
            for name in names for u, v in zip(curves["u"], curves[name])]
    line = view({"type": "line"}, x=q("u", "input u"), y=q("value", "output"),
                color=colour("function", names, title=None),
                strokeWidth={"condition": {"test": f"datum.function == '{own}'", "value": 4},
                             "value": 1.5},
                tooltip=tip("function", "u:.2f", "value:.4f"))
    return chart(line, title=f"ReLU, GELU and SiLU (thick: {own}, this model's)", rows=rows,
                 width=520, height=300,
                 description="Three activation functions over the same inputs: ReLU cuts every "
                             "negative input to 0, GELU and SiLU let small negative values "
                             "through and dip below 0.")
