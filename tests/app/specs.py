"""Reading what a page sent to the browser back out of AppTest's protos."""
from __future__ import annotations

import json

import numpy as np


def instant_charts(at) -> list[tuple[dict, dict]]:
    """Every Vega-Lite chart on the page as (spec, {dataset name: DataFrame}): Streamlit moves
    a spec's named datasets out of it and sends them as Arrow tables."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    charts = []
    for c in at.get("vega_lite_chart"):
        data = {d.name: convert_arrow_bytes_to_pandas_df(d.data.data) for d in c.proto.datasets}
        charts.append((json.loads(c.proto.spec), data))
    return charts


def param_values(spec: dict) -> dict:
    """The starting value of each parameter of a chart (the view it opens on)."""
    return {p["name"]: p.get("value") for p in spec.get("params", [])}


def unpacked(packed: str) -> np.ndarray:
    """A matrix row of ``tfviz.viz.instant.stack_rows`` as numbers (empty = masked = nan)."""
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def shown_arrays(at) -> list[tuple[np.ndarray, float]]:
    """Every matrix a page sent, flat, with the tolerance it was sent at: the packed rows of
    its Vega-Lite charts (DIGITS = 4 decimals, so within 5e-5 plus float rounding)."""
    from tfviz.viz.instant import DIGITS

    found = []
    for _, data in instant_charts(at):
        for table in data.values():
            if "v" in table and len(table) and isinstance(table["v"].iloc[0], str):
                found += [(unpacked(v), 0.5 * 10 ** -DIGITS + 1e-6) for v in table["v"]]
    return found
