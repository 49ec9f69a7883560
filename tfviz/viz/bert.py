"""Instant charts for lesson 15 (BERT): every position's guesses, every head's "it" row.

In the conventions of ``tfviz.viz.kit.instant``: the position (``pos``) and the layer and head
(``layer``, ``head``) are view parameters bound to sliders; the data for every choice is
sent once and the browser filters it, so moving a slider runs nothing on the server. What
changes the computation (the sentence, the masking seed) stays a Streamlit widget.

``guesses_chart`` draws the sentence as a BERT (``model``) reads it after masking (a strip of
tokens, coloured by what the draw did to each) and, for the chosen position, the model's
top guesses as bars, the original token marked. ``it_rows_chart`` draws, for the chosen
layer and head, how much "it" attends to every token of each sentence, the two nouns marked.

``guesses_chart`` is length-free (``tfviz.viz.kit.instant_length``): laid out for
``length_cap(n)`` tokens, it reads the sentence's length and the draw's first chosen position
(where it opens) from its data, so a new sentence of another length within the cap, or a new
draw, swaps its data. The page's ``length_marker`` fits the position slider to the sentence.
So is each panel of ``it_rows_chart``: its cells are sized for its sentence's ``length_cap``
and it is as wide as that sentence's tokens, so a learner's "it" sentence of another length
within the cap swaps data too.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import layer_head, rounded, slider
from tfviz.viz.kit.instant_length import length_cap, token_slider
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, MASKED_GREY, token_labels

KINDS = ("not chosen", "[MASK]", "random token", "unchanged")  # as tfviz.experiments.mlm.KIND_NAMES
KIND_COLOURS = (MASKED_GREY, CATEGORICAL[1], CATEGORICAL[3], CATEGORICAL[2])
ROLES = ("it", "first noun (agent)", "second noun (place)", "other")
ROLE_COLOURS = (CATEGORICAL[5], CATEGORICAL[0], CATEGORICAL[1], "#bdbdbd")


def guesses_chart(reads: Sequence[str], original: Sequence[str], kinds: Sequence[str],
                  guess_tokens: Sequence[Sequence[str]], guess_probs: np.ndarray, *,
                  pos: int | None = None, opens_on: int = 0, model: str = "bert-tiny") -> dict:
    """The masked sentence as a strip, and the top guesses at the position chosen below it.

    ``reads``/``original``: the token the model reads / the one typed, per position;
    ``kinds``: one of KINDS per position; ``guess_tokens`` (n, k) and ``guess_probs`` (n, k):
    the model's k most likely tokens at each position, best first. ``pos``: a shared link's
    position, else None: the chart then opens on ``opens_on`` (the draw's first chosen
    position), which travels in its data. Length-free (module docstring): the chart draws the
    position ``posi``, the slider's kept below the sentence's length, or ``opens_on`` while the
    slider says -1.
    """
    n, k = np.shape(guess_probs)
    if not (len(reads) == len(original) == len(kinds) == len(guess_tokens) == n):
        raise ValueError("one token, kind and row of guesses per position")
    if not 0 <= opens_on < max(n, 1):
        raise ValueError(f"the chart opens on position {opens_on}, outside the {n} tokens")
    cap = length_cap(n)
    probs = rounded(guess_probs)
    typed = token_labels(original)
    strip_rows = [{"i": i, "typed": typed[i], "reads": str(reads[i]), "was": str(original[i]),
                   "kind": kinds[i]} for i in range(n)]
    guess_rows = [{"pos": i, "rank": r, "tok": str(guess_tokens[i][r]), "p": probs[i][r],
                   "right": "the token you typed" if guess_tokens[i][r] == original[i] else "another token"}
                  for i in range(n) for r in range(k)]
    cell = max(28, min(60, 900 // cap))  # a cell a token: the sentence's own tokens are drawn
    x = {"field": "typed", "type": "nominal", "sort": {"field": "i", "op": "min"}, "title": "typed",
         "axis": {"labelAngle": -45, "labelLimit": 120, "labelOverlap": False}}
    strip = {
        "data": {"name": "strip"}, "width": {"step": cell}, "height": 46,
        "encoding": {"x": x},
        "layer": [
            {"mark": {"type": "rect", "stroke": "white", "strokeWidth": 2},
             "encoding": {"color": {"field": "kind", "type": "nominal", "title": "what the draw did",
                                    "scale": {"domain": list(KINDS), "range": list(KIND_COLOURS)},
                                    "legend": {"orient": "top"}},
                          "tooltip": [{"field": "reads", "title": "reads"}, {"field": "was", "title": "typed"},
                                      {"field": "kind", "title": "draw"}]}},
            {"transform": [{"filter": "datum.i == posi"}],
             "mark": {"type": "rect", "filled": False, "stroke": "black", "strokeWidth": 3,
                      "aria": False}},
            {"mark": {"type": "text", "fontSize": FONT_SIZE - 4, "limit": cell - 4, "aria": False},
             "encoding": {"text": {"field": "reads"}}},
        ],
        "title": {"text": f"What {model} reads (the frame marks the position chosen below)",
                  "fontSize": FONT_SIZE},
    }
    bars = {
        "data": {"name": "guesses"}, "width": 420, "height": 26 * k,
        "transform": [{"filter": "datum.pos == posi"}],
        "encoding": {
            "y": {"field": "rank", "type": "ordinal", "title": None,
                  "axis": {"labelExpr": "''", "ticks": False}},
            "x": {"field": "p", "type": "quantitative", "title": "probability",
                  "scale": {"domain": [0, 1]}},
        },
        "layer": [
            {"mark": {"type": "bar"},
             "encoding": {"color": {"field": "right", "type": "nominal", "title": None,
                                    "scale": {"domain": ["the token you typed", "another token"],
                                              "range": [CATEGORICAL[2], CATEGORICAL[0]]},
                                    "legend": {"orient": "top"}},
                          "tooltip": [{"field": "tok", "title": "token"},
                                      {"field": "p", "title": "probability", "format": ".4f"}]}},
            {"mark": {"type": "text", "align": "left", "dx": 4, "fontSize": FONT_SIZE - 2},
             "encoding": {"text": {"field": "label"}}},
        ],
        "title": {"text": {"expr": "length(data('strip')) > posi ? 'Guesses at position ' + posi + ' (' "
                                   "+ data('strip')[posi].kind + '; typed: ' + data('strip')[posi].was "
                                   "+ ')' : ''"},
                  "fontSize": FONT_SIZE},
    }
    bars["transform"].append({"calculate": "datum.tok + '  ' + format(datum.p, '.3f')", "as": "label"})
    # the strip's colours say what the draw did, the bars' whether a guess is right: two scales
    independent = {"scale": {"color": "independent"}, "legend": {"color": "independent"}}
    return chart({"vconcat": [strip, bars], "spacing": 24, "resolve": independent},
                 params=[token_slider(cap - 1, "Position", pos, name="pos")],
                 datasets={"strip": strip_rows, "guesses": guess_rows}, marks=3 * cap + 2 * k,
                 tokens=typed, free=True, defaults={"pos": opens_on},
                 description="The masked sentence, and the model's top guesses at the chosen position.",
                 own_size=True)


def it_rows_chart(rows: Sequence[np.ndarray], tokens: Sequence[Sequence[str]],
                  roles: Sequence[Sequence[str]], titles: Sequence[str], *, layer: int = 0,
                  head: int = 0) -> dict:
    """For each sentence, the weights from "it" to every token in the chosen layer and head.

    ``rows[s]`` is (layers, heads, n_s): sentence s's "it" row of every attention map;
    ``roles[s]`` one of ROLES per token; ``titles[s]`` names the sentence.
    """
    if not (len(rows) == len(tokens) == len(roles) == len(titles)) or not rows:
        raise ValueError("one row array, token list, role list and title per sentence")
    n_layers, n_heads, _ = np.shape(rows[0])
    data, panels = [], []
    for s, (w, toks, role) in enumerate(zip(rows, tokens, roles)):
        w = np.asarray(w, dtype=float)
        if w.shape[:2] != (n_layers, n_heads) or w.shape[2] != len(toks) or len(role) != len(toks):
            raise ValueError(f"sentence {s}: shapes do not match")
        labels = token_labels(toks)
        values = rounded(w)
        data += [{"s": s, "layer": lyr, "head": h, "i": i, "label": labels[i], "role": role[i],
                  "v": values[lyr][h][i]}
                 for lyr in range(n_layers) for h in range(n_heads) for i in range(len(toks))]
        cell = max(22, min(48, 760 // length_cap(len(toks))))  # a bar a token of the sentence
        panels.append({
            "transform": [{"filter": f"datum.s == {s} && datum.layer == layer && datum.head == head"}],
            "width": {"step": cell}, "height": 150,
            "encoding": {
                # "min": the layers filter differently, and Vega-Lite drops a sort it cannot union
                "x": {"field": "label", "type": "nominal", "sort": {"field": "i", "op": "min"}, "title": None,
                      "axis": {"labelAngle": -45, "labelLimit": 120, "labelOverlap": False}},
                "y": {"field": "v", "type": "quantitative", "title": "weight from “it”",
                      "scale": {"domain": [0, 1]}},
            },
            "layer": [
                {"mark": {"type": "bar"},
                 "encoding": {"color": {"field": "role", "type": "nominal", "title": None,
                                        "scale": {"domain": list(ROLES), "range": list(ROLE_COLOURS)},
                                        "legend": {"orient": "top"}},
                              "tooltip": [{"field": "label", "title": "token"}, {"field": "role"},
                                          {"field": "v", "title": "weight", "format": ".4f"}]}},
                {"transform": [{"filter": "datum.role != 'other'"}],
                 "mark": {"type": "text", "dy": -8, "fontSize": FONT_SIZE - 4, "aria": False},
                 "encoding": {"text": {"field": "v", "type": "quantitative", "format": ".2f"}}},
            ],
            "title": {"text": titles[s], "fontSize": FONT_SIZE},
        })
    body = {"data": {"name": "it_rows"}, "vconcat": panels, "spacing": 28,
            "title": {"text": {"expr": "'Where “it” looks: layer ' + layer + ', head ' + head"}}}
    params = layer_head(n_layers, n_heads, layer, head)
    return chart(body, params=params, datasets={"it_rows": data},
                 marks=2 * sum(length_cap(len(t)) for t in tokens),
                 description="Attention from “it” to every token, in each sentence, for the chosen head.",
                 own_size=True)
