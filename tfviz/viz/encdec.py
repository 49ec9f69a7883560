"""Instant charts for lesson 13 (encoder, decoder, encoder-decoder), in the conventions of
``tfviz.viz.kit.instant``: every view of one source is sent at once, and the view controls
(``layer``, ``head``, ``step``) are Vega-Lite parameters, so moving them reruns nothing.

- ``encoder_chart``: the encoder's bidirectional self-attention (layer, head) and its top
  layer's output, the memory (n × d).
- ``decoder_chart``: decoding one step at a time. The causal self-attention map (T × T) and
  the cross-attention map (T × n) show the rows computed up to the chosen step, the new row
  outlined; future rows and their tokens stay hidden. The step's shapes and the next-token
  candidates follow the step.
- ``architectures_chart``: the masks of an encoder-only, a decoder-only and an
  encoder-decoder stack, side by side (a static chart).

Sources are at most 12 letters (``tfviz.decoding.seq2seq.MAX_SOURCE``), so every map is small
and drawn as cells (SVG, with each cell's value in its ARIA label), never as a picture.

The encoder and decoder charts are length-free (``tfviz.viz.kit.instant_length``): laid out for
``length_cap`` of the source's length and of the decoder's steps (1-16 each: every source the
page takes and its answer), they read both lengths from their data (``ntok``: the tokens the
chart is about; ``nsrc``: the source's, in the decoder chart), and everything else that follows
the source (the colour range of the memory, the head that reads backwards, each step's
candidates) rides in the first row of their data. So a new source of another length swaps
their data instead of drawing them anew.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.conventions import range_bind
from tfviz.viz.kit.instant import (SEPARATOR, constant, heat_layer, packed, stack_rows, token_axis,
                                   unpack)
from tfviz.viz.kit.instant_length import length_cap, step_notes, step_params, step_slider
from tfviz.viz.kit.style import MASKED_GREY, CATEGORICAL, FONT_SIZE, token_labels

NEW_ROW = CATEGORICAL[5]  # vermillion: the row this step adds
MASKED = "masked (weight 0)"
MASK_CELL = 24  # five 4 × 4 masks side by side stay under 900 px
NOTE_CHARS = 80  # a step's words wrap here: about 620 px of text, 1,000 px at presenter view's 24 px


def _cell(rows: int, cols: int, room: int = 330) -> int:
    """Pixels per cell so that a map fits ``room`` pixels: 13 steps over 12 letters -> 25."""
    return max(14, min(40, room // max(rows, cols, 1)))


SOURCE_CELL = 40  # the encoder's cells for every source the page takes: 12 letters in 480 px
STEP_CELL = 30  # the decoder's: a 12-letter source's 13 steps beside its letters in 750 px


def encoder_cell(cap: int) -> int:
    """Pixels per cell of the encoder's map laid out for ``cap`` source tokens
    (``length_cap``): every source of the page (1-12 letters, cap 16) at the size of the
    default one; longer sources (only as ids) as ``_cell`` fits them in 360 px.

    >>> encoder_cell(16), encoder_cell(24)
    (40, 15)
    """
    return SOURCE_CELL if cap <= 16 else _cell(cap, cap, 360)


def opening_sliders(n_layers: int, n_heads: int, layer: int | None, head: int | None) -> list[dict]:
    """The layer and head sliders of a chart that opens on a head of the source's own (the
    encoder's sharpest, the decoder's backward reader): each says -1 until a link or the
    learner picks one, and the chart draws ``li`` and ``hi``, the slider's value or, while it
    says -1, ``open_layer`` and ``open_head`` from the data. So the head it opens on follows a
    new source without a new spec; the view script shows it on the sliders (``fit_marker``)."""
    def one(name: str, upper: int, label: str, value: int | None) -> dict:
        value = -1 if value is None or value < 0 else int(min(value, upper))
        return {"name": name, "value": value, "bind": range_bind(label, upper)}
    return [one("layer", n_layers - 1, "Layer", layer), one("head", n_heads - 1, "Head", head),
            {"name": "li", "expr": "layer < 0 ? open_layer : layer"},
            {"name": "hi", "expr": "head < 0 ? open_head : head"}]


def decoder_cell(cap: int) -> int:
    """Pixels per cell of the decoder's two maps laid out for ``cap`` steps and source tokens.

    >>> decoder_cell(16), decoder_cell(24)
    (30, 14)
    """
    return STEP_CELL if cap <= 16 else _cell(cap, cap)


def labels_param(name: str, dataset: str, field: str) -> dict:
    """An expression ``name``: labels packed (joined by instant.SEPARATOR) into ``field`` of
    the first row of ``dataset``, as ``instant.tokens_param`` reads the token labels."""
    rows = f"data('{dataset}')"
    return {"name": name, "expr": f"length({rows}) ? split({rows}[0].{field}, '\\u001f') : []"}


def _joined(labels: Sequence[str]) -> str:
    return SEPARATOR.join(str(t).replace(SEPARATOR, " ") for t in labels)


# --- the encoder ---------------------------------------------------------------------------


def encoder_chart(patterns: np.ndarray, memory: np.ndarray, tokens: Sequence[str], *,
                  opens: tuple[int, int] = (0, 0), layer: int | None = None,
                  head: int | None = None) -> dict:
    """The encoder's self-attention of the chosen layer and head (n × n, nothing masked) over
    the memory (n × d), the top encoder layer's output that cross-attention reads.
    Length-free (module docstring): laid out for ``length_cap(n)`` source tokens; it opens on
    the (layer, head) ``opens`` unless ``layer`` and ``head`` say otherwise (a link's view).

    ``patterns`` is (encoder layers, heads, n, n); ``memory`` is (n, d)."""
    L, H, n, _ = patterns.shape
    d = memory.shape[1]
    cap = length_cap(n)
    keep = [{"filter": "datum.layer == li && datum.head == hi"}, *unpack("ntok")]
    attn = heat_layer(cap, cap, x_title="key (source)", y_title="query (source)", value_title="weight",
                      before=keep, cell=encoder_cell(cap), masked=False, free=True)
    attn["data"] = {"name": "enc"}
    attn["title"] = {"text": {"expr": "'Encoder self-attention · layer ' + li + ', head ' + hi"
                                      " + ' (no mask: every row may use every key)'"}}
    mem = heat_layer(d, cap, x_title="dimension", y_title="source token", value_title="value",
                     before=unpack(d), x_labels="dims", cell=10, masked=False,
                     diverging=True, domain="[-bound, bound]", text=False, free=True)
    x = mem["layer"][0]["encoding"]["x"]  # dimensions: a fixed axis, not the source's tokens
    x.update(axis=token_axis("dimension", labels="dims", n=d), scale={"domain": list(range(d))})
    mem.update(data={"name": "memory"}, height={"step": 22},
               title={"text": {"expr": f"\"Memory: the top encoder layer's output, n × d = \" + ntok"
                                       f" + ' × {d}'"}})
    params = [*opening_sliders(L, H, layer, head), constant("dims", [str(i) for i in range(d)])]
    bound = float(np.abs(memory).max()) or 1.0
    return chart({"vconcat": [attn, mem], "spacing": 28, "resolve": {"scale": {"color": "independent"}}},
                 params=params, datasets={"enc": stack_rows(patterns, "layer", "head"),
                                         "memory": [{"v": packed(memory)}]},
                 tokens=token_labels(tokens), marks=cap * cap + cap * d, free=True,
                 sentence={"bound": round(bound, 4),  # the memory's colour range
                          "open_layer": int(opens[0]), "open_head": int(opens[1])},
                 description="The encoder's attention maps and its output, the memory.",
                 own_size=True)


# --- the decoder, one step at a time --------------------------------------------------------


def _grown(view: dict, *, y_hidden: bool, x_hidden: bool, y_labels: str, x_labels: str) -> dict:
    """Hide the axis labels of tokens not yet written (rows, and for self-attention columns,
    at or past the step) and outline the step's new row."""
    layers = view["layer"]
    enc = layers[0]["encoding"]
    if y_hidden:
        enc["y"]["axis"]["labelExpr"] = f"datum.value < si ? {y_labels}[datum.value] : ''"
    if x_hidden:
        enc["x"]["axis"]["labelExpr"] = f"datum.value < si ? {x_labels}[datum.value] : ''"
    layers.append({"transform": [{"filter": "datum.row == si - 1"}],
                   "mark": {"type": "rect", "filled": False, "stroke": NEW_ROW, "strokeWidth": 2.5,
                            "aria": False},
                   "encoding": {"x": {"field": "col", "type": "ordinal"},
                                "y": {"field": "row", "type": "ordinal"}}})
    return view


def _masked_cells(y_title: str, x_title: str) -> dict:
    """Grey cells for a causal map's masked (empty) entries, with what they mean on hover.

    Hidden from screen readers (``aria: False``): at step 1 there are none, and Vega names an
    empty mark container nothing, an image without a text alternative (axe: svg-img-alt).
    The masked cells are the empty cells of the page's numbers table."""
    return {"transform": [{"filter": "!isValid(datum.v)"}, {"calculate": f"'{MASKED}'", "as": "masked"}],
            "mark": {"type": "rect", "color": MASKED_GREY, "aria": False},
            "encoding": {"x": {"field": "col", "type": "ordinal"}, "y": {"field": "row", "type": "ordinal"},
                         "tooltip": [{"field": "rowlabel", "title": y_title},
                                     {"field": "collabel", "title": x_title},
                                     {"field": "masked", "title": "weight"}]}}


def _note_rows(notes: Sequence[Sequence[str]], width: int = NOTE_CHARS) -> list[dict]:
    """One row per printed line: each step's notes wrapped at ``width`` characters, numbered
    down the step; ``first`` marks the lines of its first note (drawn bold)."""
    rows = []
    for s, lines in enumerate(notes):
        printed = [(j == 0, part) for j, line in enumerate(lines)
                   for part in textwrap.wrap(line, width, subsequent_indent="    ")]
        rows += [{"step": s + 1, "line": i, "first": first, "text": part}
                 for i, (first, part) in enumerate(printed)]
    return rows


def decoder_chart(self_maps: np.ndarray, cross_maps: np.ndarray, dec_tokens: Sequence[str],
                  src_tokens: Sequence[str], notes: Sequence[Sequence[str]],
                  candidates: Sequence[Sequence[str]], probs: Sequence[Sequence[float]],
                  chosen: Sequence[int], anti: tuple[int, int], *, step: int = 1,
                  layer: int | None = None, head: int | None = None) -> dict:
    """Decoding step by step. ``self_maps`` (layers, heads, T, T), nan above the diagonal,
    and ``cross_maps`` (layers, heads, T, n) stack the rows the T steps computed; row t is
    step t + 1's new query. ``dec_tokens`` are what the decoder read (<bos> first), ``notes``
    each step's lines of words, ``candidates``/``probs`` each step's most probable next tokens
    (``chosen`` indexes the written one), ``anti`` the (layer, head) that reads backwards,
    which the chart opens on unless ``layer`` and ``head`` say otherwise. ``step`` counts from 1.

    Length-free (module docstring): laid out for ``length_cap`` of T and of n, it draws
    ``si``, the step chosen kept within the T steps taken (``ntok``)."""
    L, H, T, _ = self_maps.shape
    n = cross_maps.shape[-1]
    t_cap, n_cap = length_cap(T), length_cap(n)
    cell = decoder_cell(max(t_cap, n_cap))
    keep = [{"filter": "datum.layer == li && datum.head == hi"}]
    grow = [{"filter": "datum.row < si"}]  # the rows computed by this step
    own = heat_layer(t_cap, t_cap, x_title="key (decoder tokens so far)", y_title="query (decoder step)",
                     value_title="weight", cell=cell, free=True,  # and only the keys that exist by then
                     before=[*keep, *unpack("ntok"), {"filter": "datum.row < si && datum.col < si"}])
    own["layer"].insert(1, _masked_cells("query (decoder step)", "key (decoder tokens so far)"))
    own = _grown(own, y_hidden=True, x_hidden=True, y_labels="tokens", x_labels="tokens")
    # Titles on two lines: side by side, the two maps fit a projector's width at 24 px text
    own.update(data={"name": "self"}, title={"text": {
        "expr": "['Decoder self-attention (causal)', 'layer ' + li + ', head ' + hi]"}})
    cross = heat_layer(n_cap, t_cap, x_title="key = value (source, from the memory)",
                       y_title="query (decoder step)", value_title="weight", free=True,
                       before=[*keep, *unpack("nsrc"), *grow], x_labels="src", cell=cell, masked=False)
    cross["layer"][0]["encoding"]["x"]["scale"]["domain"] = {"expr": "sequence(0, nsrc)"}
    cross = _grown(cross, y_hidden=True, x_hidden=False, y_labels="tokens", x_labels="src")
    cross.update(data={"name": "cross"}, title={"text": {
        "expr": "['Cross-attention · layer ' + li + ', head ' + hi, "
                "li == open_layer && hi == open_head ? 'reads the source backwards' : '']"}})
    words = step_notes(620)
    # Each step's candidates are rows of "next", step after step, ``shown`` of them a step:
    # the rank axis names those of the step drawn (a list in the spec would hold the words).
    shown = len(candidates[0]) if len(candidates) else 0
    if any(len(c) != shown for c in candidates):
        raise ValueError("every step needs as many candidates as the first")
    bars = {"data": {"name": "next"}, "transform": [{"filter": "datum.step == si"}],
            "encoding": {"y": {"field": "rank", "type": "ordinal", "title": "next token", "axis": {
                             "labelExpr": "candidates[datum.value]", "labelLimit": 120}},
                         "x": {"field": "p", "type": "quantitative", "title": "probability",
                               "scale": {"domain": [0, 1]}}},
            "layer": [{"mark": {"type": "bar"},
                       "encoding": {"color": {"field": "written", "type": "nominal", "title": None,
                                              "scale": {"domain": ["written", "not written"],
                                                        "range": [NEW_ROW, CATEGORICAL[0]]},
                                              "legend": {"orient": "top"}},
                                    "tooltip": [{"field": "token", "title": "next token"},
                                                {"field": "p", "title": "probability", "format": ".4f"}]}},
                      {"mark": {"type": "text", "align": "left", "dx": 6, "fontSize": FONT_SIZE - 2,
                                "aria": False},
                       "encoding": {"text": {"field": "p", "type": "quantitative", "format": ".4f"}}}],
            "width": 420, "height": {"step": 26},
            "title": {"text": {"expr": "'What step ' + si + ' writes: the most probable next token'"}}}
    datasets = {
        "self": stack_rows(self_maps, "layer", "head"),
        "cross": [{**r, **({"src": _joined(token_labels(src_tokens))} if i == 0 else {})}
                  for i, r in enumerate(stack_rows(cross_maps, "layer", "head"))],
        "notes": _note_rows(notes),
        "next": [{"step": s + 1, "rank": r, "token": tok, "p": round(float(p), 4),
                  "written": "written" if r == chosen[s] else "not written"}
                 for s in range(T) for r, (tok, p) in enumerate(zip(candidates[s], probs[s]))],
    }
    rows = "data('next')"
    params = [step_slider(t_cap, step),
              *opening_sliders(L, H, layer, head),
              {"name": "candidates", "expr": f"slice(pluck({rows}, 'token'), (si - 1) * {shown}, "
                                             f"si * {shown})"},
              labels_param("src", "cross", "src"), {"name": "nsrc", "expr": "length(src)"},
              *step_params()]
    body = {"vconcat": [words, {"hconcat": [own, cross], "spacing": 40}, bars], "spacing": 24,
            "resolve": {"scale": {"color": "independent"}}}
    return chart(body, params=params, datasets=datasets, tokens=token_labels(dec_tokens), free=True,
                 sentence={"open_layer": int(anti[0]), "open_head": int(anti[1])},  # it opens there
                 marks=t_cap * t_cap + t_cap * n_cap + t_cap,
                 title={"text": {"expr": "'Decoding step ' + si + ' of ' + ntok"}},
                 description="The decoder's self-attention and cross-attention, one step at a time.",
                 own_size=True)


# --- three stacks and their masks ---------------------------------------------------------


def architectures_chart(panels: Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]],
                        src: Sequence[str], tgt: Sequence[str]) -> dict:
    """The stacks side by side, each with its masks: ``panels`` is [(stack name, [(attention,
    allowed), ...])], allowed (queries, keys) boolean. Axes are labelled with ``src`` (a
    source, or the text an encoder-only or decoder-only model reads) or ``tgt`` (the decoder's
    tokens) by the attention's name: "decoder self-attention" reads ``tgt`` on both axes,
    "cross-attention" ``tgt`` against ``src``."""
    groups, datasets = [], {}
    for p, (stack, masks) in enumerate(panels):
        views = []
        for m, (what, allowed) in enumerate(masks):
            q, k = allowed.shape
            name = f"mask{p}{m}"
            y = "tgt" if what.startswith(("decoder", "cross")) else "src"
            x = "tgt" if what.startswith("decoder") else "src"
            datasets[name] = [{"row": int(i), "col": int(j), "allowed": bool(allowed[i, j]),
                               "v": "may attend" if allowed[i, j] else "−∞ (masked)"}
                              for i in range(q) for j in range(k)]
            where = {"x": {"field": "col", "type": "ordinal", "title": "key",
                           "axis": {"labelExpr": f"{x}[datum.value]", "labelAngle": -45}},
                     "y": {"field": "row", "type": "ordinal", "title": "query",
                           "axis": {"labelExpr": f"{y}[datum.value]"}}}
            views.append({"data": {"name": name}, "width": MASK_CELL * k, "height": MASK_CELL * q,
                          "title": {"text": textwrap.wrap(what, 16), "fontSize": FONT_SIZE - 3},
                          "encoding": where, "layer": [
                              {"mark": {"type": "rect", "stroke": "white"},
                               "encoding": {"color": {"condition": {"test": "datum.allowed",
                                                                    "value": CATEGORICAL[0]},
                                                      "value": MASKED_GREY},
                                            "tooltip": [{"field": "v", "title": "attention"}]}},
                              {"transform": [{"filter": "!datum.allowed"}],
                               "mark": {"type": "text", "fontSize": FONT_SIZE - 5, "color": "#444",
                                        "aria": False},
                               "encoding": {"text": {"value": "−∞"}}}]})
        groups.append({"hconcat": views, "spacing": 16,
                       "title": {"text": stack, "fontSize": FONT_SIZE, "anchor": "start"}})
    params = [constant("src", [str(s) for s in src]), constant("tgt", [str(t) for t in tgt])]
    return chart({"hconcat": groups, "spacing": 48}, params=params, datasets=datasets,
                 marks=sum(len(v) for v in datasets.values()),
                 description="The attention masks of an encoder, a decoder and an encoder-decoder.",
                 own_size=True)
