"""The charts of lesson 8 (masking): every layer's and head's maps, switched in the browser,
and the no-peeking experiment.

Each instant builder takes the trace's arrays for *every* layer and head, so layer and head are
view parameters (``tfviz.viz.kit.instant``) and moving them repaints the chart without a script
run. What changes the computation (the padded sentences, the peeking experiment) stays a
Streamlit widget on the page. The maps are drawn with ``tfviz.viz.kit.maps``.

The charts of the sidebar's sentence (``triangle``, ``two_masks``) are length-free
(``tfviz.viz.kit.instant_length``): laid out for ``length_cap(n)`` tokens, they read the
sentence's length ``ntok`` from their data, so a new sentence of another length within the
cap swaps their data. The padded batch's two sentences are the page's own inputs, and its
token labels ride in the spec. ``logit_change_figure`` (how much peeking at later tokens
changes each prediction) is a plain chart of ``tfviz.viz.kit.charts``.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart, colour, n, o, q, tip, view
from tfviz.viz.kit.instant import constant, layer_head
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.maps import (abs_bound, cells, map_pair, map_rows, map_shape, masked_heat,
                                view_filter)
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels


def triangle(masked_scores: np.ndarray, tokens: Sequence[str], *, layer: int = 0,
             head: int = 0) -> dict:
    """Section 1: the scores after the causal mask, (layers, heads, n, n) with −∞ above the
    diagonal, for the layer and head chosen below the chart. Length-free (module docstring)."""
    n_layers, n_heads, n = map_shape(masked_scores)
    cap = length_cap(n)
    bound = abs_bound(masked_scores)
    body = {"data": {"name": "scores"},
            **masked_heat(cap, cap, keep=view_filter("layer", "head"), bound="bound", free=True),
            "title": {"text": {"expr": "'Scores after the mask, layer ' + layer + ', head ' + head"}}}
    return chart(body, params=layer_head(n_layers, n_heads, layer, head),
                 datasets={"scores": map_rows(masked_scores, "layer", "head", scores=True,
                                             bound=bound)},
                 sentence={"bound": bound},  # as the pictures are coloured
                 tokens=token_labels(tokens), free=True,
                 marks=cells(cap), description="Attention scores after the causal mask; masked cells read −∞.",
                 own_size=True)


def two_masks(bidirectional: np.ndarray, causal: np.ndarray, tokens: Sequence[str], *,
              layer: int = 0, head: int = 0) -> dict:
    """Section 2: the same layer and head's weights with no mask and with the causal mask;
    both (layers, heads, n, n). Length-free (module docstring)."""
    n_layers, n_heads, n = map_shape(bidirectional)
    cap = length_cap(n)
    if causal.shape != bidirectional.shape:
        raise ValueError(f"the two runs differ in shape: {bidirectional.shape} vs {causal.shape}")
    body = map_pair(("bidirectional", "causal"),
                    ("bidirectional: every key", "causal: only earlier keys"), cap,
                    title={"text": {"expr": "'The same weights, two masks (layer ' + layer + "
                                            "', head ' + head + ')'"}}, free=True)
    return chart(body, params=layer_head(n_layers, n_heads, layer, head),
                 datasets={"bidirectional": map_rows(bidirectional, "layer", "head"),
                          "causal": map_rows(causal, "layer", "head")},
                 tokens=token_labels(tokens), free=True,
                 marks=cells(cap, 2), description="Attention weights of one head without and with the causal mask.",
                 own_size=True)


def padded_batch(patterns: np.ndarray, masked_scores: np.ndarray,
                 token_lists: Sequence[Sequence[str]], *, layer: int = 0, head: int = 0) -> dict:
    """Section 3: a padded batch of two sentences. ``patterns`` is (layers, 2, heads, T, T),
    ``masked_scores`` sentence 2's scores after the padding mask, (layers, heads, T, T)."""
    n_layers, batch, n_heads, n, _ = patterns.shape
    if batch != 2 or len(token_lists) != 2:
        raise ValueError("the padding demo shows exactly two sentences")
    maps = map_rows(patterns, "layer", "s", "head")  # "s": which sentence
    bound = abs_bound(masked_scores)
    pair = map_pair(("s1", "s2"), ("sentence 1", "sentence 2 (padded)"), n,
                    labels=("tokens_a", "tokens_b"),
                    title={"text": {"expr": "'Attention of the padded batch (layer ' + layer + "
                                            "', head ' + head + ')'"}})
    scores = {"data": {"name": "s2_scores"},
              **masked_heat(n, n, y_labels="tokens_b", x_labels="tokens_b", bound=bound,
                            keep=view_filter("layer", "head")),
              "title": {"text": {"expr": "'Sentence 2: scores after the mask (pad keys are −∞), "
                                         "layer ' + layer + ', head ' + head"}}}
    params = [*layer_head(n_layers, n_heads, layer, head),
              constant("tokens_a", token_labels(token_lists[0])),
              constant("tokens_b", token_labels(token_lists[1]))]
    body = {"vconcat": [pair, scores], "spacing": 30,  # weights 0..1 and scores: two scales
            "resolve": {"scale": {"color": "independent"}}}
    return chart(body, params=params,
                 datasets={"s1": [r for r in maps if r["s"] == 0],
                          "s2": [r for r in maps if r["s"] == 1],
                          "s2_scores": map_rows(masked_scores, "layer", "head", scores=True, bound=bound)},
                 marks=cells(n, 3), description="A padded batch of two sentences: attention and masked scores.",
                 own_size=True)


def logit_change_figure(change: np.ndarray, tokens: Sequence[str], position: int) -> dict:
    """Bars: the largest logit change at each position after replacing the token at ``position``;
    earlier positions are green and labelled with their change (0 when nothing leaked)."""
    change = np.asarray(change, dtype=float)
    labels = token_labels(tokens)
    where = ["earlier", "edited", "later"]
    rows = [{"position": i, "token": labels[i], "change": float(v),
             "where": where[0] if i < position else where[1] if i == position else where[2],
             "label": ("0" if v == 0 else f"{v:.2g}") if i < position else ""}
            for i, v in enumerate(change)]
    upright = len(labels) <= 16  # side by side while they fit, else turned
    x = o("position", "position",
          axis={"labelExpr": "tokens[datum.value]", "labelAngle": 0 if upright else -45},
          scale={"domain": list(range(len(labels)))})
    bars = view("bar", x=x, y=q("change", "largest change of a logit"),
                color=colour("where", where, [CATEGORICAL[2], CATEGORICAL[5], CATEGORICAL[0]],
                             legend=None),
                tooltip=tip("token", {"field": "change", "title": "max |Δ logit|", "format": ".3g"}))
    text = view({"type": "text", "dy": -8, "baseline": "bottom", "fontSize": FONT_SIZE - 2,
                 "color": CATEGORICAL[2]}, x=o("position"), y=q("change"), text=n("label"))
    return chart({"layer": [bars, text]},
                 # two lines: on one, the title runs past a projector's screen in presenter view
                 title=[f"Logit change at every position after editing position {position}",
                        "(green: earlier positions, labelled with their change)"],
                 rows=rows, height=360, params=[{"name": "tokens", "value": labels}],
                 description=f"The largest change of any logit at each of {len(labels)} positions "
                             f"after the token at position {position} was replaced; earlier "
                             "positions are green and labelled with their change.")
