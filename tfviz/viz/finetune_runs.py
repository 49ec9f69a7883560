"""Lesson 15's measured fine-tune: numbers trained, on a log scale, against held-out accuracy,
one point per way of fine-tuning, with chance as a dashed line; and each way's held-out accuracy
against the steps trained, so that a pretrained model and the same one from random weights can
be compared step by step.

Pure functions of the measured numbers; drawn through ``tfviz.ui.drawing.vega``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from tfviz.viz.kit.charts import chart, colour, n, q, tip, view

DECADES = [10 ** k for k in range(1, 7)]  # one grid line per power of ten, 10 to 1M


CLOSE_Y = 0.12  # points closer than this in accuracy ...
CLOSE_X = 0.35  # ... and than this in decades of numbers trained would have their words overlap


def _places(trained: Sequence[int], accuracy: Sequence[float]) -> list[str]:
    """Where each point's words go: "split", the way above its point and the accuracy below;
    for two points close together, "over" (both above) for the higher and "under" (both below)
    for the lower; and "right" of its point for a point at the very x of an earlier one and
    nearly its height (full fine-tuning and the same from scratch train the same numbers).

    >>> _places([130, 2178, 2690, 138498, 138498], [0.55, 0.89, 0.83, 1.0, 0.95])
    ['split', 'over', 'under', 'split', 'right']
    """
    out = ["split"] * len(trained)
    for i in range(len(trained)):
        for j in range(i):
            if abs(accuracy[j] - accuracy[i]) >= CLOSE_Y or out[j] == "right":
                continue
            if trained[j] == trained[i]:
                out[i] = "right"
            elif abs(math.log10(trained[i] / trained[j])) < CLOSE_X:
                high, low = (i, j) if accuracy[i] >= accuracy[j] else (j, i)
                out[high], out[low] = "over", "under"
    return out


def params_accuracy_chart(modes: Sequence[str], trained: Sequence[int], accuracy: Sequence[float],
                          chance: float = 0.5) -> dict:
    """One labelled point per mode at (numbers trained, held-out accuracy)."""
    rows = [{"way": m, "trained": int(t), "accuracy": round(float(a), 4), "shown": f"{a:.0%}", "place": p}
            for m, t, a, p in zip(modes, trained, accuracy, _places(trained, accuracy))]
    way = colour("way", modes, legend=None)
    x = q("trained", "numbers trained (log scale)",
          scale={"type": "log", "domain": [DECADES[0], DECADES[-1]]},
          axis={"format": "~s", "values": DECADES})
    y = q("accuracy", "held-out accuracy", scale={"domain": [0, 1]},
          axis={"format": "%", "values": [0, 0.25, 0.5, 0.75, 1]})
    rule = view({"type": "rule", "strokeDash": [4, 4], "color": "#666"}, data="chance",
                y=q("chance"), tooltip=tip({"field": "chance", "title": "chance", "format": ".0%"}))
    points = view({"type": "point", "size": 160, "filled": True}, x=x, y=y, color=way,
                  tooltip=tip("way", {"field": "trained", "title": "numbers trained", "format": ","},
                              {"field": "accuracy", "title": "held-out accuracy", "format": ".1%"}))
    # short labels, centred on their point (the way above, the accuracy below), so that a
    # phone-wide chart still holds them; two points close together are named one above and one
    # below, and a point on top of another on its right (``_places``)
    def words(place: str, text: str, **mark) -> dict:
        return view({"type": "text", "fontSize": 13, **mark}, x=x, y=y, color=way,
                    text=n("words"),
                    transform=[{"filter": f"datum.place === '{place}'"},
                               {"calculate": text, "as": "words"}])

    both = "datum.way + ' ' + datum.shown"
    labels = [words("split", "datum.way", dy=-16), words("split", "datum.shown", dy=18),
              words("over", both, dy=-16), words("under", both, dy=18),
              words("right", both, dx=12, align="left")]
    said = "; ".join(f"{r['way']}: {r['trained']:,} numbers, {r['accuracy']:.1%}" for r in rows)
    return chart({"layer": [rule, points, *labels]}, rows=rows,
                 datasets={"chance": [{"chance": chance}]},
                 height=320,  # the whole chart, title and axes included (Streamlit fits it to the page)
                 title={"text": "Numbers trained vs held-out accuracy", "anchor": "start",
                        "subtitle": "dashed: chance"},
                 description=f"Each way of fine-tuning as a point, numbers trained on a log scale "
                             f"against held-out accuracy: {said}.")


def accuracy_curves_chart(modes: Sequence[str], curves: Sequence[Sequence[tuple[int, float]]],
                          chance: float = 0.5) -> dict:
    """Each mode's held-out accuracy at every check, against the steps trained, one line per
    mode; chance as a dashed line. ``curves[i]``: mode i's (step, accuracy) pairs."""
    rows = [{"way": m, "step": int(step), "accuracy": round(float(acc), 4)}
            for m, curve in zip(modes, curves) for step, acc in curve]
    way = colour("way", modes, title=None, legend={"orient": "bottom", "direction": "horizontal",
                                                   "columns": 3, "labelLimit": 300})
    lines = view({"type": "line", "point": True}, x=q("step", "steps trained"), color=way,
                 y=q("accuracy", "held-out accuracy", scale={"domain": [0, 1]},
                     axis={"format": "%", "values": [0, 0.25, 0.5, 0.75, 1]}),
                 tooltip=tip("way", "step", {"field": "accuracy", "title": "held-out accuracy",
                                             "format": ".1%"}))
    rule = view({"type": "rule", "strokeDash": [4, 4], "color": "#666"}, data="chance",
                y=q("chance"), tooltip=tip({"field": "chance", "title": "chance", "format": ".0%"}))
    ends = "; ".join(f"{m}: {curve[-1][1]:.1%} after {curve[-1][0]} steps" for m, curve in zip(modes, curves)
                     if curve)
    return chart({"layer": [rule, lines]}, rows=rows, datasets={"chance": [{"chance": chance}]},
                 height=320,
                 title={"text": "Held-out accuracy while training", "anchor": "start",
                        "subtitle": "dashed: chance"},
                 description=f"Held-out accuracy of each way of fine-tuning against the steps trained, "
                             f"checked {len(curves[0]) if curves else 0} times: {ends}.")
