"""Figure for lesson 12: the parameter count by part. (The steps themselves are one instant
chart, ``tfviz.viz.instant_forward``.)"""
from __future__ import annotations

from collections.abc import Mapping

from tfviz.viz.kit.charts import chart, n, q, tip, view
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE


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
