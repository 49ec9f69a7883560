"""Charts for lesson 15: masking drawn many times, and what fine-tuning trains.

Both are what-if results (the number of draws, the rank, the prefix length are Streamlit
widgets), so they are plain Vega-Lite dicts (``tfviz.viz.kit.charts``) drawn through
``tfviz.ui.drawing.vega``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.pretraining import SHARES
from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE

POINTS = 400  # draws kept per line: on a log axis more of them would fall on the same pixels


def kept_draws(count: int, points: int = POINTS) -> np.ndarray:
    """The draw numbers (1-based) a line of ``count`` draws is drawn through: every draw up to
    ``points``, else about ``points`` of them spread evenly on a log scale, always with the
    first and the last.

    >>> kept_draws(5).tolist()
    [1, 2, 3, 4, 5]
    >>> d = kept_draws(20000); int(d[0]), int(d[-1]), len(d) <= 400
    (1, 20000, True)
    """
    if count <= points:
        return np.arange(1, count + 1)
    return np.unique(np.round(np.geomspace(1, count, points)).astype(int))


def share_label(j: int, name: str) -> str:
    """How the legend names share ``j``: the chosen share is of all positions, the rest of the
    chosen ones."""
    return "chosen (of all positions)" if j == 0 else f"{name} (of the chosen)"


def masking_shares_figure(shares: np.ndarray, targets: Sequence[float]) -> dict:
    """Lines: each running share of ``tfviz.analysis.pretraining.running_shares`` (draws, 4)
    against the number of draws (log scale, ``kept_draws``), with its target as a dotted line
    of the same colour."""
    shares = np.asarray(shares, dtype=float)
    labels = [share_label(j, name) for j, name in enumerate(SHARES)]
    kept = kept_draws(len(shares))
    rows = [{"draws": int(d), "share": labels[j], "value": float(shares[d - 1, j])}
            for j in range(len(labels)) for d in kept]
    # The legend beside the lines: under them it would take its room from the plot's height.
    hue = colour("share", labels, CATEGORICAL[:len(labels)], title=None, legend={"labelLimit": 400})
    lines = view({"type": "line", "strokeWidth": 3},
                 x=q("draws", "draws so far", scale={"type": "log", "nice": False}),
                 y=q("value", "share", scale={"domain": [0, 1]}), color=hue,
                 tooltip=tip("share", {"field": "draws", "title": "after draws"}, "value:.4f"))
    goals = view({"type": "rule", "strokeDash": [2, 3], "strokeWidth": 2}, data="targets",
                 y=q("target"), color=hue,
                 tooltip=tip("share", "target:.2f"))
    return chart({"layer": [lines, goals]}, title="Shares over many draws (dotted: the target)",
                 rows=rows, datasets={"targets": [{"share": label, "target": float(t)}
                                                  for label, t in zip(labels, targets)]},
                 height=360,
                 description=f"The running share of each masking outcome over {len(shares):,} "
                             "draws (log scale), each with its target as a dotted line: "
                             + "; ".join(f"{label} {float(t):g}" for label, t in zip(labels, targets))
                             + ".")


def trainable_figure(names: Sequence[str], counts: Sequence[int], *, title: str) -> dict:
    """Horizontal bars on a log scale: how many numbers each way of fine-tuning trains."""
    names = [str(x) for x in names]
    rows = [{"way": name, "numbers": int(c), "label": f"{int(c):,}"} for name, c in zip(names, counts)]
    y = n("way", sort=names, axis={"labelLimit": 400, "title": None})
    # not stacked: a stack starts at 0, which a log axis cannot show; each bar starts at the axis
    x = q("numbers", "trained numbers (log scale)", scale={"type": "log"}, stack=None)
    bars = view("bar", y=y, x=x,
                color=colour("way", names, [CATEGORICAL[j % len(CATEGORICAL)] for j in range(len(names))],
                             legend=None),
                tooltip=tip("way", "numbers:,"))
    text = view({"type": "text", "align": "left", "dx": 6, "fontSize": FONT_SIZE - 2},
                y=y, x=q("numbers"), text=n("label"))
    return chart({"layer": [bars, text]}, title=title, rows=rows, height={"step": 44},
                 padding={"right": 90},  # room for the largest count written past its bar
                 description="How many numbers each way of fine-tuning trains (log scale): "
                             + "; ".join(f"{r['way']} {r['label']}" for r in rows) + ".")
