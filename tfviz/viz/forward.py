"""Figures for lesson 12: one forward step's numbers, and the parameter count by part."""
from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd
import plotly.graph_objects as go

from tfviz.analysis.forward import Step
from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import CATEGORICAL, FONT_SIZE, fixed_margins, layout, readable, safe_label


def step_figure(step: Step) -> go.Figure:
    """The step's values as a labelled heatmap, bars for a row of probabilities, or a table
    of tokens and their ids."""
    # Labels and titles hold tokens the learner typed; plotly reads a little HTML, so escape.
    title = safe_label(step.title)
    rows, cols = [safe_label(r) for r in step.rows], [safe_label(c) for c in step.cols]
    if step.kind == "table":
        positions, tokens = zip(*(c.split(" ", 1) for c in cols)) if cols else ((), ())
        fig = go.Figure(go.Table(
            header={"values": ["position", "token", "id"], "font": {"size": FONT_SIZE}, "align": "left"},
            cells={"values": [list(positions), list(tokens), [int(v) for v in step.values[0]]],
                   "font": {"size": FONT_SIZE}, "height": 30, "align": "left"}))
        fig.update_layout(title={"text": title}, height=min(600, 110 + 30 * len(cols)))
        return fixed_margins(fig, top=50)
    if step.kind == "bars":
        fig = go.Figure(go.Bar(x=cols, y=step.values[0].tolist(), marker_color=CATEGORICAL[0],
                               text=[f"{v:.3f}" for v in step.values[0]], textposition="outside",
                               hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
        layout(fig, title, 360)
        fig.update_xaxes(title=step.x_title)
        fig.update_yaxes(title=step.y_title, range=[0, 1.1 * max(1e-9, float(step.values.max()))])
        return fixed_margins(fig, top=50)
    probabilities = not step.diverging and step.values.min() >= 0 and step.values.max() <= 1
    return heatmap(step.values, title=title, x_labels=cols, y_labels=rows,
                   x_title=step.x_title, y_title=step.y_title,
                   diverging=step.diverging, zmin=0.0 if probabilities else None,
                   zmax=1.0 if probabilities else None)


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
