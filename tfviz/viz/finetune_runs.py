"""Lesson 15's measured fine-tune: numbers trained, on a log scale, against held-out accuracy,
one point per way of fine-tuning, with chance as a dashed line.

A pure function of the measured numbers; drawn through ``tfviz.ui.widgets.vega``.
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.viz.charts import chart, colour, n, q, tip, view

DECADES = [10 ** k for k in range(1, 7)]  # one grid line per power of ten, 10 to 1M


def params_accuracy_chart(modes: Sequence[str], trained: Sequence[int], accuracy: Sequence[float],
                          chance: float = 0.5) -> dict:
    """One labelled point per mode at (numbers trained, held-out accuracy)."""
    rows = [{"way": m, "trained": int(t), "accuracy": round(float(a), 4), "shown": f"{a:.0%}"}
            for m, t, a in zip(modes, trained, accuracy)]
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
    # phone-wide chart still holds them
    names = view({"type": "text", "dy": -16, "fontSize": 13}, x=x, y=y, text=n("way"), color=way)
    shown = view({"type": "text", "dy": 18, "fontSize": 13}, x=x, y=y, text=n("shown"), color=way)
    said = "; ".join(f"{r['way']}: {r['trained']:,} numbers, {r['accuracy']:.1%}" for r in rows)
    return chart({"layer": [rule, points, names, shown]}, rows=rows,
                 datasets={"chance": [{"chance": chance}]},
                 height=320,  # the whole chart, title and axes included (Streamlit fits it to the page)
                 title={"text": "Numbers trained vs held-out accuracy", "anchor": "start",
                        "subtitle": "dashed: chance"},
                 description=f"Each way of fine-tuning as a point, numbers trained on a log scale "
                             f"against held-out accuracy: {said}.")
