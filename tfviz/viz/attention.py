"""Figures for the attention lessons: score steps, maps side by side, heads, coreference, masks.

Every builder takes numpy arrays and raw token strings and returns a plotly Figure with a
title, axis titles and the tokens as tick labels ("3 cat", escaped for plotly's label markup
by ``token_labels(..., escape=True)``). Values are exact on hover. Arguments named ``query``
or ``probe`` are labels that are already escaped (an entry of such a list).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import altair as alt
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tfviz.analysis.attention import QueryWalkthrough
from tfviz.viz.heatmap import heatmap
from tfviz.viz.style import (CATEGORICAL, FONT_SIZE, PLAIN_TEMPLATE, SEQUENTIAL, fixed_margins,
                             label_margin, layout, readable, safe_label, token_labels)

MASKED_GREY = "#d9d9d9"


def score_steps_figure(walk: QueryWalkthrough) -> go.Figure:
    """Four stacked bar charts over the keys: q·k, ÷√d_k, masked, softmax weight."""
    keys = token_labels(walk.tokens, escape=True)
    rows = [("q · k", walk.raw), (f"÷ {walk.divisor:.3g}", walk.scaled),
            ("masked", np.where(walk.allowed, walk.masked, 0.0)), ("softmax α", walk.weights)]
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=[name for name, _ in rows])
    for r, (name, values) in enumerate(rows, start=1):
        colours = [CATEGORICAL[0] if ok else MASKED_GREY for ok in walk.allowed]
        shown = [f"{v:.4f}" if ok or r != 3 else "−∞" for v, ok in zip(values, walk.allowed)]
        fig.add_trace(go.Bar(x=list(range(len(keys))), y=values, marker_color=colours, name=name,
                             customdata=np.array([keys, shown], dtype=object).T, showlegend=False,
                             text=["−∞" if r == 3 and not ok else "" for ok in walk.allowed],
                             textposition="outside", cliponaxis=False,
                             hovertemplate="key %{customdata[0]}<br>" + name
                             + ": %{customdata[1]}<extra></extra>"), row=r, col=1)
    fig.update_xaxes(tickvals=list(range(len(keys))), ticktext=keys, row=4, col=1,
                     title="key token")
    query = token_labels(walk.tokens, escape=True)[walk.query_pos]
    layout(fig, f"Scores of query {query} with every key (layer {walk.layer}, head {walk.head})",
           640, plot_bgcolor="white")
    return fixed_margins(fig)


def weighted_sum_figure(walk: QueryWalkthrough, keep: Sequence[int] | None = None) -> go.Figure:
    """Rows α_j v_j for the keys in ``keep`` (all by default), the rest summed, then z = Σ α_j v_j."""
    keep = list(range(walk.n_keys)) if keep is None else list(keep)
    labs = token_labels(walk.tokens, escape=True)
    rows = [walk.weighted_values[j] for j in keep]
    names = [f"{labs[j]}  α={walk.weights[j]:.3f}" for j in keep]
    rest = [j for j in range(walk.n_keys) if j not in set(keep)]
    if rest:
        rows.append(walk.weighted_values[rest].sum(axis=0))
        names.append(f"{len(rest)} other keys  α={walk.weights[rest].sum():.3f}")
    values = np.vstack(rows + [walk.z])  # (rows + 1, d_k)
    return heatmap(values, title="Weighted values α_j v_j and their sum z", diverging=True,
                   y_labels=names + ["z = Σ α_j v_j"], x_labels=[str(i) for i in range(walk.d_k)],
                   x_title="dimension of the head", y_title="key token", text=False)


def maps_side_by_side(patterns: Sequence[np.ndarray], token_lists: Sequence[Sequence[str]],
                      titles: Sequence[str], *, title: str) -> go.Figure:
    """Attention maps next to each other on one 0..1 colour scale (one token list per map)."""
    k = len(patterns)
    fig = make_subplots(rows=1, cols=k, subplot_titles=list(titles), horizontal_spacing=0.12)
    for c, (p, toks) in enumerate(zip(patterns, token_lists), start=1):
        labs = token_labels(toks, escape=True)
        n = len(labs)
        fig.add_trace(go.Heatmap(
            z=p, x=list(range(n)), y=list(range(n)), zmin=0, zmax=1, colorscale=SEQUENTIAL,
            showscale=c == k, customdata=np.dstack(np.meshgrid(labs, labs)).astype(object),
            hovertemplate="query %{customdata[1]}<br>key %{customdata[0]}<br>"
                          "weight %{z:.4f}<extra></extra>"), row=1, col=c)
        fig.update_xaxes(tickvals=list(range(n)), ticktext=labs, title="key", row=1, col=c)
        fig.update_yaxes(tickvals=list(range(n)), ticktext=labs, autorange="reversed",
                         title="query" if c == 1 else "", row=1, col=c)
    n_max = max(len(t) for t in token_lists)
    longest = [label for toks in token_lists for label in token_labels(toks, escape=True)]
    layout(fig, title, max(360, min(800, 120 + 22 * n_max)), plot_bgcolor="white")
    return fixed_margins(fig, left=label_margin(longest), bottom=label_margin(longest), top=80)


def head_grid(patterns: np.ndarray, tokens: Sequence[str], *, layer: int,
              names: Sequence[str] | None = None) -> go.Figure:
    """Every head of one layer as a small map (h, n, n), in a grid of up to 4 columns."""
    h = patterns.shape[0]
    cols = min(4, h)
    rows = math.ceil(h / cols)
    titles = [f"head {i}" + (f": {names[i]}" if names else "") for i in range(h)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles,
                        horizontal_spacing=0.04, vertical_spacing=0.08)
    labs = token_labels(tokens, escape=True)
    n = len(labs)
    for i in range(h):
        r, c = divmod(i, cols)
        fig.add_trace(go.Heatmap(
            z=patterns[i], zmin=0, zmax=1, colorscale=SEQUENTIAL, showscale=i == 0,
            customdata=np.dstack(np.meshgrid(labs, labs)).astype(object),
            hovertemplate=f"head {i}<br>query %{{customdata[1]}}<br>key %{{customdata[0]}}"
                          "<br>weight %{z:.4f}<extra></extra>"), row=r + 1, col=c + 1)
        fig.update_yaxes(autorange="reversed", showticklabels=False, row=r + 1, col=c + 1)
        fig.update_xaxes(showticklabels=False, row=r + 1, col=c + 1)
    fig.update_xaxes(title="key")
    fig.update_yaxes(title="query", col=1)
    layout(fig, f"All {h} heads of layer {layer} (rows: queries, columns: keys, n = {n})",
           60 + 260 * rows, plot_bgcolor="white", template=PLAIN_TEMPLATE)
    return fixed_margins(fig, left=50, bottom=50, top=80)


def head_contribution_bars(contrib: np.ndarray, *, query: str, highlight: int | None = None) -> alt.Chart:
    """Bars: length ‖z_h W^O_h‖ of each head's share of one token's attention output (h, d).

    ``query`` is shown exactly as given (altair does not read markup)."""
    sizes = np.linalg.norm(contrib, axis=1)
    df = pd.DataFrame({"head": [f"head {i}" for i in range(len(sizes))], "length": sizes,
                       "chosen": ["chosen head" if i == highlight else "other heads"
                                  for i in range(len(sizes))]})
    base = alt.Chart(df).encode(
        x=alt.X("head:N", sort=list(df["head"]), title="head", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("length:Q", title="length of z_h · W^O_h"),
        tooltip=["head", alt.Tooltip("length:Q", format=".4f")],
    )
    bars = base.mark_bar().encode(color=alt.Color(
        "chosen:N", title=None, legend=alt.Legend(orient="top"),
        scale=alt.Scale(domain=["other heads", "chosen head"], range=[CATEGORICAL[0], CATEGORICAL[5]])))
    values = base.mark_text(dy=-10, fontSize=FONT_SIZE - 2).encode(text=alt.Text("length:Q", format=".3f"))
    title = f"How much each head adds to the output for {query}"
    return readable((bars + values).properties(title=title, height=320))


def coref_figure(weights: np.ndarray, nouns: Sequence[str], *, best: tuple[int, int],
                 probe: str) -> go.Figure:
    """Grouped bars: for each (layer, head) the probe's weight on each noun; (L, H, 2)."""
    L, H, P = weights.shape
    xs = [f"L{layer} H{head}" for layer in range(L) for head in range(H)]
    fig = go.Figure()
    for p in range(P):
        fig.add_trace(go.Bar(x=xs, y=weights[:, :, p].ravel(), name=safe_label(nouns[p]),
                             marker_color=CATEGORICAL[p % len(CATEGORICAL)],
                             hovertemplate="%{x}<br>" + safe_label(nouns[p]) + ": %{y:.4f}<extra></extra>"))
    fig.add_annotation(x=f"L{best[0]} H{best[1]}", y=float(weights[best].max()), text="biggest gap",
                       showarrow=True, arrowhead=2, ay=-40)
    fig.update_layout(barmode="group", legend={"title": "attends to"})
    fig.update_xaxes(title="layer and head")
    fig.update_yaxes(title="attention weight", range=[0, max(0.05, float(weights.max()) * 1.25)])
    layout(fig, f"How much {probe} attends to each noun, head by head", 420,
           plot_bgcolor="white")
    return fixed_margins(fig, left=label_margin(["0.00"]), bottom=label_margin(xs))


def masked_scores_figure(masked: np.ndarray, tokens: Sequence[str], *, title: str) -> go.Figure:
    """Scores after the mask (n, n): masked cells are grey and read "−∞"."""
    labs = token_labels(tokens, escape=True)
    fig = heatmap(masked, title=title, x_labels=labs, y_labels=labs,
                  x_title="key", y_title="query", diverging=True, text=len(labs) <= 16)
    hidden = np.where(np.isneginf(masked), 1.0, np.nan)
    fig.add_trace(go.Heatmap(z=hidden, x=list(range(len(labs))), y=list(range(len(labs))),
                             colorscale=[[0, MASKED_GREY], [1, MASKED_GREY]], showscale=False,
                             text=np.where(np.isneginf(masked), "−∞", ""),
                             texttemplate="%{text}" if len(labs) <= 20 else None,
                             hovertemplate="masked (−∞)<extra></extra>"))
    return fig


def logit_change_figure(change: np.ndarray, tokens: Sequence[str], position: int) -> go.Figure:
    """Bars: the largest logit change at each position after replacing the token at ``position``."""
    labs = token_labels(tokens, escape=True)
    colours = [CATEGORICAL[2] if i < position else CATEGORICAL[5] if i == position else CATEGORICAL[0]
               for i in range(len(labs))]
    fig = go.Figure(go.Bar(x=list(range(len(labs))), y=change, marker_color=colours,
                           customdata=np.array(labs, dtype=object), cliponaxis=False,
                           text=[("0" if v == 0 else f"{v:.2g}") if i < position else ""
                                 for i, v in enumerate(change)],
                           textposition="outside", textfont={"color": CATEGORICAL[2]},
                           hovertemplate="%{customdata}<br>max |Δ logit| = %{y:.3g}<extra></extra>"))
    fig.update_xaxes(tickvals=list(range(len(labs))), ticktext=labs, title="position")
    fig.update_yaxes(title="largest change of a logit")
    # two lines: on one, the title runs past a projector's screen in presenter view
    layout(fig, f"Logit change at every position after editing position {position}<br>"
                "(green: earlier positions, labelled with their change)", 420, plot_bgcolor="white")
    return fixed_margins(fig, top=80)
