"""Reading a chart built by ``tfviz.viz.kit.charts.chart`` back in tests."""
from __future__ import annotations

from tfviz.viz.kit.charts import ROWS


def rows_of(spec: dict, name: str = ROWS) -> list[dict]:
    """The rows a chart carries in its dataset ``name`` (what its views draw)."""
    return list(spec["datasets"][name])
