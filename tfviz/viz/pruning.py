"""Lesson 7's pruning chart: the loss as heads are removed one by one (tfviz.experiments.pruning)."""
from __future__ import annotations

from tfviz.experiments.pruning import Pruning
from tfviz.viz.kit.charts import chart, q, tip, view
from tfviz.viz.kit.style import CATEGORICAL


def pruning_chart(result: Pruning, model: str) -> dict:
    """Loss against heads kept (all of them on the left), with the whole model's loss dashed."""
    total = len(result.order)
    rows = [{"kept": kept, "loss": round(loss, 4),
             "removed last": "none" if k == 0 else f"layer {result.order[k - 1][0]}, head {result.order[k - 1][1]}"}
            for k, (kept, loss) in enumerate(zip(result.kept, result.losses))]
    x = q("kept", "heads kept", scale={"domain": [total, 0]}, axis={"tickMinStep": 1, "format": "d"})
    line = view({"type": "line", "point": {"size": 60}, "color": CATEGORICAL[0]}, x=x,
                y=q("loss", "loss (nats)", scale={"zero": False}),
                tooltip=tip("kept", "loss:.4f", "removed last"))
    base = view({"type": "rule", "strokeDash": [4, 4], "color": "#555555"}, data="base",
                y=q("loss"), tooltip=tip({"field": "loss", "title": "whole model", "format": ".4f"}))
    return chart({"layer": [line, base]}, rows=rows, datasets={"base": [{"loss": round(result.base, 4)}]},
                 height=320,  # the whole chart, title and axes included (Streamlit fits its width)
                 title={"text": f"{model}: loss as heads are removed, least missed first",
                        "subtitle": "dashed: the whole model"},
                 description=f"The next-token loss of {model} with all {total} heads and after each "
                             f"further head is removed, from {result.base:.3f} to {result.losses[-1]:.3f}.")
