"""Figures for lesson 11: gates per token, load per expert, the class × expert table."""
from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import CATEGORICAL, readable, token_labels


def routing_heatmap(probs: np.ndarray, chosen: np.ndarray, dropped: np.ndarray,
                    tokens: Sequence[str], *, title: str) -> go.Figure:
    """Tokens × experts gate probabilities; a dot marks a chosen expert, a cross a dropped choice.

    Short texts also get the numbers written in the cells ("0.62 ✓", "0.41 ✗").
    """
    probs = np.asarray(probs, dtype=float)
    n_tokens, n_experts = probs.shape
    fig = heatmap(probs, title=title, x_labels=[f"expert {e}" for e in range(n_experts)],
                  y_labels=token_labels(tokens, escape=True), x_title="expert", y_title="token",
                  zmin=0.0, zmax=1.0, text=False, height=max(300, min(1400, 90 + 22 * n_tokens)))
    if n_tokens <= 40:
        marks = np.where(dropped, " ✗", np.where(chosen, " ✓", ""))
        fig.update_traces(text=np.char.add(np.char.mod("%.2f", probs), marks).tolist(),
                          texttemplate="%{text}")
    served = chosen & ~dropped
    for mask, name, symbol in ((served, "chosen", "circle"), (dropped, "dropped (expert full)", "x")):
        rows, cols = np.nonzero(mask)
        fig.add_trace(go.Scatter(x=cols + 0.38, y=rows, mode="markers", name=name, hoverinfo="skip",
                                 marker={"symbol": symbol, "size": 11, "color": CATEGORICAL[5],
                                         "line": {"width": 1.5, "color": "white"}}))
    # Above the map, on the right: the key is shown even when only one kind of mark is present
    # (plotly hides a legend with a single entry).
    fig.update_layout(showlegend=True, legend={"orientation": "h", "x": 1, "xanchor": "right",
                                               "y": 1.02, "yanchor": "bottom"})
    return fig


def load_chart(served: np.ndarray, dropped: np.ndarray, capacity: int | None, *,
               title: str) -> alt.Chart:
    """Stacked bars per expert: tokens served and choices dropped, with the capacity as a line."""
    rows = [{"expert": f"expert {e}", "tokens": int(n), "kind": kind}
            for kind, arr in (("served", served), ("dropped", dropped)) for e, n in enumerate(arr)]
    kinds = ["served", "dropped"]
    bars = alt.Chart(pd.DataFrame(rows)).mark_bar().encode(
        x=alt.X("expert:N", title="expert", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("tokens:Q", title="tokens", stack=True),
        color=alt.Color("kind:N", sort=kinds, scale=alt.Scale(domain=kinds, range=[CATEGORICAL[0], CATEGORICAL[5]]),
                        title=""),
        order=alt.Order("kind:N", sort="descending"),
        tooltip=["expert", "kind", "tokens"],
    )
    chart = bars
    if capacity is not None:
        rule = alt.Chart(pd.DataFrame({"capacity": [capacity]})).mark_rule(
            strokeDash=[6, 4], size=2, color="black").encode(y="capacity:Q", tooltip=["capacity"])
        chart = bars + rule
    return readable(chart.properties(title=title, height=300))


def class_expert_heatmap(classes: Sequence[str], experts: Sequence[int], shares: np.ndarray,
                         counts: np.ndarray, *, title: str) -> go.Figure:
    """Rows = token classes, columns = experts; colour = share of the class, text = count."""
    fig = heatmap(np.asarray(shares, dtype=float), title=title, x_labels=[f"expert {e}" for e in experts],
                  y_labels=list(classes), x_title="expert (first choice)", y_title="token class",
                  zmin=0.0, zmax=1.0, text=False)
    text = [[f"{s:.0%} ({c})" for s, c in zip(srow, crow)] for srow, crow in zip(shares, counts)]
    fig.update_traces(text=text, texttemplate="%{text}")
    return fig
