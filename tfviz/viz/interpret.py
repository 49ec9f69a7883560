"""Looking inside: the charts of the logit lens, direct logit attribution, activation patching
and induction heads, and the training lab's induction curves.

Pure functions of numbers and strings (what ``tfviz.interpret`` and ``tfviz.lab.induction``
return), giving Vega-Lite dicts built with the kit (``tfviz.viz.kit.charts.chart``). The
lesson charts carry every position, layer or head at once, with a slider or a select box
under the chart that repaints in the browser (the instant views' convention).

>>> c = patch_map([[0.0, 1.0], [0.5, 0.25]], [[1.0, 3.0], [2.0, 1.5]], ["the", "tired"])
>>> len(c["datasets"]["rows"]), c["params"][0]["name"]
(4, 'show')
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, n, o, q, tip, view
from tfviz.viz.kit.instant import choice, renderer, slider

CELL = 34  # px per heatmap cell
FIT_WIDTH = 700  # px of cells that fit the page's column beside the axis and legend
# a chart drawn at the size its view declares, not stretched to the column (cells keep their size)
OWN_SIZE = {"autosize": {"type": "pad"}}
SEQUENTIAL = {"scheme": "blues", "domain": [0, 1]}


def diverging(bound: float | str) -> dict:
    """Red for positive, blue for negative, white at 0, on a range symmetric about 0: -0.03
    must look as faint as +0.03, not as dark as the largest value (a domainMid alone stretches
    each side to its own extreme). ``bound``: a number, or an expression naming one."""
    domain = {"expr": f"[-({bound}), {bound}]"} if isinstance(bound, str) else [-bound, bound]
    return {"scheme": "redblue", "reverse": True, "domain": domain}


def _bound(values) -> float:
    """The colour range's half-width: 1 (a share restored runs from 0 to 1), or the largest
    magnitude when a value goes beyond."""
    a = np.asarray(values, float)
    return _r(max(1.0, float(np.abs(a).max())) if a.size else 1.0)


def radio(name: str, labels: Sequence[str], label: str, value: int = 0) -> dict:
    """A parameter 0, 1, … chosen with radio buttons showing ``labels`` (two or three short
    choices: each a keyboard stop, arrow keys move between them)."""
    options = list(range(len(labels)))
    return {"name": name, "value": value if value in options else 0,
            "bind": {"input": "radio", "options": options, "labels": list(labels), "name": f"{label} "}}


def drawn(marks: int) -> dict:
    """The renderer for the marks one view draws (not every view's rows, which a chart with a
    slider carries all at once): SVG, whose marks carry ARIA labels, while they are few."""
    return {"usermeta": {"embedOptions": {"renderer": renderer(marks), "actions": False}}}


def _r(x: float, digits: int = 4) -> float:
    return round(float(x), digits)


def _labels(tokens: Sequence[str]) -> list[str]:
    """"3 ␣sat": a token's position first, so a repeated token keeps two columns."""
    return [f"{i} {t}" for i, t in enumerate(tokens)]


# ----- the training lab -----------------------------------------------------------------------
def induction_training(steps: Sequence[int], induction: Sequence[np.ndarray],
                       first_loss: Sequence[float], second_loss: Sequence[float],
                       threshold: float = 0.5) -> dict:
    """Left: each head's induction score against training steps (``induction[c]`` is
    checkpoint c's (layers, heads)), with a dashed rule at ``threshold``. Right: the loss on the
    run's first copy and on its second against steps. The two change together when the
    induction head forms."""
    heads = np.stack([np.asarray(a) for a in induction])  # (checkpoints, layers, heads)
    names = [f"L{lyr}H{h}" for lyr in range(heads.shape[1]) for h in range(heads.shape[2])]
    rows = [{"step": int(s), "head": f"L{lyr}H{h}", "score": _r(heads[c, lyr, h])}
            for c, s in enumerate(steps) for lyr in range(heads.shape[1]) for h in range(heads.shape[2])]
    losses = [{"step": int(s), "copy": which, "loss": _r(v)}
              for s, f, sec in zip(steps, first_loss, second_loss)
              for which, v in (("first copy (unpredictable)", f), ("second copy", sec))]
    step = q("step", "step")
    lines = view({"type": "line", "point": True}, x=step,
                 y=q("score", "induction score", scale={"domain": [0, 1]}),
                 color=colour("head", names, title="head (L = layer)",
                              legend={"orient": "bottom", "columns": 4}),
                 tooltip=tip("head", "step", "score:.3f"))
    rule = view({"type": "rule", "strokeDash": [4, 4], "color": "#666"}, data="threshold",
                y=q("t"), tooltip=tip({"field": "t", "title": "an induction head from here"}))
    left = {"layer": [lines, rule], "title": "Each head's induction score", "width": 320, "height": 220}
    right = {**view({"type": "line", "point": True}, data="losses", x=step,
                    y=q("loss", "cross-entropy (nats)", scale={"zero": True}),
                    color=colour("copy", ["first copy (unpredictable)", "second copy"], title=None,
                                 legend={"orient": "bottom", "direction": "vertical"}),
                    tooltip=tip("copy", "step", "loss:.3f")),
             "title": "Loss on each copy of the run", "width": 320, "height": 220}
    return chart({"hconcat": [left, right], "resolve": {"scale": {"color": "independent"}}},
                 rows=rows, datasets={"losses": losses, "threshold": [{"t": threshold}]},
                 description=f"Left: the induction score of each of {len(names)} heads at "
                             f"{len(steps)} checkpoints of training, with a dashed line at "
                             f"{threshold:g}. Right: the held-out loss on the first and on the "
                             "second copy of the repeated run at the same checkpoints.")


# ----- 24 · the logit lens --------------------------------------------------------------------
def lens_map(tokens: Sequence[str], layers: Sequence[str], top: Sequence[Sequence[str]],
             top_prob: np.ndarray, final_prob: np.ndarray, *, show: int = 0,
             here: bool = False) -> dict:
    """Positions (columns) × layers (rows, the embeddings at the bottom): each cell names the
    token that layer would predict next and is coloured by a number radio buttons pick: the
    top token's probability, or the probability of the model's final prediction there.
    ``here``: an encoder's prediction is the token at its own position, not the next one."""
    what = "token here" if here else "next token"
    top_prob, final_prob = np.asarray(top_prob), np.asarray(final_prob)
    cols = _labels(tokens)
    rows = [{"pos": cols[p], "layer": layers[r], "top": top[r][p], "p_top": _r(top_prob[r, p]),
             "p_final": _r(final_prob[r, p])}
            for r in range(len(layers)) for p in range(len(tokens))]
    value = {"calculate": "show == 0 ? datum.p_top : datum.p_final", "as": "p"}
    # A cell wide enough for a token's text, narrower as the text grows, so the map and its
    # legend stay inside the page's column (2 cells' worth a token at most, 1 at least).
    cell_w = max(CELL, min(2 * CELL, FIT_WIDTH // max(1, len(tokens))))
    x = o("pos", "position: the token read", sort=cols, axis={"labelAngle": -40, "labelOverlap": False})
    y = o("layer", None, sort=list(reversed(layers)))
    heat = view("rect", transform=[value], x=x, y=y,
                color=q("p", "probability", scale=SEQUENTIAL),
                tooltip=tip({"field": "pos", "title": "position"}, "layer",
                            {"field": "top", "title": f"top {what}"},
                            {"field": "p_top", "title": "its probability", "format": ".3f"},
                            {"field": "p_final", "title": "final prediction's probability",
                             "format": ".3f"}))
    text = view({"type": "text", "fontSize": 11, "limit": cell_w - 4}, transform=[value],
                x=x, y=y, text=n("top"),
                color={"condition": {"test": "datum.p > 0.55", "value": "white"}, "value": "black"})
    return chart({"layer": [heat, text], "width": max(300, cell_w * len(tokens)),
                  "height": CELL * len(layers), **OWN_SIZE},
                 rows=rows, params=[radio("show", ["top token's probability", "final prediction's probability"],
                                          "Colour by", show)],
                 title=f"What each layer would predict ({what})",
                 description=f"The logit lens on {len(tokens)} tokens: for each position and each "
                             f"of {len(layers)} stages (the embeddings, then after each block), the "
                             f"{what} the model would predict if it stopped there, coloured by "
                             "the probability the buttons under it choose.")


# ----- 25 · who wrote the answer ----------------------------------------------------------------
def attribution_bars(tokens: Sequence[str], answers: Sequence[str], parts: Sequence[dict[str, float]],
                     kinds: dict[str, str], logits: Sequence[float], *, position: int) -> dict:
    """One bar per component (each head, each MLP, the embeddings, the biases): its direct
    share of the logit of the model's top token at one position, which the slider picks.
    ``parts[p]``: position p's {component: share}; ``answers[p]`` its top token; ``logits[p]``
    the model's own logit of it. Radio buttons show every part or the heads only."""
    names = list(parts[0])
    rows = [{"position": p, "part": name, "kind": kinds[name], "share": _r(parts[p][name])}
            for p in range(len(tokens)) for name in names]
    said = [{"position": p, "token": tokens[p], "answer": answers[p], "logit": _r(logits[p]),
             "total": _r(sum(parts[p].values()))} for p in range(len(tokens))]
    kind_names = sorted(set(kinds.values()), key=list(kinds.values()).index)
    keep = {"filter": "datum.position == pos && (which == 0 || datum.kind == 'head')"}
    bars = view("bar", transform=[keep], x=n("part", None, sort=names, axis={"labelAngle": -60, "labelOverlap": False}),
                y=q("share", "direct share of the logit"),
                color=colour("kind", kind_names, title="part",
                             legend={"orient": "bottom", "direction": "horizontal"}),
                tooltip=tip("part", "kind", "share:.3f"))
    zero = view({"type": "rule", "color": "#444"}, data="zero", y=q("y"))
    body = {"layer": [bars, zero], "width": max(360, 22 * len(names)), "height": 260,
            **drawn(len(names)), **OWN_SIZE}
    body["title"] = {"text": {"expr": "'Position ' + pos + ' (' + toks[pos] + '): who wrote the "
                                      "logit of ' + answers[pos] + ', ' + format(logits[pos], '.2f') + "
                                      "' (parts add to ' + format(totals[pos], '.2f') + ')'"}}
    params = [slider("pos", len(tokens) - 1, "Position", position),
              radio("which", ["every part", "heads only"], "Show"),
              {"name": "toks", "value": [s["token"] for s in said]},
              {"name": "answers", "value": [s["answer"] for s in said]},
              {"name": "logits", "value": [s["logit"] for s in said]},
              {"name": "totals", "value": [s["total"] for s in said]}]
    return chart(body, rows=rows, datasets={"zero": [{"y": 0}]}, params=params,
                 description=f"Direct logit attribution: for the position the slider picks (of "
                             f"{len(tokens)}), one bar for each of {len(names)} parts of the model, "
                             "its direct share of the logit of the model's top next token there.")


# ----- 26 · causes, not correlations ------------------------------------------------------------
def patch_map(restored, raw, tokens: Sequence[str], *, show: int = 0) -> dict:
    """Layers (rows) × positions (columns) of a patching map: each cell is the corrupt run with
    that layer's input at that position taken from the clean run. Radio buttons colour it by
    the share of the clean answer restored (0 = corrupt, 1 = clean) or by the raw logit
    difference."""
    restored, raw = np.asarray(restored, float), np.asarray(raw, float)
    cols = _labels(tokens)
    rows = [{"layer": f"block {i}", "pos": cols[p], "restored": _r(restored[i, p]), "diff": _r(raw[i, p])}
            for i in range(restored.shape[0]) for p in range(restored.shape[1])]
    value = {"calculate": "show == 0 ? datum.restored : datum.diff", "as": "v"}
    layers = [f"block {i}" for i in range(restored.shape[0])]
    bound = f"show == 0 ? {_bound(restored)} : {_bound(raw)}"
    heat = view("rect", transform=[value],
                x=o("pos", "position patched (the corrupt text's token)", sort=cols,
                    axis={"labelAngle": -45, "labelOverlap": False}),
                y=o("layer", "input of", sort=layers),
                color=q("v", "value", scale=diverging(bound)),
                tooltip=tip({"field": "pos", "title": "position"}, "layer",
                            {"field": "restored", "title": "share restored", "format": ".2f"},
                            {"field": "diff", "title": "logit difference", "format": ".3f"}))
    return chart({**heat, "width": max(300, CELL * len(tokens)), "height": CELL * len(layers), **OWN_SIZE},
                 rows=rows, params=[radio("show", ["share of the clean answer restored", "logit difference"],
                                          "Colour by", show)],
                 title="Where the clean answer comes back",
                 description=f"Activation patching over {len(layers)} layers and {len(tokens)} "
                             "positions: each cell is the corrupt run with one block's input at one "
                             "position taken from the clean run, coloured by what the buttons under "
                             "it choose.")


def head_patch_map(restored, *, kv: bool = False) -> dict:
    """Layers × heads: each cell is the corrupt run with one head's output (hook_z, at every
    position) taken from the clean run, coloured by the share of the clean answer restored."""
    restored = np.asarray(restored, float)
    n_layers, n_heads = restored.shape
    rows = [{"layer": i, "head": h, "name": f"L{i}H{h}", "restored": _r(restored[i, h])}
            for i in range(n_layers) for h in range(n_heads)]
    heat = view("rect", x=o("head", "head", axis={"labelAngle": 0}), y=o("layer", "layer"),
                color=q("restored", "share restored", scale=diverging(_bound(restored))),
                tooltip=tip("name", {"field": "restored", "title": "share restored", "format": ".2f"}))
    text = view({"type": "text", "fontSize": 11}, x=o("head"), y=o("layer"),
                text={"field": "restored", "format": ".2f"})
    return chart({"layer": [heat, text], "width": CELL * max(n_heads, 4) + 20, "height": CELL * n_layers,
                  **OWN_SIZE},
                 rows=rows, title="Which heads carry it",
                 description=f"Activation patching by head: {n_layers} layers by {n_heads} heads, each "
                             "cell the corrupt run with one head's output taken from the clean run, "
                             "coloured and labelled by the share of the clean answer restored.")


# ----- 27 · induction heads ---------------------------------------------------------------------
def induction_heads(scores, previous, *, head_names: Sequence[str] = ()) -> dict:
    """Two layers × heads maps side by side: each head's induction score and its previous-token
    score, labelled."""
    scores, previous = np.asarray(scores, float), np.asarray(previous, float)
    n_layers, n_heads = scores.shape
    rows = [{"layer": i, "head": h, "score": _r(s), "which": which}
            for which, a in (("induction", scores), ("previous token", previous))
            for i in range(n_layers) for h in range(n_heads) for s in [a[i, h]]]

    def one(which: str) -> dict:
        # Each map filters its own rows: views read the chart's dataset by name, which a
        # facet's split would not reach (a faceted layer of them drew both scores in each map).
        keep = [{"filter": f"datum.which == '{which}'"}]
        return {"layer": [view("rect", transform=keep, x=o("head", "head", axis={"labelAngle": 0}),
                               y=o("layer", "layer"), color=q("score", "score", scale=SEQUENTIAL),
                               tooltip=tip("layer", "head", "score:.3f")),
                          view({"type": "text", "fontSize": 11}, transform=keep, x=o("head"), y=o("layer"),
                               text={"field": "score", "format": ".2f"},
                               color={"condition": {"test": "datum.score > 0.55", "value": "white"},
                                      "value": "black"})],
                "title": which, "width": max(120, CELL * n_heads), "height": max(90, 24 * n_layers)}

    return chart({"hconcat": [one("induction"), one("previous token")]}, rows=rows,
                 title="Each head's scores",
                 description=f"Two maps of {n_layers} layers by {n_heads} heads: each head's "
                             "induction score (left) and previous-token score (right) on the "
                             "repeated sequence, labelled with their values.")


def repeated_pattern(patterns: Sequence[np.ndarray], names: Sequence[str], tokens: Sequence[str],
                     losses: Sequence[float], *, pick: int = 0) -> dict:
    """Left: the attention of one head on the repeated sequence (queries as rows, keys as
    columns), the head chosen in a select box from ``names`` (``patterns[i]`` its (T, T)
    weights). Right: the loss of each next token along the sequence (``losses[j]`` for token
    j + 1): high in the first copy, low in the second once the model copies."""
    T = len(tokens)
    cols = _labels(tokens)
    rows = [{"head": i, "q": cols[a], "k": cols[b], "w": _r(float(pat[a, b]), 3)}
            for i, pat in enumerate(patterns) for a in range(T) for b in range(a + 1)
            if pat[a, b] >= 0.02 or a == b]
    heat = view("rect", transform=[{"filter": "datum.head == pick"}],
                x=o("k", "key (attended to)", sort=cols, axis={"labels": False, "ticks": False}),
                y=o("q", "query", sort=cols, axis={"labels": False, "ticks": False}),
                color=q("w", "weight", scale=SEQUENTIAL), tooltip=tip("q", "k", "w:.3f"))
    size = max(220, min(440, 9 * T))
    loss_rows = [{"pos": j + 1, "token": tokens[j + 1], "loss": _r(v)} for j, v in enumerate(losses)]
    line = view({"type": "line", "point": True}, data="losses", x=q("pos", "position"),
                y=q("loss", "loss of this token (nats)"), tooltip=tip("pos", "token", "loss:.2f"))
    left = {**heat, "width": size, "height": size,
            "title": {"text": {"expr": "'Attention of ' + names[pick]"}}}
    right = {**line, "width": size, "height": 220, "title": "Loss along the sequence"}
    shown = max(sum(1 for r in rows if r["head"] == i) for i in range(len(patterns)))
    return chart({"hconcat": [left, right], **drawn(shown + len(loss_rows))}, rows=rows,
                 datasets={"losses": loss_rows},
                 params=[choice("pick", range(len(names)), names, "Head", pick),
                         {"name": "names", "value": list(names)}],
                 description=f"Left: the attention weights of the head the select box picks (of "
                             f"{len(names)}) on a random sequence of {T} tokens whose second half "
                             "repeats the first. Right: the loss of each token along it.")
