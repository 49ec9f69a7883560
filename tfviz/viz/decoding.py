"""The charts of lesson 14 (the LM head and decoding), in the conventions of
``tfviz.viz.kit.instant``: everything a view needs is sent once, and the view controls (``pos``,
``step``) are Vega-Lite parameters, so moving them reruns nothing.

- ``head_chart``: the top next-token candidates at each position of the learner's text
  (softmax of h Eᵀ), a position slider choosing which.
- ``steps_chart``: a generation one step at a time. Each step's candidates as bars: kept ones
  coloured by their probability after the filters (the chosen one in vermillion), excluded ones
  grey at the probability they had, the nucleus on a yellow band, and ticks where the
  probability stood before renormalising (and at temperature 1).
- ``loss_chart``: the per-token training loss of a sentence, one bar per input/target pair
  (a static chart: nothing to choose).
- ``beam_tree_chart``: beam search drawn as a tree (``tfviz.analysis.decoding.beam_tree``).

The first three are length-free (``tfviz.viz.kit.instant_length``): laid out for ``length_cap``
of the text's tokens or of the steps taken, they read that length from their data, and what else
follows the text (each step's candidates, the mean loss) rides in their data too, so a new
sentence or prompt of another length swaps their data instead of drawing them anew.

The beam tree: columns are steps, the prompt on the left. In each column: every kept beam and
the best few children of each parent; the rest of the expansions are only counted (the
subtitle). A node reads its token and, below it, the summed log-probability the beams are
ranked by. Blue: kept; grey: pruned; vermillion: the path of the best final beam; a green ring
and a dashed green line: the path greedy decoding takes, wherever it leaves the beam. A static
chart (no view control): everything is drawn at once.
"""

from __future__ import annotations

import numpy as np
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.instant import SEPARATOR, rounded
from tfviz.viz.kit.instant_length import length_cap, step_notes, step_params, step_slider, token_slider
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, LIGHT_GREY, token_labels


CHOSEN = CATEGORICAL[5]  # vermillion: the token taken
KEPT = CATEGORICAL[0]  # blue: still in the running
CUT = "#c8c8c8"  # grey: excluded by a filter
NUCLEUS = "#fbeec1"  # the band behind the nucleus set
STATUS = ("chosen", "kept", "cut by top-k", "cut by top-p")
BAR_WIDTH = 460
NOTE_CHARS = 100
STEP_SEPARATOR = "\x1e"  # between the steps' candidate labels packed into one string


def head_chart(top_probs: np.ndarray, top_logits: np.ndarray, top_tokens: Sequence[Sequence[str]],
                tokens: Sequence[str], *, pos: int | None = None) -> dict:
    """The most probable next tokens after each position. ``top_*`` are (T, k), best first.

    Length-free: the ``pos`` slider is laid out for ``length_cap(T)`` positions, and the
    chart draws ``posi`` (``charts.chart``): the slider's position kept below the text's
    length, or its last token while ``pos`` is None (the slider then says -1, and the view
    script shows where)."""
    T, k = np.shape(top_probs)
    rows = [{"pos": t, "rank": r, "tok": str(top_tokens[t][r]), "p": rounded(top_probs[t][r]),
             "logit": rounded(top_logits[t][r])} for t in range(T) for r in range(k)]
    keep = [{"filter": "datum.pos == posi"},
            {"calculate": "(datum.rank + 1) + '. ' + datum.tok", "as": "label"}]
    y = {"field": "label", "type": "nominal", "sort": {"field": "rank", "op": "min"}}
    tooltip = [{"field": "tok", "title": "token"}, {"field": "logit", "title": "logit", "format": ".4f"},
               {"field": "p", "title": "probability", "format": ".4f"}]

    def panel(field: str, title: str, fmt: str, x_scale: dict, labels: bool) -> dict:
        return {"transform": keep,
                "encoding": {"y": {**y, "title": "next token" if labels else None,
                                   "axis": {"labelLimit": 200} if labels else {"labels": False,
                                                                               "ticks": False}},
                             "x": {"field": field, "type": "quantitative", "title": title,
                                   "scale": x_scale,
                                   **({"axis": {"values": [0, 0.25, 0.5, 0.75, 1]}} if field == "p" else {})},
                             "tooltip": tooltip},
                "layer": [{"mark": {"type": "bar", "color": KEPT if field == "p" else CATEGORICAL[4]}},
                          {"mark": {"type": "text", "align": "left", "dx": 5,
                                    "fontSize": FONT_SIZE - 3, "aria": False},
                           "encoding": {"text": {"field": field, "type": "quantitative",
                                                 "format": fmt}}}],
                "width": 300, "height": {"step": 28}}

    body = {"data": {"name": "head"},
            "hconcat": [panel("logit", "logit = h · (row of E)", ".2f", {"zero": True}, True),
                        panel("p", "probability = softmax(logits)", ".3f", {"domain": [0, 1]}, False)],
            "spacing": 60,
            "title": {"text": {"expr": "'After ' + tokens[posi] + ', the model expects'"}}}
    params = [token_slider(length_cap(T) - 1, "Position", pos, name="pos")]  # posi: spec's
    return chart(body, params=params, datasets={"head": rows},
                 tokens=token_labels(tokens), marks=4 * k, free=True,
                 description="The most probable next tokens at the chosen position.", own_size=True)


def _status(step, i: int) -> str:
    if step.candidates[i] == step.chosen:
        return "chosen"
    if step.probs[i] > 0:
        return "kept"
    return "cut by top-k" if not step.in_top_k[i] else "cut by top-p"


def _wrapped(lines: Sequence[str], width: int = NOTE_CHARS) -> list[tuple[bool, str]]:
    import textwrap
    return [(j == 0, part) for j, line in enumerate(lines)
            for part in textwrap.wrap(line, width, subsequent_indent="  ") or [""]]


def steps_chart(steps: Sequence, notes: Sequence[Sequence[str]], *, step: int = 1,
                nucleus: bool = False, warm: bool = False) -> dict:
    """A generation's steps (``Generation.steps``) with their ``notes`` (from
    ``analysis.decoding.step_notes``). ``nucleus``: top-p is on, so mark the nucleus; ``warm``:
    the temperature is not 1, so tick the model's own probabilities too. ``step`` counts from 1.

    Length-free: laid out for ``length_cap(T)`` steps, with the tokens taken as the chart's
    ``tokens`` (``ntok`` = T) and each step's candidates packed into its first row; it draws
    ``si``, the slider's step kept within the steps taken."""
    T = len(steps)
    cands, lines = [], []
    for s, st in enumerate(steps):
        for i, tok in enumerate(st.tokens):
            status = _status(st, i)
            shown = st.probs[i] if st.probs[i] > 0 else st.before[i]
            cands.append({"step": s + 1, "rank": i, "tok": str(tok), "status": status,
                          "bar": rounded(shown), "after": rounded(st.probs[i]),
                          "before": rounded(st.before[i]),
                          "plain": rounded(st.plain[i] if st.plain else st.before[i]),
                          "nucleus": bool(nucleus and st.in_top_k[i] and st.in_top_p[i])})
        lines += [{"step": s + 1, "line": j, "first": first, "text": text}
                  for j, (first, text) in enumerate(_wrapped(notes[s]))]
    this = {"filter": "datum.step == si"}
    words = step_notes(BAR_WIDTH + 260)
    y = {"field": "rank", "type": "ordinal", "title": None,
         "axis": {"labelExpr": "stepcands[datum.value]", "labelLimit": 160}}
    x = {"type": "quantitative", "scale": {"domain": [0, 1]}}
    tooltip = [{"field": "tok", "title": "token"}, {"field": "status"},
               {"field": "plain", "title": "p at temperature 1", "format": ".4f"},
               {"field": "before", "title": "p before the filters", "format": ".4f"},
               {"field": "after", "title": "p after the filters", "format": ".4f"}]
    layers = [
        {"transform": [{"filter": "datum.nucleus"}],
         "mark": {"type": "rect", "color": NUCLEUS, "aria": False},
         "encoding": {"x": {"value": 0}, "x2": {"value": BAR_WIDTH}}},
        {"mark": {"type": "bar", "height": {"band": 0.7}},
         "encoding": {"x": {**x, "field": "bar", "title": "probability (kept: after the filters, "
                                                          "renormalised; cut: before)"},
                      "color": {"field": "status", "type": "nominal", "title": None,
                                "scale": {"domain": list(STATUS), "range": [CHOSEN, KEPT, CUT, CUT]},
                                "legend": {"orient": "top"}},
                      "tooltip": tooltip}},
        {"transform": [{"filter": "datum.status == 'kept' || datum.status == 'chosen'"}],
         "mark": {"type": "tick", "color": "black", "thickness": 2, "aria": False},
         "encoding": {"x": {**x, "field": "before"}}},
        {"transform": [{"calculate": "datum.status == 'kept' || datum.status == 'chosen' ? "
                                     "format(datum.after, '.3f') + (abs(datum.after - datum.before) "
                                     ">= 0.0005 ? '  (was ' + format(datum.before, '.3f') + ')' : '')"
                                     " : format(datum.before, '.3f') + '  ' + datum.status", "as": "shown"}],
         "mark": {"type": "text", "align": "left", "dx": 6, "fontSize": FONT_SIZE - 3, "aria": False},
         "encoding": {"x": {**x, "field": "bar"}, "text": {"field": "shown"}}},
    ]
    if warm:
        layers.insert(3, {"mark": {"type": "point", "shape": "diamond", "filled": True,
                                   "color": CATEGORICAL[2], "size": 60, "aria": False},
                          "encoding": {"x": {**x, "field": "plain"}}})
    bars = {"data": {"name": "cands"}, "transform": [this], "encoding": {"y": y},
            "layer": layers, "width": BAR_WIDTH, "height": {"step": 30}}
    chosen = [str(st.tokens[st.candidates.index(st.chosen)]) for st in steps]
    packed = STEP_SEPARATOR.join(SEPARATOR.join(str(t).replace(SEPARATOR, " ").replace(STEP_SEPARATOR, " ")
                                                for t in st.tokens) for st in steps)
    params = [step_slider(length_cap(T), step), *step_params(),
              {"name": "stepcands", "expr": "split(split(cands, '\\u001e')[si - 1] || '', '\\u001f')"}]
    return chart({"vconcat": [words, bars], "spacing": 12}, params=params,
                 datasets={"cands": cands, "notes": lines}, tokens=chosen, free=True,
                 sentence={"cands": packed},  # each step's candidates, step after step
                 title={"text": {"expr": "'Step ' + si + ' of ' + ntok + ': the model takes ' + tokens[si - 1]"}},
                 marks=5 * max((len(st.tokens) for st in steps), default=0) + 4,
                 description="One generation step at a time: candidates, filters and the token taken.",
                 own_size=True)


def loss_chart(input_tokens: Sequence[str], target_tokens: Sequence[str],
               losses: Sequence[float], probs: Sequence[float]) -> dict:
    """One bar per input → target pair: the loss −log p(target), in nats (a static chart)."""
    n = len(losses)
    rows = [{"i": i, "pair": f"{i} {a} → {b}", "loss": rounded(x), "p": rounded(p)}
            for i, (a, b, x, p) in enumerate(zip(input_tokens, target_tokens, losses, probs))]
    mean = float(np.mean(losses)) if n else 0.0
    if rows:  # the mean rides in the first row: the spec holds nothing of the sentence
        rows[0].update(mean=round(mean, 4), mean_text=f"mean {mean:.3f}")
    bars = {"mark": {"type": "bar", "color": KEPT},
            "encoding": {"y": {"field": "pair", "type": "nominal", "sort": {"field": "i", "op": "min"},
                               "title": "input → target (the next token)",
                               "axis": {"labelLimit": 260}},
                         "x": {"field": "loss", "type": "quantitative",
                               "title": "loss = −log p(target), nats"},
                         "tooltip": [{"field": "pair"}, {"field": "p", "title": "p(target)", "format": ".4f"},
                                     {"field": "loss", "format": ".4f"}]}}
    values = {"mark": {"type": "text", "align": "left", "dx": 5, "fontSize": FONT_SIZE - 3, "aria": False},
              "encoding": {"y": bars["encoding"]["y"], "x": {"field": "loss", "type": "quantitative"},
                           "text": {"field": "loss", "type": "quantitative", "format": ".2f"}}}
    rule = {"data": {"name": "loss"}, "transform": [{"filter": "datum.i == 0"}],
            "encoding": {"x": {"field": "mean", "type": "quantitative"}},
            "layer": [{"mark": {"type": "rule", "color": CHOSEN, "strokeDash": [6, 4], "strokeWidth": 2}},
                      {"mark": {"type": "text", "align": "left", "baseline": "bottom", "dx": 4, "y": -4,
                                "color": CHOSEN, "fontSize": FONT_SIZE - 2},
                       "encoding": {"text": {"field": "mean_text"}}}]}
    body = {"layer": [{"data": {"name": "loss"}, "layer": [bars, values]}, rule],
            "width": 460, "height": {"step": 22},
            "title": "The loss of each prediction in your sentence"}
    return chart(body, datasets={"loss": rows}, marks=2 * length_cap(n) + 2,
                 description="Cross-entropy of each next-token prediction of the sentence.",
                 own_size=True)


BEST, KEPT, PRUNED, GREEDY = CATEGORICAL[5], CATEGORICAL[0], "#9a9a9a", CATEGORICAL[2]
WIDTH = 1040  # the whole tree fits a laptop's page: columns narrow as steps are added
COLUMN = (90, 150)  # pixels per step, least and most
ROW = 36  # two lines per node: the token, then its sum (two text marks: a
# list of lines would reach Vega as an Arrow vector, not an array)
LABEL_END = 0.74  # where a node's label ends, in steps: edges start there


def column_width(steps: int) -> int:
    """Pixels per column for a tree of ``steps`` steps (and the prompt's column).

    >>> column_width(6), column_width(10)
    (148, 94)
    """
    return max(COLUMN[0], min(COLUMN[1], WIDTH // (steps + 1)))


def _beam_status(n) -> str:
    return "best beam" if n.best else "kept" if n.kept else "pruned"


def beam_tree_chart(tree, *, scored_note: str | Sequence[str] = "") -> dict:
    """``tree`` is a ``BeamTree``. ``scored_note`` (say "1,800 candidates scored per step"; a
    list for several lines) becomes the subtitle."""
    steps = max(n.step for n in tree.nodes)
    column = column_width(steps)
    rows = [{"step": n.step, "slot": n.slot, "from_step": n.step - 1 + LABEL_END,
             "from_slot": n.parent_slot, "label": n.label, "lp": rounded(n.logprob),
             "sum": rounded(n.total), "status": _beam_status(n), "greedy": n.greedy, "rank": n.rank,
             "sum_text": "" if n.step == 0 else f"{n.total:.2f}"}
            for n in tree.nodes]
    x = {"type": "quantitative", "scale": {"domain": [-0.05, steps + 0.95], "nice": False},
         "axis": {"title": None, "orient": "top", "values": list(range(steps + 1)), "grid": False,
                  "labelExpr": "datum.value == 0 ? 'prompt' : 'step ' + datum.value",
                  "labelAlign": "left", "domain": False, "ticks": False}}
    y = {"type": "quantitative", "axis": None,
         "scale": {"domain": [tree.rows - 0.5, -0.5], "nice": False, "zero": False}}
    colour = {"field": "status", "type": "nominal", "title": None,
              "scale": {"domain": ["best beam", "kept", "pruned"], "range": [BEST, KEPT, PRUNED]},
              "legend": {"orient": "bottom"}}
    edges = [{"filter": "datum.step > 0"}]
    tooltip = [{"field": "label", "title": "token"}, {"field": "lp", "title": "log p(token)", "format": ".4f"},
               {"field": "sum", "title": "sum of log p", "format": ".4f"},
               {"field": "rank", "title": "rank among the step's candidates"},
               {"field": "status"}, {"field": "greedy", "title": "on greedy's path"}]
    layers = [
        {"transform": edges, "mark": {"type": "rule", "aria": False},
         "encoding": {"x": {**x, "field": "from_step"}, "y": {**y, "field": "from_slot"},
                      "x2": {"field": "step"}, "y2": {"field": "slot"},
                      "color": colour,
                      "strokeWidth": {"condition": {"test": "datum.status == 'best beam'", "value": 3},
                                      "value": 1.3}}},
        {"transform": [*edges, {"filter": "datum.greedy"}],
         "mark": {"type": "rule", "color": GREEDY, "strokeDash": [5, 4], "strokeWidth": 2, "aria": False},
         "encoding": {"x": {**x, "field": "from_step"}, "y": {**y, "field": "from_slot"},
                      "x2": {"field": "step"}, "y2": {"field": "slot"}}},
        {"transform": [{"filter": "datum.greedy"}],
         "mark": {"type": "point", "color": GREEDY, "size": 170, "strokeWidth": 2, "aria": False},
         "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"}}},
        {"mark": {"type": "point", "filled": True, "size": 60},
         "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"}, "color": colour,
                      "tooltip": tooltip}},
        *({"transform": [{"filter": f"datum.status {'==' if bold else '!='} 'best beam'"}],
           "mark": {"type": "text", "align": "left", "dx": 8, "dy": dy, "fontSize": FONT_SIZE - 3,
                    "aria": False, "limit": int(column * LABEL_END) - 12,
                    "fontWeight": "bold" if bold else "normal"},
           "encoding": {"x": {**x, "field": "step"}, "y": {**y, "field": "slot"},
                        "text": {"field": field},
                        "color": {"condition": {"test": "datum.status == 'pruned'", "value": LIGHT_GREY},
                                  "value": "black"}}}
          for bold in (True, False) for field, dy in (("label", -7), ("sum_text", 8))),
    ]
    body = {"data": {"name": "nodes"}, "layer": layers,
            "width": column * (steps + 1), "height": ROW * tree.rows,
            "title": {"text": "Beam search, step by step",
                      "subtitle": scored_note if isinstance(scored_note, str) else list(scored_note),
                      "subtitleFontSize": FONT_SIZE - 3}}
    return chart(body, datasets={"nodes": rows}, marks=4 * len(rows),
                 description="Beam search as a tree: every kept beam and the best pruned expansions.",
                 own_size=True)
