"""Instant charts for lesson 9 (LayerNorm): every layer, norm and token, switched in the browser.

The page computes every LayerNorm of the stack for every token once
(``tfviz.analysis.layernorm.every_norm``); these builders send it all, and the view controls
(``tfviz.viz.instant``) choose what is drawn: the layer (range slider ``layer``), which norm
of the block (select ``norm``) and, for the worked example, the token (range slider ``pos``).
Both charts are length-free (``tfviz.viz.instant_length``): laid out for ``length_cap`` tokens,
they read the sentence's length, the token it opens on and its colour range from their data,
so a new sentence of another length within the cap swaps their data.

The ``norm`` parameter holds the norm's index in ``NORM_ORDER`` (ln1 = 0, ln_cross = 1,
ln2 = 2), not its place in this model's block, so ``norm=2`` in a shared link always means
the norm after the feed-forward, whichever model the link opens.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.layernorm import NORM_NAMES, NORM_ORDER, STEP_COLUMNS
from tfviz.viz.instant import (DIVERGING_SCHEME, choice, constant, heat_layer, rounded, slider,
                               spec, stack_rows, token_axis, unpack)
from tfviz.viz.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.instant_masking import abs_bound, view_filter
from tfviz.viz.instant_pictures import PICTURE_CELLS, RED_BLUE, image_layer, index_layer, picture
from tfviz.viz.style import CATEGORICAL, FONT_SIZE, token_labels

STATS = ("μ before", "σ before", "μ after", "σ after")
VECTORS = ("x", "(x − μ)/σ", "output")
NAMES = [NORM_NAMES[n] for n in NORM_ORDER]  # indexed by the norm parameter
VIEW = ("layer", "norm")


def norm_choice(norms: Sequence[str], value: int = 0) -> dict:
    """The select box of the block's norms; its values are indices in NORM_ORDER."""
    codes = [NORM_ORDER.index(n) for n in norms]
    return choice("norm", codes, [NORM_NAMES[n] for n in norms], "Which LayerNorm", value)


def _codes(norms: Sequence[str]) -> list[int]:
    return [NORM_ORDER.index(n) for n in norms]


def token_stats(stats: np.ndarray, norms: Sequence[str], tokens: Sequence[str], *,
                layer: int = 0, norm: int = 0) -> dict:
    """μ and σ of every token before the chosen norm and after normalising (before γ, β):
    ``stats`` is (layers, norms, 4, T) in the order of STATS, ``norms`` names its axis 1.
    Length-free (``tfviz.viz.instant_length``): laid out for ``length_cap(T)`` tokens, so a
    new sentence of another length within the cap swaps the chart's data."""
    n_layers, n_norms, _, n = stats.shape
    cap = length_cap(n)
    codes = _codes(norms)
    rows = [{"layer": lyr, "norm": codes[k], "stat": STATS[s], "q": q, "v": v}
            for lyr, k, s in np.ndindex(n_layers, n_norms, len(STATS))
            for q, v in enumerate(rounded(stats[lyr, k, s]))]
    body = {
        "data": {"name": "stats"},
        "transform": [view_filter(*VIEW), {"calculate": "tokens[datum.q]", "as": "token"}],
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "q", "type": "ordinal", "axis": token_axis("token", n=cap, free=True),
                  "scale": {"domain": TOKENS_DOMAIN}},
            "y": {"field": "v", "type": "quantitative", "title": "value"},
            "color": {"field": "stat", "type": "nominal", "title": "statistic",
                      "scale": {"domain": list(STATS), "range": CATEGORICAL[:4]}},
            "strokeDash": {"field": "stat", "type": "nominal", "sort": list(STATS), "title": "statistic"},
            "tooltip": [{"field": "token"}, {"field": "stat", "title": "statistic"},
                        {"field": "v", "title": "value", "format": ".4f"}],
        },
        "width": max(320, min(640, 44 * cap)), "height": 320,
        "title": {"text": {"expr": "'μ and σ per token, layer ' + layer + ', ' + names[norm]"}},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer), norm_choice(norms, norm),
              constant("names", NAMES)]
    return spec(body, params=params, datasets={"stats": rows}, tokens=token_labels(tokens),
                free=True, description="Mean and spread of every token before and after the chosen LayerNorm.")


def _line(y: int, expr: str, size: int = FONT_SIZE) -> dict:
    """One line of text at ``y`` pixels, written by the expression ``expr`` over the datum."""
    return {"transform": [{"calculate": expr, "as": "line"}],
            "mark": {"type": "text", "align": "left", "baseline": "top", "fontSize": size,
                     "limit": 760},
            "encoding": {"x": {"value": 0}, "y": {"value": y}, "text": {"field": "line"}}}


def worked_example(mean: np.ndarray, sigma: np.ndarray, trace_mean: np.ndarray,
                   trace_sigma: np.ndarray, steps: np.ndarray, vectors: np.ndarray,
                   norms: Sequence[str], tokens: Sequence[str], *, d_model: int,
                   layer: int = 0, norm: int = 0, pos: int | None = None) -> dict:
    """One token's LayerNorm by hand, for the layer, norm and token chosen below the chart:
    μ and σ beside the model's own, the first k dimensions step by step (``steps``,
    (layers, norms, T, k, 7) in the order of STEP_COLUMNS) and all d numbers of x, (x − μ)/σ
    and the output as three strips (``vectors``, (layers, norms, T, 3, d)): cells with their
    values on hover, or for a wide model one picture per token (``strips_pictured``)."""
    n_layers, n_norms, n = mean.shape
    k, d = steps.shape[3], vectors.shape[-1]
    codes = _codes(norms)
    numbers = [{"layer": lyr, "norm": codes[j], "pos": q, "mean": rounded(mean[lyr, j, q]),
                "sigma": rounded(sigma[lyr, j, q]), "tmean": rounded(trace_mean[lyr, j, q]),
                "tsigma": rounded(trace_sigma[lyr, j, q])}
               for lyr, j, q in np.ndindex(n_layers, n_norms, n)]

    def packed_rows(arr: np.ndarray) -> list[dict]:
        rows = stack_rows(arr, "layer", "norm", "pos")
        for r in rows:
            r["norm"] = codes[r["norm"]]
        return rows

    # ``posi``: the token shown, ``pos`` kept below the sentence's length, or its first token
    # while a link names none (``pos`` None)
    chosen = {"filter": "datum.layer == layer && datum.norm == norm && datum.pos == posi"}
    text = {
        "data": {"name": "numbers"}, "transform": [chosen], "width": 640, "height": 84,
        "layer": [
            _line(0, f"'μ = (1/{d_model}) Σⱼ xⱼ = ' + format(datum.mean, '.4f')"),
            _line(28, f"'σ = √((1/{d_model}) Σⱼ (xⱼ − μ)² + ε) = ' + format(datum.sigma, '.4f')"),
            _line(58, "'The model recorded μ = ' + format(datum.tmean, '.4f') + ' (ln.hook_mean) "
                      "and σ = ' + format(datum.tsigma, '.4f') + ' (ln.hook_scale).'", FONT_SIZE - 2),
        ],
        "title": {"text": {"expr": "'One token by hand: ' + tokens[posi] + ' (layer ' + layer + "
                                   "', ' + names[norm] + ')'"}},
    }
    table = {
        "data": {"name": "steps"},
        "transform": [chosen, *unpack(len(STEP_COLUMNS)),
                      {"calculate": "columns[datum.col]", "as": "step"}],
        "mark": {"type": "text", "fontSize": FONT_SIZE - 2, "align": "right", "dx": 34},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "scale": {"domain": list(range(len(STEP_COLUMNS)))},
                  "axis": {"orient": "top", "title": None, "labelExpr": "columns[datum.value]",
                           "labelAngle": 0, "labelFontSize": FONT_SIZE - 2, "ticks": False,
                           "domain": False}},
            "y": {"field": "row", "type": "ordinal", "title": "dimension",
                  "scale": {"domain": list(range(k))}, "axis": {"ticks": False, "domain": False}},
            "text": {"field": "v", "type": "quantitative", "format": ".4f"},
            "color": {"condition": {"test": "datum.col >= 5", "value": CATEGORICAL[0]},
                      "value": "black"},
            "tooltip": [{"field": "step"}, {"field": "row", "title": "dimension"},
                        {"field": "v", "title": "value", "format": ".6f"}],
        },
        "width": 92 * len(STEP_COLUMNS), "height": 26 * k,
        "title": {"text": f"The first {k} dimensions, step by step (last column: the model's own)",
                  "fontSize": FONT_SIZE},
    }
    bound = abs_bound(vectors)  # one colour range for every view: the legend stays still
    pictured = strips_pictured(d)
    if pictured:
        strips = strip_picture(d, bound, before=[chosen])
    else:
        strips = heat_layer(d, len(VECTORS), x_title="dimension", y_title="", value_title="value",
                            before=[chosen, *unpack(d)], x_labels="dims", y_labels="vectors",
                            domain=(-bound, bound), diverging=True,
                            cell=max(6, min(14, 640 // max(d, 1))))
        strips["height"] = 30 * len(VECTORS)
    strips.update({"data": {"name": "vectors"},
                   "title": {"text": f"All {d} numbers: x, (x − μ)/σ and the output"
                                     + (f" as colours (the first {k} in figures above)"
                                        if pictured else ""),
                             "fontSize": FONT_SIZE}})
    for view in strips["layer"]:  # the colour range follows the sentence: it rides in the data
        scale = view.get("encoding", {}).get("color", {}).get("scale", {})
        if "domain" in scale:
            scale["domain"] = {"expr": "[-bound, bound]"}
    params = [slider("layer", n_layers - 1, "Layer", layer), norm_choice(norms, norm),
              token_slider(length_cap(n) - 1, "Token", pos, name="pos"), constant("names", NAMES),
              constant("columns", list(STEP_COLUMNS)), constant("vectors", list(VECTORS)),
              constant("dims", [str(i) for i in range(d)])]
    return spec({"vconcat": [text, table, strips], "spacing": 24,
                 "resolve": {"scale": {"color": "independent"}}}, params=params,
                datasets={"numbers": numbers, "steps": packed_rows(steps),
                          "vectors": (strip_pictures(vectors, bound, codes) if pictured
                                      else packed_rows(vectors))}, tokens=token_labels(tokens),
                free=True, sentence={"bound": bound}, defaults={"pos": 0},
                description="LayerNorm of one token by hand, next to what the model computed.")


# --- a wide model's strips as pictures --------------------------------------------------------

def strips_pictured(d_model: int) -> bool:
    """Whether the worked example's three strips of ``d_model`` numbers travel as one picture per
    token rather than one mark per number: past ``PICTURE_CELLS`` cells, as the attention maps
    of a long text do. Redrawn as SVG marks for every token moved to, GPT-2's 3 × 768 cells made
    that the slowest view change of the lessons (BENCHMARKS.md); a picture is one mark. Our
    small models (d = 64) keep their cells, with each number on hover and in its ARIA label.

    >>> strips_pictured(64), strips_pictured(768)
    (False, True)
    """
    return len(VECTORS) * d_model > PICTURE_CELLS


def strip_pictures(vectors: np.ndarray, bound: float, codes: Sequence[int]) -> list[dict]:
    """One row per (layer, norm, token) of ``vectors`` ((layers, norms, T, 3, d)), its three
    strips as one picture (``instant_pictures.picture``: a pixel a number, red-blue from
    −bound to +bound like the cells' scale); ``norm`` is the norm's code in NORM_ORDER."""
    return [{"layer": int(lyr), "norm": int(codes[j]), "pos": int(q),
             "img": picture(vectors[lyr, j, q], low=-bound, high=bound, colours=RED_BLUE)}
            for lyr, j, q in np.ndindex(*vectors.shape[:3])]


STRIP_HEIGHT = 30  # pixels of each of the three strips


def strip_picture(d: int, bound: float, *, before: Sequence[dict]) -> dict:
    """The three strips drawn from the picture of the row ``before`` keeps: ``d`` dimensions
    across (at least a pixel each), the vectors' names down, and a red-blue legend from −bound
    to +bound, the picture's own range."""
    width = max(1, min(14, 768 // max(d, 1))) * d
    height = STRIP_HEIGHT * len(VECTORS)
    image = image_layer(width, height, before)
    x = index_layer("x", d, title="dimension", labels="dims")
    y = index_layer("y", len(VECTORS), title="", labels="vectors")
    # an invisible legend layer of two points: its scale's domain is the range (the page may
    # make it an expression of the data's bound), so no number of the sentence sits here
    legend = {"data": {"sequence": {"start": 0, "stop": 2, "as": "v"}},
              "mark": {"type": "point", "opacity": 0, "aria": False},
              "encoding": {"color": {"field": "v", "type": "quantitative", "title": "value",
                                     "scale": {"domain": [-bound, bound],
                                               "scheme": DIVERGING_SCHEME, "reverse": True,
                                               "domainMid": 0}}}}
    return {"width": width, "height": height, "layer": [image, x, y, legend]}
