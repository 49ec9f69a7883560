"""Instant charts for lesson 8 (masking): every layer's and head's maps, switched in the browser.

Each builder takes the trace's arrays for *every* layer and head, so layer and head are view
parameters (``tfviz.viz.kit.instant``) and moving them repaints the chart without a script run.
What changes the computation (the padded sentences, the peeking experiment) stays a
Streamlit widget on the page.

A masked score (−∞) travels as an empty entry of the packed row (``instant.packed``) and is
drawn as a grey cell that reads "−∞", with "masked (−∞)" as its value in the tooltip and the
mark's ARIA label.

A long text's maps (more than ``instant_pictures.PICTURE_CELLS`` cells) travel as pictures instead, as
multi-head's do: thousands of cells as separate marks took the browser up to a second and a
half per view change. Weights use instant's cividis pictures; scores get ``score_picture``'s
red-blue, with masked cells grey, on one colour range for every layer and head.

``map_pair`` (two attention maps on one 0..1 scale, side by side when they fit) is shared
with lesson 6 (``tfviz.viz.instant_scaling``).

The charts of the sidebar's sentence (``triangle``, ``two_masks``) are length-free
(``tfviz.viz.kit.instant_length``): laid out for ``length_cap(n)`` tokens, they read the
sentence's length ``ntok`` from their data, so a new sentence of another length within the
cap swaps their data. The padded batch's two sentences are the page's own inputs, and its
token labels ride in the spec.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.attention import MASKED_GREY
from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.conventions import cell_size
from tfviz.viz.kit.instant import DIVERGING_SCHEME, constant, heat_layer, layer_head, stack_rows, unpack
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.instant_pictures import PICTURE_CELLS, RED_BLUE, picture, picture_layer, picture_rows
from tfviz.viz.kit.style import FONT_SIZE, token_labels

MASKED = "masked (−∞)"
SIDE_BY_SIDE = 20  # up to this many tokens two maps sit next to each other; more are stacked
WIDTH = 640  # pixels of cells across a chart: with labels and legend it stays under ~900 px


def fit_cell(n: int, across: int = 1) -> int:
    """Pixels per cell so that ``across`` maps of ``n`` columns fill about WIDTH pixels.

    >>> fit_cell(13), fit_cell(13, across=2), fit_cell(64), fit_cell(128)
    (44, 24, 10, 6)
    """
    return cell_size(across * n, smallest=6, width=WIDTH)




def pictured(n: int) -> bool:
    """Whether maps of ``n`` tokens travel as pictures (see the module docstring)."""
    return n * n > PICTURE_CELLS


def abs_bound(scores: np.ndarray) -> float:
    """The colour range ±bound of every view of ``scores``: the largest finite |score|.

    >>> abs_bound(np.array([[1.0, -np.inf], [-3.0, 2.0]]))
    3.0
    """
    finite = np.abs(scores[np.isfinite(scores)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def score_picture(matrix: np.ndarray, bound: float) -> str:
    """Scores as a PNG data URL, one pixel per cell: red-blue from −bound to +bound, masked
    (−∞) cells grey."""
    return picture(matrix, low=-bound, high=bound, colours=RED_BLUE, masked=MASKED_GREY)


def map_rows(maps: np.ndarray, *names: str, scores: bool = False, bound: float = 1.0) -> list[dict]:
    """The rows a chart of these maps needs: packed cells (``stack_rows``, field ``v``) for a
    short text, pictures (field ``img``) for a long one."""
    n = maps.shape[-1]
    if not pictured(n):
        return stack_rows(maps, *names)
    if not scores:
        return picture_rows(maps, *names)
    return [{**dict(zip(names, (int(i) for i in index))), "img": score_picture(maps[index], bound)}
            for index in np.ndindex(*maps.shape[:len(names)])]


def cells(n: int, panels: int = 1) -> int:
    """Marks that ``panels`` maps of ``n`` tokens draw (none when they are pictures): the
    renderer's choice (``charts.chart``)."""
    return 0 if pictured(n) else panels * n * n


def view_filter(*fields: str) -> dict:
    """Keep the rows of the chosen view: ``view_filter("layer", "head")`` keeps
    ``datum.layer == layer && datum.head == head``."""
    return {"filter": " && ".join(f"datum.{f} == {f}" for f in fields)}


def view_params(n_layers: int, n_heads: int, layer: int, head: int) -> list[dict]:
    """The layer and head sliders every chart of lessons 6 and 8 has."""
    return layer_head(n_layers, n_heads, layer, head)


def masked_heat(n: int, m: int, *, keep: dict, x_labels: str = "tokens",
                y_labels: str = "tokens", cell: int | None = None, value_title: str = "score",
                x_title: str = "key", y_title: str = "query", bound: float | str = 1.0,
                free: bool = False) -> dict:
    """``heat_layer`` of scores from −bound to +bound (reversed red-blue), with every masked
    cell grey and reading "−∞"; its value in the tooltip and ARIA label is "masked (−∞)".
    ``keep`` is the filter that keeps the view's row. One range for every layer and head keeps
    the legend still when the view changes (relaying it out cost a third of a view change).
    A long text's scores are a picture (``map_rows(..., scores=True, bound=bound)``).
    ``free``: a length-free map (``n`` and ``m`` its ``length_cap``) of ``ntok`` cells a side;
    ``bound`` may then name an expression (``charts.chart(sentence=...)``), so that the
    range rides in the data rather than in the spec."""
    cell = cell or fit_cell(max(n, m))
    domain = {"expr": f"[-{bound}, {bound}]"} if isinstance(bound, str) else [-bound, bound]
    if pictured(max(n, m)):
        view = picture_layer(m, n, x_title=x_title, y_title=y_title, value_title=value_title,
                             before=[keep], cell=cell, free=free,
                             x_labels=x_labels, y_labels=y_labels)
        view["layer"][1]["encoding"]["color"]["scale"] = {
            "domain": domain, "scheme": DIVERGING_SCHEME, "reverse": True}
        return view
    view = heat_layer(m, n, x_title=x_title, y_title=y_title, value_title=value_title,
                      before=[keep, *unpack("ntok" if free else m)], x_labels=x_labels,
                      y_labels=y_labels, domain=None, diverging=True, cell=cell, free=free)
    view["layer"][0]["encoding"]["color"]["scale"]["domain"] = domain
    where = {"x": {"field": "col", "type": "ordinal"}, "y": {"field": "row", "type": "ordinal"}}
    grey = {"transform": [{"filter": "!isValid(datum.v)"},
                          {"calculate": f"'{MASKED}'", "as": "masked"}],
            "mark": {"type": "rect", "color": MASKED_GREY},
            "encoding": {**where, "tooltip": [{"field": "rowlabel", "title": y_title},
                                              {"field": "collabel", "title": x_title},
                                              {"field": "masked", "title": value_title}]}}
    view["layer"].append(grey)
    if cell >= 20:  # room for the sign itself
        view["layer"].append({"transform": [{"filter": "!isValid(datum.v)"}],
                              "mark": {"type": "text", "fontSize": FONT_SIZE - 4, "color": "#444"},
                              "encoding": {**where, "text": {"value": "−∞"}}})
    return view


def map_pair(sources: Sequence[str], titles: Sequence[str], n: int, *, fields=("layer", "head"),
             labels: Sequence[str] = ("tokens", "tokens"), title: dict | None = None,
             free: bool = False) -> dict:
    """Two attention maps of ``n`` tokens on one 0..1 colour scale (so one legend): the rows of
    datasets ``sources`` (made by ``map_rows``) that ``fields`` select. Side by side up to
    SIDE_BY_SIDE tokens, else one above the other; the second map repeats its token labels
    only when they differ or sit below. ``free``: length-free maps, ``n`` being the
    sentence's ``length_cap`` (``masked_heat``)."""
    across = 2 if n <= SIDE_BY_SIDE else 1
    cell = fit_cell(n, across)
    views = []
    for i, (source, name, lab) in enumerate(zip(sources, titles, labels)):
        first = i == 0
        y_title = "query" if first or across == 1 else ""
        if pictured(n):  # a long text: a picture per map (rows from map_rows)
            view = picture_layer(n, n, x_title="key", y_title=y_title, value_title="weight",
                                 before=[view_filter(*fields)], cell=cell, x_labels=lab,
                                 y_labels=lab, free=free)
        else:
            view = heat_layer(n, n, x_title="key", y_title=y_title, value_title="weight",
                              x_labels=lab, y_labels=lab, cell=cell, masked=False,
                              y_axis=first or across == 1 or lab != labels[0], free=free,
                              before=[view_filter(*fields), *unpack("ntok" if free else n)])
        views.append({"data": {"name": source}, **view, "title": {"text": name, "fontSize": FONT_SIZE}})
    body = {"hconcat" if across == 2 else "vconcat": views, "spacing": 16 if across == 2 else 24}
    if title:
        body["title"] = title
    return body


def _n_layers_heads(arr: np.ndarray) -> tuple[int, int, int]:
    n_layers, n_heads, n, m = arr.shape
    if n != m:
        raise ValueError(f"expected square maps (layers, heads, n, n), got {arr.shape}")
    return n_layers, n_heads, n


def triangle(masked_scores: np.ndarray, tokens: Sequence[str], *, layer: int = 0,
             head: int = 0) -> dict:
    """Section 1: the scores after the causal mask, (layers, heads, n, n) with −∞ above the
    diagonal, for the layer and head chosen below the chart. Length-free (module docstring)."""
    n_layers, n_heads, n = _n_layers_heads(masked_scores)
    cap = length_cap(n)
    bound = abs_bound(masked_scores)
    body = {"data": {"name": "scores"},
            **masked_heat(cap, cap, keep=view_filter("layer", "head"), bound="bound", free=True),
            "title": {"text": {"expr": "'Scores after the mask, layer ' + layer + ', head ' + head"}}}
    return chart(body, params=view_params(n_layers, n_heads, layer, head),
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
    n_layers, n_heads, n = _n_layers_heads(bidirectional)
    cap = length_cap(n)
    if causal.shape != bidirectional.shape:
        raise ValueError(f"the two runs differ in shape: {bidirectional.shape} vs {causal.shape}")
    body = map_pair(("bidirectional", "causal"),
                    ("bidirectional: every key", "causal: only earlier keys"), cap,
                    title={"text": {"expr": "'The same weights, two masks (layer ' + layer + "
                                            "', head ' + head + ')'"}}, free=True)
    return chart(body, params=view_params(n_layers, n_heads, layer, head),
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
    params = [*view_params(n_layers, n_heads, layer, head),
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
