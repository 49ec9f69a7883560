"""The training lab's charts (altair): loss and held-out accuracy curves of up to four runs,
attention maps with a slider over training time, and each expert's load over training.

Pure functions of numbers and strings. The attention chart carries every checkpoint at once and
filters it in the browser, so moving its slider costs no rerun (see README, "Instant views").
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas  # noqa: F401  (before altair: see tfviz.ui.warmup)
import altair as alt
import numpy as np

from tfviz.viz.style import CATEGORICAL, token_labels

MAX_POINTS = 300  # loss points per run on the chart: longer runs are averaged in bins


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
                 chance: float | None = None) -> alt.HConcatChart:
    """Training loss (left) and held-out accuracy (right) against steps, one colour per run."""
    loss_rows, acc_rows = [], []
    for name, run_losses, steps, run_accs in zip(labels, losses, acc_steps, accs):
        xs, ys = binned(list(run_losses))
        loss_rows += [{"run": name, "step": x, "loss": round(y, 4)} for x, y in zip(xs, ys)]
        acc_rows += [{"run": name, "step": int(s), "accuracy": round(float(a), 4)}
                     for s, a in zip(steps, run_accs)]
    colour = alt.Color("run:N", title=None, scale=alt.Scale(domain=list(labels),
                                                              range=CATEGORICAL[:max(1, len(labels))]),
                       legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=600))
    loss = alt.Chart(alt.Data(values=loss_rows), title="training loss").mark_line().encode(
        x=alt.X("step:Q", title="step"), y=alt.Y("loss:Q", title="cross-entropy (nats)"),
        color=colour, tooltip=["run:N", "step:Q", "loss:Q"]).properties(width=330, height=220)
    acc = alt.Chart(alt.Data(values=acc_rows), title="held-out accuracy").mark_line(point=True).encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("accuracy:Q", title="share of held-out examples solved", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        color=colour, tooltip=["run:N", "step:Q", alt.Tooltip("accuracy:Q", format=".1%")])
    if chance is not None:
        rule = alt.Chart(alt.Data(values=[{"chance": chance}])).mark_rule(strokeDash=[4, 4], color="#888").encode(
            y="chance:Q", tooltip=[alt.Tooltip("chance:Q", title="chance", format=".1%")])
        acc = alt.layer(acc, rule)
    return alt.hconcat(loss, acc.properties(width=330, height=220)).properties(
        description=f"Training loss (left) and held-out accuracy (right) against steps, for "
                    f"{len(labels)} run{'s' if len(labels) != 1 else ''}: {'; '.join(labels)}.")


def attention_over_time(maps: np.ndarray, steps: Sequence[int], tokens: Sequence[str],
                        title: str) -> alt.Chart:
    """maps: (checkpoints, T, T) one head's weights at each checkpoint; a slider picks the
    checkpoint in the browser. Rows are queries, columns keys."""
    C, T, _ = maps.shape
    names = token_labels(tokens)
    rows = [{"c": c, "query": names[q], "key": names[k], "weight": round(float(maps[c, q, k]), 3)}
            for c in range(C) for q in range(T) for k in range(T)]
    pick = alt.param(name="checkpoint", value=C - 1,
                     bind=alt.binding_range(min=0, max=max(C - 1, 0), step=1,
                                            name="checkpoint (0 = before training) "))
    step_rows = [{"c": c, "step": int(s)} for c, s in enumerate(steps)]
    heat = alt.Chart(alt.Data(values=rows)).mark_rect().encode(
        x=alt.X("key:N", sort=names, title="key (attended to)"),
        y=alt.Y("query:N", sort=names, title="query"),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=["query:N", "key:N", "weight:Q"]).transform_filter("datum.c == checkpoint").properties(
        width=22 * T + 40, height=22 * T, title=title)
    label = alt.Chart(alt.Data(values=step_rows)).mark_text(align="left", fontSize=13).encode(
        text=alt.Text("label:N")).transform_filter("datum.c == checkpoint").transform_calculate(
        label="'after ' + datum.step + ' steps'").properties(width=22 * T + 40, height=18)
    return alt.vconcat(label, heat).add_params(pick).properties(
        description=f"{title}: one head's attention weights, queries as rows and keys as columns, "
                    f"at each of {C} checkpoints; the checkpoint slider picks one.")


def expert_load_chart(steps: Sequence[int], load: np.ndarray, title: str) -> alt.Chart:
    """load: (checkpoints, E) share of held-out tokens whose first choice was each expert."""
    rows = [{"step": int(s), "expert": f"expert {e}", "share": round(float(load[c, e]), 4)}
            for c, s in enumerate(steps) for e in range(load.shape[1])]
    return alt.Chart(alt.Data(values=rows), title=title).mark_line(point=True).encode(
        x=alt.X("step:Q"), y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="share of tokens"),
        color=alt.Color("expert:N", title=None),
        tooltip=["expert:N", "step:Q", alt.Tooltip("share:Q", format=".1%")]).properties(width=420, height=200)
