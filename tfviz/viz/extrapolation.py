"""Lesson 3's shifted-reading chart (tfviz.experiments.extrapolation): loss against the position a
sentence starts at, one line per position scheme."""
from __future__ import annotations

from collections.abc import Mapping

from tfviz.experiments.extrapolation import Shifted
from tfviz.viz.kit.charts import chart, colour, q, tip, view


def shifted_chart(runs: Mapping[str, Shifted], trained: int | None) -> dict:
    """``runs``: {line name: Shifted}; ``trained``: the longest training row (positions
    0..trained-1 were used), drawn as the offset from which a longest row leaves them."""
    names = list(runs)
    rows = [{"model": name, "starts at": k, "loss": round(loss, 4)}
            for name, run in runs.items() for k, loss in zip(run.offsets, run.losses)]
    x = q("starts at", "position the sentence starts at (k)", scale={"type": "symlog"},
          axis={"values": sorted({k for run in runs.values() for k in run.offsets}), "format": "d"})
    lines = view({"type": "line", "point": True}, x=x, y=q("loss", "held-out loss (nats)"),
                 color=colour("model", names, title=None, legend={"orient": "bottom", "columns": 3,
                                                                  "labelLimit": 260}),
                 tooltip=tip("model", "starts at", "loss:.4f"))
    return chart({"layer": [lines]}, rows=rows, height=360,  # title and axes included
                 title={"text": "The same sentences, read further along",
                        "subtitle": "k padding tokens first, hidden from every query"
                                    + (f"; training rows were at most {trained} tokens" if trained else "")},
                 description="Held-out loss of each position scheme's model when its sentences start "
                             "at position k instead of 0: " + "; ".join(
                                 f"{name} from {run.losses[0]:.3f} at 0 to {run.losses[-1]:.3f} at "
                                 f"{run.offsets[-1]}" for name, run in runs.items()) + ".")
