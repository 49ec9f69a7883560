"""Figure for lesson 12: the parameter count by part. (The steps themselves are one instant
chart, ``tfviz.viz.instant_forward``.)"""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import altair as alt

from tfviz.viz.style import CATEGORICAL, FONT_SIZE, readable


def params_chart(groups: Mapping[str, int], *, title: str) -> alt.Chart:
    """Horizontal bars: parameters per part of the model, with the count written beside each."""
    names = list(groups)
    df = pd.DataFrame({"part": names, "parameters": [int(groups[n]) for n in names]})
    base = alt.Chart(df).encode(y=alt.Y("part:N", sort=names, title=""),
                                x=alt.X("parameters:Q", title="parameters"))
    bars = base.mark_bar(color=CATEGORICAL[0]).encode(tooltip=["part", alt.Tooltip("parameters:Q", format=",")])
    labels = base.mark_text(align="left", dx=4, fontSize=FONT_SIZE - 2).encode(
        text=alt.Text("parameters:Q", format=","))
    return readable((bars + labels).properties(title=title, height=40 * len(names) + 40))
