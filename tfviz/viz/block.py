"""The charts of lesson 9 (LayerNorm, RMSNorm, the residual stream): the learned γ and β of
every norm, the residual stream's size, and each token's μ and σ through every layer and norm.

γ and β are ``instant_matrix.matrix_chart``'s heatmap, the stream's size lines of
``tfviz.viz.kit.charts``. The rest are instant charts: the page computes every norm of the
stack for every token once (``tfviz.analysis.layernorm.every_norm``); these builders send it
all, and the view controls (``tfviz.viz.kit.instant``) choose what is drawn: the layer (range
slider ``layer``), which norm of the block (select ``norm``) and, for the worked example, the
token (range slider ``pos``). They are length-free (``tfviz.viz.kit.instant_length``): laid out
for ``length_cap`` tokens, they read the sentence's length, the token it opens on and its colour
range from their data, so a new sentence of another length within the cap swaps their data.

The ``norm`` parameter holds the norm's index in ``NORM_ORDER`` (ln1 = 0, ln_cross = 1,
ln2 = 2), not its place in this model's block, so ``norm=2`` in a shared link always means
the norm after the feed-forward, whichever model the link opens.

An RMSNorm model (``kind="rmsnorm"``) gets the same charts in its own words: its scale is the
root mean square (rms), it takes no mean away and adds no β. ``norm_pair_chart`` puts the two
norms side by side on the same token, whichever the model uses.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Mapping, Sequence

from tfviz.analysis.layernorm import (NORM_NAMES, NORM_ORDER, PAIR_VECTORS, RMS_STEP_COLUMNS,
                                      STEP_COLUMNS)
from tfviz.viz.kit.maps import abs_bound, view_filter
from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.instant import (DIVERGING_SCHEME, choice, constant, heat_layer, rounded, slider,
                                   stack_rows, token_axis, unpack)
from tfviz.viz.kit.instant_length import TOKENS_DOMAIN, length_cap, token_slider
from tfviz.viz.kit.instant_matrix import matrix_chart
from tfviz.viz.kit.instant_pictures import (PICTURE_CELLS, RED_BLUE, image_layer, index_layer,
                                            picture)
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels


def gamma_beta_heatmap(params: Mapping[str, tuple[np.ndarray, np.ndarray | None]], *, which: str,
                       norm_name: str = "LayerNorm") -> dict:
    """Rows = the model's norms ("L0 ln1", ...), columns = dimensions; which is "gamma" or "beta".
    γ is drawn on cividis from its smallest to its largest value, β (around 0) in red and blue.
    ``norm_name``: "RMSNorm" for a model whose norms have γ only (ask for "gamma" then)."""
    index = 0 if which == "gamma" else 1
    names = list(params)
    values = np.stack([params[name][index] for name in names]).astype(float)  # (norms, d)
    symbol = "γ (gain)" if index == 0 else "β (shift)"
    domain = None if index else (float(values.min()), float(values.max()))
    return matrix_chart(values, title=f"Learned {symbol} of every {norm_name}", x_title="dimension",
                        y_title="norm", y_labels=names, value_title=symbol.split()[0],
                        diverging=index == 1, domain=domain, width=760,
                        height=max(120, 26 * len(names)),
                        description=f"The learned {symbol} of each of the model's {len(names)} "
                                    f"{norm_name}s (rows), dimension by dimension (columns).")


def residual_norm_chart(series: Mapping[str, Sequence[tuple[str, float]]], *, title: str) -> dict:
    """Mean L2 norm per token of the residual stream, stage by stage, one line per model."""
    rows = [{"stage": stage, "model": name, "mean L2 norm": float(value)}
            for name, points in series.items() for stage, value in points]
    stages = list(dict.fromkeys(r["stage"] for r in rows))
    names = list(series)
    # The legend sits beside the lines: under them it took the chart's fixed height from the
    # plot itself, which was drawn flat.
    line = view({"type": "line", "point": True},
                x=n("stage", "point in the stack", sort=stages, axis={"labelAngle": 0}),
                y=q("mean L2 norm", "mean ‖x‖ over tokens"),
                color=colour("model", names, sort=names),
                tooltip=tip("model", "stage", "mean L2 norm:.3f"))
    return chart(line, title=title, rows=rows, height=320,
                 description="The mean length of the tokens' vectors in the residual stream after "
                             "each sublayer, one line per model: " + "; ".join(names) + ".")


STATS = ("μ before", "σ before", "μ after", "σ after")
RMS_STATS = ("μ before", "rms before", "μ after", "rms after")
VECTORS = ("x", "(x − μ)/σ", "output")
RMS_VECTORS = ("x", "x / rms", "output")
NAMES = [NORM_NAMES[n] for n in NORM_ORDER]  # indexed by the norm parameter
VIEW = ("layer", "norm")
KIND_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}


def norm_choice(norms: Sequence[str], value: int = 0, kind: str = "layernorm") -> dict:
    """The select box of the block's norms; its values are indices in NORM_ORDER."""
    codes = [NORM_ORDER.index(n) for n in norms]
    return choice("norm", codes, [NORM_NAMES[n] for n in norms], f"Which {KIND_NAMES[kind]}", value)


def _codes(norms: Sequence[str]) -> list[int]:
    return [NORM_ORDER.index(n) for n in norms]


def token_stats(stats: np.ndarray, norms: Sequence[str], tokens: Sequence[str], *,
                layer: int = 0, norm: int = 0, kind: str = "layernorm") -> dict:
    """μ and σ of every token before the chosen norm and after normalising (before γ, β):
    ``stats`` is (layers, norms, 4, T) in the order of STATS, ``norms`` names its axis 1.
    An RMSNorm (``kind="rmsnorm"``) has its root mean square where LayerNorm has σ
    (RMS_STATS): after it, rms is 1 but μ is not 0.
    Length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap(T)`` tokens, so a
    new sentence of another length within the cap swaps the chart's data."""
    n_layers, n_norms, _, n = stats.shape
    cap = length_cap(n)
    codes = _codes(norms)
    names = RMS_STATS if kind == "rmsnorm" else STATS
    rows = [{"layer": lyr, "norm": codes[k], "stat": names[s], "q": q, "v": v}
            for lyr, k, s in np.ndindex(n_layers, n_norms, len(names))
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
                      "scale": {"domain": list(names), "range": CATEGORICAL[:4]}},
            "strokeDash": {"field": "stat", "type": "nominal", "sort": list(names), "title": "statistic"},
            "tooltip": [{"field": "token"}, {"field": "stat", "title": "statistic"},
                        {"field": "v", "title": "value", "format": ".4f"}],
        },
        "width": max(320, min(640, 44 * cap)), "height": 320,
        "title": {"text": {"expr": f"'μ and {names[1].split()[0]} per token, layer ' + layer + ', ' "
                                   "+ names[norm]"}},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer), norm_choice(norms, norm, kind),
              constant("names", NAMES)]
    spread = "root mean square" if kind == "rmsnorm" else "spread"
    return chart(body, params=params, datasets={"stats": rows}, tokens=token_labels(tokens),
                 free=True, description=f"Mean and {spread} of every token before and after the "
                                       f"chosen {KIND_NAMES[kind]}.", own_size=True)


def _line(y: int, expr: str, size: int = FONT_SIZE) -> dict:
    """One line of text at ``y`` pixels, written by the expression ``expr`` over the datum."""
    return {"transform": [{"calculate": expr, "as": "line"}],
            "mark": {"type": "text", "align": "left", "baseline": "top", "fontSize": size,
                     "limit": 760},
            "encoding": {"x": {"value": 0}, "y": {"value": y}, "text": {"field": "line"}}}


def _worked_lines(kind: str, d_model: int) -> list[dict]:
    """The worked example's three lines of words, as expressions over its ``numbers`` row."""
    if kind == "rmsnorm":
        return [
            _line(0, f"'rms = √((1/{d_model}) Σⱼ xⱼ² + ε) = ' + format(datum.sigma, '.4f')"),
            _line(28, "'No mean is taken away: this token keeps its μ = ' + format(datum.mean, '.4f') "
                      "+ ', and there is no β.'"),
            _line(58, "'The model recorded rms = ' + format(datum.tsigma, '.4f') + ' (ln.hook_scale).'",
                  FONT_SIZE - 2),
        ]
    return [
        _line(0, f"'μ = (1/{d_model}) Σⱼ xⱼ = ' + format(datum.mean, '.4f')"),
        _line(28, f"'σ = √((1/{d_model}) Σⱼ (xⱼ − μ)² + ε) = ' + format(datum.sigma, '.4f')"),
        _line(58, "'The model recorded μ = ' + format(datum.tmean, '.4f') + ' (ln.hook_mean) "
                  "and σ = ' + format(datum.tsigma, '.4f') + ' (ln.hook_scale).'", FONT_SIZE - 2),
    ]


def worked_example(mean: np.ndarray, sigma: np.ndarray, trace_mean: np.ndarray,
                   trace_sigma: np.ndarray, steps: np.ndarray, vectors: np.ndarray,
                   norms: Sequence[str], tokens: Sequence[str], *, d_model: int,
                   layer: int = 0, norm: int = 0, pos: int | None = None,
                   kind: str = "layernorm") -> dict:
    """One token's LayerNorm by hand, for the layer, norm and token chosen below the chart:
    μ and σ beside the model's own, the first k dimensions step by step (``steps``,
    (layers, norms, T, k, 7) in the order of STEP_COLUMNS) and all d numbers of x, (x − μ)/σ
    and the output as three strips (``vectors``, (layers, norms, T, 3, d)): cells with their
    values on hover, or for a wide model one picture per token (``strips_pictured``).
    An RMSNorm (``kind="rmsnorm"``): its rms beside the model's hook_scale, ``steps`` in the
    order of RMS_STEP_COLUMNS (no β), and the strips x, x / rms and the output."""
    n_layers, n_norms, n = mean.shape
    k, d = steps.shape[3], vectors.shape[-1]
    codes = _codes(norms)
    columns = RMS_STEP_COLUMNS if kind == "rmsnorm" else STEP_COLUMNS
    strip_names = RMS_VECTORS if kind == "rmsnorm" else VECTORS
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
        "layer": _worked_lines(kind, d_model),
        "title": {"text": {"expr": "'One token by hand: ' + tokens[posi] + ' (layer ' + layer + "
                                   "', ' + names[norm] + ')'"}},
    }
    table = {
        "data": {"name": "steps"},
        "transform": [chosen, *unpack(len(columns)),
                      {"calculate": "columns[datum.col]", "as": "step"}],
        "mark": {"type": "text", "fontSize": FONT_SIZE - 2, "align": "right", "dx": 34},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "scale": {"domain": list(range(len(columns)))},
                  "axis": {"orient": "top", "title": None, "labelExpr": "columns[datum.value]",
                           "labelAngle": 0, "labelFontSize": FONT_SIZE - 2, "ticks": False,
                           "domain": False}},
            "y": {"field": "row", "type": "ordinal", "title": "dimension",
                  "scale": {"domain": list(range(k))}, "axis": {"ticks": False, "domain": False}},
            "text": {"field": "v", "type": "quantitative", "format": ".4f"},
            "color": {"condition": {"test": f"datum.col >= {len(columns) - 2}", "value": CATEGORICAL[0]},
                      "value": "black"},
            "tooltip": [{"field": "step"}, {"field": "row", "title": "dimension"},
                        {"field": "v", "title": "value", "format": ".6f"}],
        },
        "width": 92 * len(columns), "height": 26 * k,
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
                   "title": {"text": f"All {d} numbers: {strip_names[0]}, {strip_names[1]} and the output"
                                     + (f" as colours (the first {k} in figures above)"
                                        if pictured else ""),
                             "fontSize": FONT_SIZE}})
    for view in strips["layer"]:  # the colour range follows the sentence: it rides in the data
        scale = view.get("encoding", {}).get("color", {}).get("scale", {})
        if "domain" in scale:
            scale["domain"] = {"expr": "[-bound, bound]"}
    params = [slider("layer", n_layers - 1, "Layer", layer), norm_choice(norms, norm, kind),
              token_slider(length_cap(n) - 1, "Token", pos, name="pos"), constant("names", NAMES),
              constant("columns", list(columns)), constant("vectors", list(strip_names)),
              constant("dims", [str(i) for i in range(d)])]
    return chart({"vconcat": [text, table, strips], "spacing": 24,
                 "resolve": {"scale": {"color": "independent"}}}, params=params,
                 datasets={"numbers": numbers, "steps": packed_rows(steps),
                          "vectors": (strip_pictures(vectors, bound, codes) if pictured
                                      else packed_rows(vectors))}, tokens=token_labels(tokens),
                 free=True, sentence={"bound": bound}, defaults={"pos": 0},
                 description=f"{KIND_NAMES[kind]} of one token by hand, next to what the model computed.",
                 own_size=True)


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


# --- RMSNorm next to LayerNorm, on the same token ---------------------------------------------

def norm_pair_chart(numbers: np.ndarray, vectors: np.ndarray, norms: Sequence[str],
                    tokens: Sequence[str], *, kind: str, layer: int = 0, norm: int = 0,
                    pos: int | None = None) -> dict:
    """The chosen token's input to the chosen norm through both normalising steps (before
    γ, β): LayerNorm's (x − μ)/σ and RMSNorm's x / rms, over its first k dimensions, with μ,
    σ and rms in words, rms² = σ² + μ², and the scale the model recorded for its own norm
    (``kind``). ``numbers`` (layers, norms, T, 4) and ``vectors`` (layers, norms, T, 3, k) come
    from ``tfviz.analysis.layernorm.every_pair``. Its ``layer``, ``norm`` and ``pos``
    parameters are the worked example's: moving one moves both charts."""
    n_layers, n_norms, n = numbers.shape[:3]
    k = vectors.shape[-1]
    codes = _codes(norms)
    own, other = ("rms", "σ") if kind == "rmsnorm" else ("σ", "rms")
    rows = [{"layer": lyr, "norm": codes[j], "pos": q, "mean": rounded(numbers[lyr, j, q, 0]),
             "sigma": rounded(numbers[lyr, j, q, 1]), "rms": rounded(numbers[lyr, j, q, 2]),
             "scale": rounded(numbers[lyr, j, q, 3])}
            for lyr, j, q in np.ndindex(n_layers, n_norms, n)]
    chosen = {"filter": "datum.layer == layer && datum.norm == norm && datum.pos == posi"}
    # short lines, two for each norm: presenter view draws them at 24 px or more, and one line
    # of both a norm's numbers and its recipe ran past a 1280 px screen there
    lines = [
        _line(0, "'LayerNorm: μ = ' + format(datum.mean, '.4f') + ', σ = √(var + ε) = ' + "
                 "format(datum.sigma, '.4f')"),
        _line(28, "'   subtract μ, divide by σ, then · γ + β'", FONT_SIZE - 2),
        _line(56, "'RMSNorm: rms = √(mean of xⱼ² + ε) = ' + format(datum.rms, '.4f')"),
        _line(84, "'   divide by rms only (μ stays), then · γ; no β'", FONT_SIZE - 2),
        _line(112, "'rms² = σ² + μ²: ' + format(datum.rms * datum.rms, '.4f') + ' = ' + "
                   "format(datum.sigma * datum.sigma, '.4f') + ' + ' + format(datum.mean * datum.mean, '.4f')"),
        _line(140, f"'This model uses {KIND_NAMES[kind]}: it recorded {own} = ' + format(datum.scale, '.4f') "
                   "+ ' (ln.hook_scale);'", FONT_SIZE - 2),
        _line(168, f"'the {other} above is computed here for comparison.'", FONT_SIZE - 2),
    ]
    words = {"data": {"name": "pair"}, "transform": [chosen], "width": 640, "height": 194,
             "layer": lines,
             "title": {"text": {"expr": "'Both norms on ' + tokens[posi] + "
                                        "' (layer ' + layer + ', ' + names[norm] + ')'"}}}
    dots = {
        "data": {"name": "pair_vectors"},
        "transform": [chosen, *unpack(k), {"calculate": "which[datum.row]", "as": "vector"}],
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "title": "dimension",
                  "scale": {"domain": list(range(k))}, "axis": {"labelAngle": 0}},
            "y": {"field": "v", "type": "quantitative", "title": "value"},
            "color": {"field": "vector", "type": "nominal", "title": None,
                      "scale": {"domain": list(PAIR_VECTORS), "range": CATEGORICAL[:3]},
                      "legend": {"orient": "bottom", "labelLimit": 320}},
            "strokeDash": {"field": "vector", "type": "nominal", "sort": list(PAIR_VECTORS),
                           "legend": None},
            "tooltip": [{"field": "vector"}, {"field": "col", "title": "dimension"},
                        {"field": "v", "title": "value", "format": ".4f"}],
        },
        "width": max(320, min(640, 40 * k)), "height": 260,
        "title": {"text": f"Its first {k} dimensions: x, and each norm's normalised vector "
                          "(before γ and β)", "fontSize": FONT_SIZE},
    }
    params = [slider("layer", n_layers - 1, "Layer", layer), norm_choice(norms, norm, kind),
              token_slider(length_cap(n) - 1, "Token", pos, name="pos"), constant("names", NAMES),
              constant("which", list(PAIR_VECTORS))]
    return chart({"vconcat": [words, dots], "spacing": 24}, params=params,
                 datasets={"pair": rows,
                          "pair_vectors": _coded(stack_rows(vectors, "layer", "norm", "pos"), codes)},
                 tokens=token_labels(tokens), free=True, defaults={"pos": 0},
                 description="One token's vector through LayerNorm's and RMSNorm's normalising "
                            "step, side by side.", own_size=True)


def _coded(rows: list[dict], codes: Sequence[int]) -> list[dict]:
    """``stack_rows`` rows with their norm index replaced by its code in NORM_ORDER."""
    for r in rows:
        r["norm"] = codes[r["norm"]]
    return rows
