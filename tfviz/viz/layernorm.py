"""Charts for lesson 9: the learned γ and β of every LayerNorm, and the residual stream's size.
Plain Vega-Lite dicts: the heatmap is ``instant_matrix.matrix_chart``'s, the lines ``tfviz.viz.kit.charts``'.
(Each token's μ and σ are an instant view: ``tfviz.viz.instant_block``.)"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tfviz.viz.kit.charts import chart, colour, n, q, tip, view
from tfviz.viz.kit.instant_matrix import matrix_chart


def gamma_beta_heatmap(params: Mapping[str, tuple[np.ndarray, np.ndarray | None]], *, which: str,
                       norm_name: str = "LayerNorm") -> dict:
    """Rows = the model's norms ("L0 ln1", ...), columns = dimensions; which is "gamma" or "beta".
    γ is drawn on cividis from its smallest to its largest value, β (around 0) in red and blue.
    ``norm_name``: "RMSNorm" for a model whose norms have γ only (ask for "gamma" then)."""
    index = 0 if which == "gamma" else 1
    names = list(params)
    values = np.stack([params[name][index] for name in names]).astype(float)  # (norms, d)
    symbol = "γ (gain)" if index == 0 else "β (shift)"
    domain = None if index else (float(values.min()), float(values.max()))
    return matrix_chart(values, title=f"Learned {symbol} of every {norm_name}", x_title="dimension",
                        y_title="norm", y_labels=names, value_title=symbol.split()[0],
                        diverging=index == 1, domain=domain, width=760,
                        height=max(120, 26 * len(names)),
                        description=f"The learned {symbol} of each of the model's {len(names)} "
                                    f"{norm_name}s (rows), dimension by dimension (columns).")


def residual_norm_chart(series: Mapping[str, Sequence[tuple[str, float]]], *, title: str) -> dict:
    """Mean L2 norm per token of the residual stream, stage by stage, one line per model."""
    rows = [{"stage": stage, "model": name, "mean L2 norm": float(value)}
            for name, points in series.items() for stage, value in points]
    stages = list(dict.fromkeys(r["stage"] for r in rows))
    names = list(series)
    # The legend sits beside the lines: under them it took the chart's fixed height from the
    # plot itself, which was drawn flat.
    line = view({"type": "line", "point": True},
                x=n("stage", "point in the stack", sort=stages, axis={"labelAngle": 0}),
                y=q("mean L2 norm", "mean ‖x‖ over tokens"),
                color=colour("model", names, sort=names),
                tooltip=tip("model", "stage", "mean L2 norm:.3f"))
    return chart(line, title=title, rows=rows, height=320,
                 description="The mean length of the tokens' vectors in the residual stream after "
                             "each sublayer, one line per model: " + "; ".join(names) + ".")
