"""Lesson 15's measured fine-tune (altair): numbers trained, on a log scale, against held-out
accuracy, one point per way of fine-tuning, with chance as a dashed line.

A pure function of the measured numbers; drawn through ``tfviz.ui.widgets.vega``.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas  # noqa: F401  (before altair: see tfviz.ui.warmup)
import altair as alt

from tfviz.viz.style import CATEGORICAL


def params_accuracy_chart(modes: Sequence[str], trained: Sequence[int], accuracy: Sequence[float],
                          chance: float = 0.5) -> alt.LayerChart:
    """One labelled point per mode at (numbers trained, held-out accuracy)."""
    rows = [{"way": m, "trained": int(n), "accuracy": round(float(a), 4),
             "label": f"{m}: {a:.0%}"} for m, n, a in zip(modes, trained, accuracy)]
    colour = alt.Color("way:N", legend=None,
                       scale=alt.Scale(domain=list(modes), range=CATEGORICAL[:max(1, len(modes))]))
    x = alt.X("trained:Q", title="numbers trained (log scale)",
              scale=alt.Scale(type="log", domain=[10, 10 ** 6]), axis=alt.Axis(format="~s"))
    y = alt.Y("accuracy:Q", title="held-out accuracy", scale=alt.Scale(domain=[0, 1]),
              axis=alt.Axis(format="%"))
    base = alt.Chart(alt.Data(values=rows))
    points = base.mark_point(size=160, filled=True).encode(
        x=x, y=y, color=colour,
        tooltip=["way:N", alt.Tooltip("trained:Q", title="numbers trained", format=","),
                 alt.Tooltip("accuracy:Q", title="held-out accuracy", format=".1%")])
    labels = base.mark_text(align="left", dx=10, dy=-10, fontSize=13).encode(
        x=x, y=y, text="label:N", color=colour)
    rule = alt.Chart(alt.Data(values=[{"chance": chance}])).mark_rule(strokeDash=[4, 4], color="#666").encode(
        y="chance:Q", tooltip=[alt.Tooltip("chance:Q", title="chance", format=".0%")])
    said = "; ".join(f"{r['way']}: {r['trained']:,} numbers, {r['accuracy']:.1%}" for r in rows)
    return alt.layer(rule, points, labels).properties(
        width=460, height=260,
        title=alt.TitleParams("Numbers trained against held-out accuracy (dashed: chance)", anchor="start"),
        description=f"Each way of fine-tuning as a point, numbers trained on a log scale against "
                    f"held-out accuracy: {said}.")
