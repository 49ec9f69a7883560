"""Reading what a page sent to the browser back out of AppTest's protos."""
from __future__ import annotations

import html
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
    """A matrix row of ``tfviz.viz.kit.instant.stack_rows`` as numbers (empty = masked = nan)."""
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def shown_arrays(at) -> list[tuple[np.ndarray, float]]:
    """Every matrix a page sent, flat, with the tolerance it was sent at: the packed rows of
    its Vega-Lite charts (DIGITS = 4 decimals, so within 5e-5 plus float rounding)."""
    from tfviz.viz.kit.instant import DIGITS

    found = []
    for _, data in instant_charts(at):
        for table in data.values():
            if "v" in table and len(table) and isinstance(table["v"].iloc[0], str):
                found += [(unpacked(v), 0.5 * 10 ** -DIGITS + 1e-6) for v in table["v"]]
    return found


def assert_layernorm_stats_are_the_hooks(at, trace, layer: int) -> None:
    """Lesson 9's chart of ``layer``'s μ and σ (both LayerNorms, before normalising) holds the
    model's own recorded statistics (``hook_mean``, ``hook_scale``), to the 4 decimals the
    chart's data carries."""
    stats = next(data["stats"] for _, data in instant_charts(at) if "stats" in data)
    for norm_index, norm in ((0, "ln1"), (2, "ln2")):
        mine = stats[stats["norm"] == norm_index]
        for stat, hook in (("μ before", "hook_mean"), ("σ before", "hook_scale")):
            got = mine[mine["stat"] == stat].sort_values("q")["v"].to_numpy()
            np.testing.assert_allclose(got, trace[f"blocks.{layer}.{norm}.{hook}"], atol=6e-5)


def fits(at) -> list[dict]:
    """What the page's length markers tell the view script, in page order: each fitted
    slider's count, default and first value (``tfviz.ui.views.fit_marker``)."""
    bodies = [h.proto.body for h in at.get("html") if 'class="tfviz-length"' in h.proto.body]
    return [json.loads(html.unescape(b.split('data-fit="', 1)[1].split('"', 1)[0])) for b in bodies]


def static_rows(at, column: str) -> list[dict]:
    """The rows of the page's HTML table (``widgets.table(static=True)``, ``st.table``) that has
    ``column``, each cell as the learner reads it: the text with its markdown escapes removed."""
    import re

    frame = next(t.value for t in at.table if column in t.value.columns)
    return [{k: re.sub(r"\\(.)", r"\1", str(v)) for k, v in row.items()}
            for row in frame.to_dict("records")]
