r"""The charts of lesson 12 (the forward walk): every step, for every head, sent at once as one
instant chart, and the parameter count by part (``params_chart``, a static one).

``walk_chart`` draws one step of ``tfviz.analysis.forward.forward_steps`` at a time; the step
(``step``, counted from 1 as the page counts) and the head shown in the attention steps
(``head``) are view parameters in the conventions of ``tfviz.viz.kit.instant``. A step's text
(title, explanation, formula, shape) and its numbers are data filtered by the two parameters,
so moving either redraws in the browser. Three panels share the chart; a panel with nothing
to show for the step has no rows and folds away (its sizes follow its rows):

- the step's words: what happens, the formula written in plain text, the tensor's shape;
- a heatmap (tokens × dimensions, attention weights, gates, logits) or the strip of token ids;
  a map of more than ``instant_pictures.PICTURE_CELLS`` cells travels as one picture (cividis for
  weights, red-blue about 0 otherwise), which the browser swaps at once, with no hover values;
- horizontal bars for the final top-k prediction.

The walk is length-free (``tfviz.viz.kit.instant_length``): its steps are the model's, whatever the
sentence, and what follows the sentence (each step's row and column labels, its colour range,
the titles that name a token) rides in the first data row as ``walk_sentence`` packs it, so a
new sentence of another length within the layout's ``length_cap`` swaps the data.

>>> plain_formula(r"\alpha = \mathrm{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\quad z = \alpha V")
'α = softmax(QKᵀ / √d_k + M),   z = α V'
"""

from __future__ import annotations

import numpy as np
import re
import textwrap
import unicodedata
from collections.abc import Mapping, Sequence

from tfviz.analysis.forward import Step
from tfviz.viz.kit.charts import chart, n, q, tip, view
from tfviz.viz.kit.instant import DIVERGING_SCHEME, SCHEME, constant, packed, slider
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.instant_pictures import PICTURE_CELLS, RED_BLUE, image_layer, picture
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, GREY


def params_chart(groups: Mapping[str, int], *, title: str) -> dict:
    """Horizontal bars: parameters per part of the model, with the count written beside each."""
    names = list(groups)
    rows = [{"part": name, "parameters": int(groups[name])} for name in names]
    y, x = n("part", "", sort=names), q("parameters", "parameters")
    bars = view({"type": "bar", "color": CATEGORICAL[0]}, x=x, y=y,
                tooltip=tip("part", "parameters:,"))
    counts = view({"type": "text", "align": "left", "dx": 4, "fontSize": FONT_SIZE - 2}, x=x, y=y,
                  text=q("parameters", format=","))
    return chart({"layer": [bars, counts]}, title=title, height=40 * len(names) + 40, rows=rows,
                 description=f"{title}: " + ", ".join(f"{r['part']} {r['parameters']:,}" for r in rows)
                             + ".")


# Maps of more cells than instant_pictures.PICTURE_CELLS travel as pictures: a step of many cells
# redraws slowly as cells and at once as one picture (bench/bench_views.py).
WIDTH = 720  # the heatmap's width: 256 hidden units still get about 3 px each
AXIS_COLUMNS = 96  # a picture's x axis has at most this many bands (and candidate labels)
_SYMBOLS = {r"\alpha": "α", r"\gamma": "γ", r"\varepsilon": "ε", r"\odot": "⊙", r"\sum": "Σ",
            r"\to": "→", r"\leftarrow": "←", r"\dots": "…", r"\in": "∈", r"\sin": "sin",
            r"\arg\max": "argmax", r"\max": "max", r"\top": "ᵀ",
            r"\cdot": "·", r"\quad": "   ", r"\,": " ", r"\!": "", r"\;": " "}
_SIZED = re.compile(r"\\(?:big|Big|bigg|Bigg)([()\[\]|])")
_GROUP = r"\{([^{}]*)\}"


def _wrap(part: str) -> str:
    """``part`` as it reads after ``/``, ``^`` or ``√``: bracketed unless it is one piece."""
    return part if re.fullmatch(r"[\w.·ᵀ√^]+", part) else f"({part})"


def plain_formula(latex: str) -> str:
    """A step's LaTeX formula as plain text for a chart (Vega draws text, not LaTeX).
    Covers what ``forward_steps`` writes: fractions, roots, sub- and superscripts, Greek
    letters, ``\\mathrm``/``\\text``, sized brackets and spacing.

    >>> plain_formula(r"P(w) = \\frac{e^{\\text{logit}_w}}{\\sum_{v} e^{\\text{logit}_v}}")
    'P(w) = e^logit_w / (Σ_v e^logit_v)'
    >>> plain_formula(r"\\hat{w} = \\arg\\max_w P(w)"), plain_formula(r"\\text{logits} = x\\,E^\\top")
    ('ŵ = argmax_w P(w)', 'logits = x Eᵀ')
    """
    s = _SIZED.sub(r"\1", latex)
    s = re.sub(r"\\(?:text|mathrm|operatorname)" + _GROUP, r"\1", s)
    s = s.replace(r"\mathcal{T}", "𝒯")
    s = re.sub(r"\\hat" + _GROUP, lambda m: m.group(1) + "\u0302", s)
    for name in sorted(_SYMBOLS, key=len, reverse=True):  # \arg\max before \max
        word = r"(?![A-Za-z])" if name[-1].isalpha() else ""
        s = re.sub(re.escape(name) + word, lambda _, v=_SYMBOLS[name]: v, s)
    s = s.replace("^ᵀ", "ᵀ")
    for _ in range(4):  # innermost groups first
        s = re.sub(r"\\sqrt" + _GROUP, lambda m: "√" + _wrap(m.group(1)), s)
        s = re.sub(r"\\frac" + _GROUP + _GROUP,
                   lambda m: f"{_wrap(m.group(1))} / {_wrap(m.group(2))}", s)
        s = re.sub(r"\^" + _GROUP, lambda m: "^" + _wrap(m.group(1)), s)
        s = re.sub(r"_" + _GROUP + r"(?=[A-Za-z0-9(])", lambda m: "_" + _wrap(m.group(1)) + " ", s)
        s = re.sub(r"_" + _GROUP, lambda m: "_" + _wrap(m.group(1)), s)
    s = s.replace("{", "").replace("}", "").replace("\\", "")
    return unicodedata.normalize("NFC", re.sub(r" {3,}", "   ", s).strip())


def diverging_picture(matrix: np.ndarray, bound: float) -> str:
    """A matrix as a PNG data URL, red-blue from -bound to bound (``instant_pictures.picture``)."""
    bound = bound or 1.0
    return picture(matrix, low=-bound, high=bound, colours=RED_BLUE)


def _kind(step: Step) -> str:
    """How the chart draws a step: token ids, bars, or a sequential / diverging heatmap."""
    if step.kind == "table":
        return "ids"
    if step.kind == "bars":
        return "bars"
    values = np.asarray(step.values, dtype=float)
    probabilities = not step.diverging and values.min() >= 0 and values.max() <= 1
    return "seq" if probabilities else "div"


def column_stride(cols: int) -> int:
    """Every how many columns a picture's x axis keeps one: the smallest divisor of ``cols``
    that leaves at most ``AXIS_COLUMNS`` bands, so each band covers whole columns and its label
    (the band's middle column) sits over that column in the picture. 768 dimensions give
    96 bands of 8, 3,072 hidden units 96 of 32. Without such a divisor every column stays.

    >>> column_stride(64), column_stride(768), column_stride(3072), column_stride(101)
    (1, 8, 32, 1)
    """
    return next((s for s in range(1, cols // 24 + 1) if cols % s == 0 and cols // s <= AXIS_COLUMNS), 1)


def _notes(step: Step) -> list[tuple[str, str]]:
    """(kind, line) for the words above a step's numbers."""
    lines = [("text", line) for line in textwrap.wrap(step.explanation, 92)]
    lines.append(("formula", plain_formula(step.formula)))
    if step.kind == "bars":
        where = f"the {step.y_title} of each {step.x_title}"
    else:
        where = f"rows: {step.y_title}, columns: {step.x_title}" if step.y_title else step.x_title
    lines.append(("shape", f"Shape of the tensor: {step.shape} · shown: {where}"))
    return lines


def _legend(kind: str) -> dict:
    """A colour legend shown only on steps drawn with that colour scale. Both legends sit at
    the same place beside the map; the other one is transparent there. Its font sizes are
    plain numbers, not expressions: presenter view (``tfviz.viz.kit.presenter``) can only enlarge
    a number."""
    def when_shown(size: float) -> dict:
        return {"expr": f"kinds[step - 1] == '{kind}' ? {size} : 0"}
    return {"orient": "none", "legendX": WIDTH + 16, "legendY": 0, "aria": False,
            "gradientOpacity": when_shown(1), "labelOpacity": when_shown(1),
            "titleOpacity": when_shown(1), "gradientLength": when_shown(180),
            "labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE - 2}


LIST, ITEM = "\x1e", "\x1f"  # between the steps' label lists, and between the labels of one


def _joined(labels: Sequence[str]) -> str:
    return ITEM.join(str(x).replace(LIST, " ").replace(ITEM, " ") for x in labels)


def walk_sentence(steps_by_head: Sequence[Sequence[Step]], edge: Sequence[float]) -> dict:
    """What the walk's spec would otherwise hold of the sentence, as the strings and numbers
    that ride in its first data row (``charts.chart(sentence=...)``): every head's step titles
    in one list (the last names the token predicted from), every step's row and column labels
    (tokens, and the vocabulary's best columns), and every step's colour range ``edge``. The
    expressions ``steptitle``, ``rows``, ``cols`` and ``edge`` pick the chosen step's.

    >>> one = Step("Tokens", "", "", np.zeros((1, 2)), "", rows=("id",), cols=("0 a", "1 b"))
    >>> walk_sentence([[one]], [1.0])
    {'titles': 'Tokens', 'rows_all': 'id', 'cols_all': '0 a\\x1f1 b', 'edges': '1'}
    """
    first = steps_by_head[0]
    return {"titles": _joined([s.title for steps in steps_by_head for s in steps]),
            "rows_all": LIST.join(_joined(s.rows) for s in first),
            "cols_all": LIST.join(_joined(s.cols) for s in first),
            "edges": packed(edge)}


def walk_chart(steps_by_head: Sequence[Sequence[Step]], *, step: int = 1, head: int = 0) -> dict:
    """Every step of the forward walk for every head. ``steps_by_head[h]`` is
    ``forward_steps(trace, head=h)``; steps that do not depend on the head are sent once
    (head -1). ``step`` counts from 1. Length-free (module docstring): laid out for the
    ``length_cap`` of its longest step's rows."""
    n_heads, n_steps = len(steps_by_head), len(steps_by_head[0])
    first = steps_by_head[0]
    edge = [max(float(np.abs(np.asarray(per_head[i].values, dtype=float)).max(initial=0.0))
                for per_head in steps_by_head) or 1.0 for i in range(n_steps)]  # |value| bound
    numbers, notes = [], []
    for i in range(n_steps):
        same = all(np.array_equal(s[i].values, first[i].values) and s[i].explanation == first[i].explanation
                   for s in steps_by_head)
        for h in ([-1] if same else range(n_heads)):
            st = steps_by_head[max(h, 0)][i]
            rows, cols = np.asarray(st.values).shape
            kind = _kind(st)
            row = {"step": i, "head": h, "kind": kind, "c": int(cols), "s": 1, "pic": False,
                   "text": bool(rows * cols <= 144 and WIDTH / cols >= 44 or kind == "ids"),
                   "v": packed(st.values), "img": None}
            if kind in ("seq", "div") and rows * cols > PICTURE_CELLS:  # one picture, no cells
                row.update(pic=True, text=False, v="", s=column_stride(cols),
                           img=picture(st.values) if kind == "seq"
                           else diverging_picture(st.values, round(edge[i], 4)))
            numbers.append(row)
            notes += [{"step": i, "head": h, "line": j, "kind": k, "text": line}
                      for j, (k, line) in enumerate(_notes(st))]
    cap = length_cap(max(len(s.rows) for s in first))
    tall = max(12, min(26, 600 // cap))  # a row's height: the layout's, not the sentence's
    this = {"filter": "datum.step == step - 1 && (datum.head == head || datum.head < 0)"}
    words = {
        "data": {"name": "notes"},
        "transform": [this],
        "encoding": {"y": {"field": "line", "type": "ordinal", "axis": None},
                     "x": {"value": 0}, "text": {"field": "text"}},
        "layer": [
            {"transform": [{"filter": "datum.kind == 'text'"}],
             "mark": {"type": "text", "align": "left", "fontSize": FONT_SIZE}},
            {"transform": [{"filter": "datum.kind == 'formula'"}],
             "mark": {"type": "text", "align": "left", "fontSize": FONT_SIZE + 2,
                      "font": "serif", "fontStyle": "italic"}},
            {"transform": [{"filter": "datum.kind == 'shape'"}],
             "mark": {"type": "text", "align": "left", "fontSize": FONT_SIZE - 2, "color": GREY}},
        ],
        "width": WIDTH, "height": {"step": 26},
    }
    cells = [this, {"filter": "datum.kind != 'bars'"},  # a picture's row becomes one datum
             {"calculate": "split(datum.v, ',')", "as": "v"}, {"flatten": ["v"]},
             {"window": [{"op": "row_number", "as": "cell"}]},
             {"calculate": "datum.v === '' ? null : toNumber(datum.v)", "as": "v"},
             {"calculate": "floor((datum.cell - 1) / datum.c)", "as": "row"},
             # a picture's one datum sits on its axis's first kept column (``skeleton``)
             {"calculate": "datum.pic ? floor(datum.s / 2) : (datum.cell - 1) % datum.c", "as": "col"},
             {"calculate": "rows[datum.row]", "as": "rowlabel"},
             {"calculate": "cols[datum.col]", "as": "collabel"}]
    tooltip = [{"field": "rowlabel", "title": "row"}, {"field": "collabel", "title": "column"},
               {"field": "v", "title": "value", "format": ".4f"}]

    # Every layer below draws one kind of step and is empty at the others. Vega names an empty
    # mark container nothing, an image without a text alternative (axe: svg-img-alt), so the
    # cells stay out of the accessibility tree (aria: False); the chart's description names
    # it, and lesson 12's "The numbers as a table" holds every step's numbers
    # (tfviz.viz.kit.chart_numbers.forward_walk).
    def rect(kind: str, colour: dict) -> dict:
        return {"transform": [{"filter": f"datum.kind == '{kind}' && !datum.pic"}],
                "mark": {"type": "rect", "aria": False},
                "encoding": {"color": colour, "tooltip": tooltip}}

    # A big map is one picture, from its top left corner; hidden points give the axes its
    # rows and columns (the cells that would have made them are not drawn). A wide picture's
    # x axis keeps the middle column of every ``s`` (``column_stride``): 3,072 hidden points
    # and as many labels to measure made moving onto a GPT-2 hidden-unit step slow (bench/bench_views.py).
    pictured = [{"filter": "datum.pic"}]
    image = image_layer(WIDTH, {"expr": f"{tall} * length(rows)"}, pictured)

    def skeleton(field: str, positions: str) -> dict:
        """Hidden points at ``positions`` (an expression: a list) on the ``field`` axis."""
        return {"transform": [*pictured, {"calculate": positions, "as": field},
                              {"flatten": [field]}],
                "mark": {"type": "point", "opacity": 0, "aria": False},
                "encoding": {"x" if field == "col" else "y": {"field": field, "type": "ordinal"}}}

    heat = {
        "data": {"name": "numbers"}, "transform": cells,
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "axis": {
                "title": None, "labelExpr": "cols[datum.value]", "labelOverlap": "greedy",
                "labelLimit": 140}},
            "y": {"field": "row", "type": "ordinal", "axis": {
                "title": None, "labelExpr": "rows[datum.value]", "labelLimit": 160,
                "labelOverlap": False,  # every row is a token: the font is sized to fit
                "labelFontSize": max(9, min(FONT_SIZE - 2, tall - 4))}},
        },
        "layer": [
            image, skeleton("col", "sequence(floor(datum.s / 2), datum.c, datum.s)"),
            skeleton("row", "sequence(0, length(rows))"),
            rect("seq", {"field": "v", "type": "quantitative", "title": "weight",
                         "scale": {"scheme": SCHEME, "domain": [0, 1]}, "legend": _legend("seq")}),
            rect("div", {"field": "v", "type": "quantitative", "title": "value",
                         "scale": {"scheme": DIVERGING_SCHEME, "reverse": True,  # symmetric:
                                   "domain": {"expr": "[-edge, edge]"}},
                         "legend": _legend("div")}),
            {"transform": [{"filter": "datum.kind == 'ids'"}],
             "mark": {"type": "rect", "fill": "#eeeeee", "stroke": "white", "aria": False},
             "encoding": {"tooltip": [{"field": "collabel", "title": "token"},
                                      {"field": "v", "title": "id"}]}},
            {"transform": [{"filter": "datum.text"},
                           {"calculate": "datum.kind == 'ids' ? format(datum.v, 'd') : "
                                         "format(datum.v, '.2f')", "as": "shown"}],
             "mark": {"type": "text", "fontSize": FONT_SIZE - 3, "aria": False},
             "encoding": {"text": {"field": "shown"},
                          "color": {"condition": {  # white on the dark ends of either scale
                              "test": "datum.kind == 'seq' ? datum.v < 0.5 : "
                                      "datum.kind == 'div' && abs(datum.v) > 0.6 * edge",
                              "value": "white"}, "value": "black"}}},
        ],
        "width": WIDTH, "height": {"step": tall},
        "resolve": {"scale": {"color": "independent"}},
    }
    bars = {
        "data": {"name": "numbers"},
        "transform": [this, {"filter": "datum.kind == 'bars'"},
                      {"calculate": "split(datum.v, ',')", "as": "v"}, {"flatten": ["v"]},
                      {"window": [{"op": "row_number", "as": "rank"}]},
                      {"calculate": "datum.rank - 1", "as": "rank"},
                      {"calculate": "toNumber(datum.v)", "as": "p"},
                      {"calculate": "cols[datum.rank]", "as": "candidate"}],
        "encoding": {"y": {"field": "rank", "type": "ordinal", "axis": {
                         "title": None, "labelExpr": "cols[datum.value]", "labelLimit": 200}},
                     "x": {"field": "p", "type": "quantitative", "axis": None,
                           "scale": {"domain": [0, 1]}}},
        "layer": [{"mark": {"type": "bar", "color": CATEGORICAL[0], "aria": False},
                   "encoding": {"tooltip": [{"field": "candidate"},
                                            {"field": "p", "title": "probability", "format": ".4f"}]}},
                  {"mark": {"type": "text", "align": "left", "dx": 6, "fontSize": FONT_SIZE - 2,
                            "aria": False},
                   "encoding": {"text": {"field": "p", "type": "quantitative", "format": ".3f"}}}],
        "width": 500, "height": {"step": 34},
    }
    params = [slider("step", n_steps, "Step", step, lower=1),
              slider("head", n_heads - 1, "Head shown in the attention steps", head),
              constant("kinds", [_kind(s) for s in first])]  # the model's: the same for every sentence
    out = chart({"vconcat": [words, heat, bars], "spacing": 16,
                "resolve": {"legend": {"color": "independent"}}},
                params=params, datasets={"numbers": numbers, "notes": notes},
                title={"text": {"expr": f"'Step ' + step + ' of {n_steps}: ' + steptitle"}},
                tokens=first[0].cols, free=True, sentence=walk_sentence(steps_by_head, edge),
                description="The forward pass one step at a time, with the model's numbers.",
                own_size=True)
    # The chosen step's labels, colour range and title, from the sentence's (read once per
    # step, not once per cell).
    out["params"] += [
        {"name": "steptitle", "expr": f"split(titles, '\\u001f')[head * {n_steps} + step - 1]"},
        {"name": "rows", "expr": "split(split(rows_all, '\\u001e')[step - 1], '\\u001f')"},
        {"name": "cols", "expr": "split(split(cols_all, '\\u001e')[step - 1], '\\u001f')"},
        {"name": "edge", "expr": "toNumber(split(edges, ',')[step - 1])"}]
    out["autosize"] = {"type": "pad", "resize": True}  # each step has its own size: re-lay out
    return out
