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
    rows = [{"way": m, "trained": int(n), "accuracy": round(float(a), 4), "shown": f"{a:.0%}"}
            for m, n, a in zip(modes, trained, accuracy)]
    colour = alt.Color("way:N", legend=None,
                       scale=alt.Scale(domain=list(modes), range=CATEGORICAL[:max(1, len(modes))]))
    decades = [10 ** k for k in range(1, 7)]  # one grid line per power of ten, 10 to 1M
    x = alt.X("trained:Q", title="numbers trained (log scale)",
              scale=alt.Scale(type="log", domain=[decades[0], decades[-1]]),
              axis=alt.Axis(format="~s", values=decades))
    y = alt.Y("accuracy:Q", title="held-out accuracy", scale=alt.Scale(domain=[0, 1]),
              axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]))
    base = alt.Chart(alt.Data(values=rows))
    points = base.mark_point(size=160, filled=True).encode(
        x=x, y=y, color=colour,
        tooltip=["way:N", alt.Tooltip("trained:Q", title="numbers trained", format=","),
                 alt.Tooltip("accuracy:Q", title="held-out accuracy", format=".1%")])
    # short labels, centred on their point (the way above, the accuracy below), so that a
    # phone-wide chart still holds them
    names = base.mark_text(dy=-16, fontSize=13).encode(x=x, y=y, text="way:N", color=colour)
    shown = base.mark_text(dy=18, fontSize=13).encode(x=x, y=y, text="shown:N", color=colour)
    rule = alt.Chart(alt.Data(values=[{"chance": chance}])).mark_rule(strokeDash=[4, 4], color="#666").encode(
        y="chance:Q", tooltip=[alt.Tooltip("chance:Q", title="chance", format=".0%")])
    said = "; ".join(f"{r['way']}: {r['trained']:,} numbers, {r['accuracy']:.1%}" for r in rows)
    return alt.layer(rule, points, names, shown).properties(
        height=320,  # the whole chart, title and axes included (Streamlit fits it to the page)
        title=alt.TitleParams("Numbers trained vs held-out accuracy", anchor="start",
                              subtitle="dashed: chance"),
        description=f"Each way of fine-tuning as a point, numbers trained on a log scale against "
                    f"held-out accuracy: {said}.")
