"""The training lab's charts: loss and held-out accuracy curves of up to four runs, a run's
attention maps as they form, each expert's load over training, and each run's gradient norm
per layer.

Pure functions of numbers and strings, returning Vega-Lite dicts (``tfviz.viz.kit.charts``). The
attention and expert charts carry every checkpoint, held-out example, layer and head of the run
at once, with sliders under the chart (``tfviz.viz.kit.instant``): moving one repaints in the
browser, with no script run (README, "Instant views").
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, o, q, tip, view
from tfviz.viz.kit.instant import choice, constant, heat_layer, layer_head, packed, slider, unpack
from tfviz.viz.kit.maps import view_filter
from tfviz.viz.kit.instant_pictures import picture, picture_layer
from tfviz.viz.kit.style import token_labels

MAX_POINTS = 300  # loss points per run on the chart: longer runs are averaged in bins
VALUE_CELLS = 150_000  # more cells than this across a run's maps travel as pictures
GAP = "#ffffff"  # a picture's cells past a shorter example's end


def binned(losses: Sequence[float], max_points: int = MAX_POINTS) -> tuple[list[int], list[float]]:
    """(steps, mean loss) of consecutive bins, at most ``max_points`` of them; a bin is named by
    its last step (1-based).

    >>> binned([4.0, 2.0, 3.0, 1.0], max_points=2)
    ([2, 4], [3.0, 2.0])
    """
    n = len(losses)
    if n == 0:
        return [], []
    size = -(-n // max_points)  # ceil
    steps, means = [], []
    for start in range(0, n, size):
        chunk = losses[start:start + size]
        steps.append(start + len(chunk))
        means.append(float(np.mean(chunk)))
    return steps, means


def curves_chart(labels: Sequence[str], losses: Sequence[Sequence[float]],
                 acc_steps: Sequence[Sequence[int]], accs: Sequence[Sequence[float]],
                 chance: float | None = None) -> dict:
    """Training loss (left) and held-out accuracy (right) against steps, one colour per run."""
    loss_rows, acc_rows = [], []
    for name, run_losses, steps, run_accs in zip(labels, losses, acc_steps, accs):
        xs, ys = binned(list(run_losses))
        loss_rows += [{"run": name, "step": x, "loss": round(y, 4)} for x, y in zip(xs, ys)]
        acc_rows += [{"run": name, "step": int(s), "accuracy": round(float(a), 4)}
                     for s, a in zip(steps, run_accs)]
    run = colour("run", labels, title=None,
                 legend={"orient": "bottom", "direction": "vertical", "labelLimit": 600})
    step = q("step", "step")
    loss = {**view("line", data="loss", x=step, y=q("loss", "cross-entropy (nats)"), color=run,
                   tooltip=tip("run", "step", "loss")),
            "title": "training loss", "width": 330, "height": 220}
    acc_line = view({"type": "line", "point": True}, data="accuracy", x=step, color=run,
                    y=q("accuracy", "share of held-out examples solved", scale={"domain": [0, 1]},
                        axis={"format": "%"}),
                    tooltip=tip("run", "step", "accuracy:.1%"))
    layers = [acc_line]
    sets = {"loss": loss_rows, "accuracy": acc_rows}
    if chance is not None:
        layers.append(view({"type": "rule", "strokeDash": [4, 4], "color": "#888"}, data="chance",
                           y=q("chance"), tooltip=tip({"field": "chance", "title": "chance",
                                                       "format": ".1%"})))
        sets["chance"] = [{"chance": chance}]
    acc = {"layer": layers, "title": "held-out accuracy", "width": 330, "height": 220}
    runs = f"{len(labels)} run{'s' if len(labels) != 1 else ''}"
    return chart({"hconcat": [loss, acc]}, datasets=sets,
                 description=f"Training loss (left) and held-out accuracy (right) against steps, "
                             f"for {runs}: {'; '.join(labels)}.")


def attention_forming(patterns: Sequence[Sequence[np.ndarray]], steps: Sequence[int],
                      tokens: Sequence[Sequence[str]], *, layer: int = 0, head: int = 0) -> dict:
    """One run's attention maps as training goes: ``patterns[c][e]`` is checkpoint c's
    weights (layers, heads, T, T) on held-out example e, ``steps[c]`` its step and
    ``tokens[e]`` that example's tokens. Sliders under the chart pick the checkpoint (the
    last one first), the layer and the head, a select box the example; rows are queries,
    columns keys. A run whose maps hold more than ``VALUE_CELLS`` cells in all sends them as
    pictures (no values on hover)."""
    n_ckpt, n_ex = len(patterns), len(tokens)
    n_layers, n_heads = patterns[0][0].shape[:2]
    longest = max(len(t) for t in tokens)
    pictured = n_ckpt * n_ex * n_layers * n_heads * longest ** 2 > VALUE_CELLS
    rows = []
    for c in range(n_ckpt):
        for e in range(n_ex):
            maps = np.full((n_layers, n_heads, longest, longest), np.nan)
            t = patterns[c][e].shape[-1]
            maps[:, :, :t, :t] = patterns[c][e]
            for lyr in range(n_layers):
                for h in range(n_heads):
                    cell = picture(maps[lyr, h], masked=GAP) if pictured else packed(maps[lyr, h])
                    rows.append({"checkpoint": c, "example": e, "layer": lyr, "head": h,
                                 ("img" if pictured else "v"): cell})
    keep = view_filter("checkpoint", "example", "layer", "head")
    labels = "extokens[example]"
    if pictured:
        heat = picture_layer(longest, longest, x_title="key (attended to)", y_title="query",
                             value_title="weight", before=[keep], x_labels=labels, y_labels=labels)
    else:
        heat = heat_layer(longest, longest, x_title="key (attended to)", y_title="query",
                          value_title="weight", before=[keep, *unpack(longest)],
                          x_labels=labels, y_labels=labels, cell=24)
    heat["title"] = {"text": {"expr": "'Layer ' + layer + ', head ' + head + ', after ' + "
                                      "steps[checkpoint] + ' steps'"}}
    said = [" ".join(t) for t in tokens]
    params = [slider("checkpoint", n_ckpt - 1, "checkpoint (0 = before training)", n_ckpt - 1),
              choice("example", range(n_ex), [f"{e + 1}: {s}" for e, s in enumerate(said)],
                     "held-out example"),
              *layer_head(n_layers, n_heads, layer, head),
              constant("steps", [int(s) for s in steps]),
              constant("extokens", [token_labels(t) for t in tokens])]
    return chart({"data": {"name": "maps"}, **heat}, params=params, datasets={"maps": rows},
                 marks=0 if pictured else longest ** 2,
                 description=f"One head's attention weights on a held-out example, queries as rows "
                            f"and keys as columns, at each of {n_ckpt} checkpoints of training; "
                            "sliders pick the checkpoint, the layer and the head, a select box "
                            "the example.", own_size=True)


def expert_load_chart(steps: Sequence[int], loads: Sequence[np.ndarray], *, layer: int = 0) -> dict:
    """loads[c]: checkpoint c's (layers, experts) share of held-out tokens whose first choice
    was each expert; the layer slider under the chart picks the layer."""
    load = np.stack(loads)  # (checkpoints, layers, experts)
    n_layers, n_experts = load.shape[1:]
    rows = [{"step": int(s), "layer": lyr, "expert": f"expert {e}",
             "share": round(float(load[c, lyr, e]), 4)}
            for c, s in enumerate(steps) for lyr in range(n_layers) for e in range(n_experts)]
    lines = view({"type": "line", "point": True}, x=q("step", "step"),
                 y=q("share", "share of tokens", axis={"format": "%"}),
                 color=colour("expert", [f"expert {e}" for e in range(n_experts)], title=None),
                 transform=[view_filter("layer")], tooltip=tip("expert", "step", "share:.1%"))
    lines["title"] = {"text": {"expr": "'Each expert\\'s share of held-out tokens, layer ' + layer"}}
    return chart({**lines, "width": 420, "height": 200},
                 params=[slider("layer", n_layers - 1, "Layer", layer)],
                 datasets={"rows": rows}, marks=len(rows),
                 description=f"Each of {n_experts} experts' share of the held-out tokens that chose "
                            f"it first, against training steps; the layer slider picks one of "
                            f"{n_layers} layers.", own_size=True)


TINY = 1e-12  # a gradient norm of 0 (nothing reached the layer) is drawn here on the log scale


def grad_norms_chart(labels: Sequence[str], steps: Sequence[Sequence[int]],
                     norms: Sequence[Sequence[np.ndarray]]) -> dict:
    """Each run's gradient norm per layer on a log scale, one line per run, at one checkpoint:
    ``norms[r][c]`` is run r's (layers,) norms at its checkpoint c (step ``steps[r][c]``). The
    slider under the chart picks the checkpoint (the last one first; the title gives the step of
    the run with the most checkpoints); a run with fewer checkpoints shows its last. Only
    checkpoints after a step belong in ``norms`` (before the first, nothing has a gradient)."""
    rows = [{"run": name, "checkpoint": c, "last": len(run_norms) - 1, "step": int(step), "layer": layer,
             "norm": float(f"{max(float(v), TINY):.4g}")}
            for name, run_steps, run_norms in zip(labels, steps, norms)
            for c, (step, layer_norms) in enumerate(zip(run_steps, run_norms))
            for layer, v in enumerate(layer_norms)]
    n_ckpt = max(len(r) for r in norms)
    longest = max(range(len(norms)), key=lambda r: len(norms[r]))
    run = colour("run", labels, title=None,
                 legend={"orient": "bottom", "direction": "vertical", "labelLimit": 600})
    lines = view({"type": "line", "point": True},
                 x=o("layer", "layer (0: nearest the input)", axis={"labelAngle": 0}),
                 y=q("norm", "gradient norm (log scale)", scale={"type": "log"}), color=run,
                 transform=[{"filter": "datum.checkpoint == min(checkpoint, datum.last)"}],
                 tooltip=tip("run", "layer", "step", "norm:.3g"))
    lines["title"] = {"text": {"expr": "'Gradient norm per layer, after ' + steps[checkpoint] + ' steps'"},
                      "subtitle": "each layer's ‖∂loss/∂weights‖, the mean over the steps before it"}
    return chart({**lines, "width": 420, "height": 240},
                 params=[slider("checkpoint", n_ckpt - 1, "checkpoint", n_ckpt - 1),
                        constant("steps", [int(x) for x in steps[longest]])],
                 datasets={"rows": rows}, marks=len(rows),
                 description=f"The gradient norm of each layer's weights, on a log scale, for "
                            f"{len(labels)} run{'s' if len(labels) != 1 else ''} ({'; '.join(labels)}), "
                            f"at one of {n_ckpt} checkpoints of training, which the slider picks.",
                            own_size=True)
