"""Every plain chart drawn through ``ui/widgets.vega`` has its numbers under it as a table
(``viz/chart_numbers.chart_tables``): an expander "The numbers as a table" holding a Markdown
table, which the browser draws as an HTML ``<table>``. Checked against independent numbers:
torch's own parameter count, and the chart's own rows."""
from __future__ import annotations

import tfviz
from tfviz.ui.state import DEFAULT_MODEL


def tables(at) -> list[list[list[str]]]:
    """Every Markdown table in the page's "The numbers as a table" expanders: rows of cells
    (the header first), unescaped."""
    out = []
    for exp in at.expander:
        if exp.label != "The numbers as a table":
            continue
        for md in exp.markdown:
            lines = [line for line in md.value.splitlines() if line.startswith("|")]
            if len(lines) < 2:
                continue
            rows = [[c.strip().replace("\\", "") for c in line.strip("|").split(" | ")]
                    for line in lines if not line.startswith("|---")]
            out.append(rows)
    return out


def test_the_parameter_chart_table_adds_up_to_torchs_count(app_page):
    at = app_page("12_forward.py")
    found = [t for t in tables(at) if t[0] == ["part", "parameters"]]
    assert len(found) == 1, [t[0] for t in tables(at)]
    parts = {row[0]: int(row[1]) for row in found[0][1:]}
    model = tfviz.load(DEFAULT_MODEL).model
    assert sum(parts.values()) == sum(p.numel() for p in model.parameters())
    assert parts["embeddings"] == model.embed.weight.numel() and parts["positions"] == 0  # sine


def test_no_table_in_presenter_view(app_page):
    at = app_page("12_forward.py", present="1")
    assert not tables(at)


def test_an_instant_view_has_no_generic_table():
    """A chart whose numbers depend on the view chosen in the browser gives no table here: the
    page builds that one from the trace (tests/app/test_chart_numbers_pages.py)."""
    from tfviz.viz.chart_numbers import chart_tables

    spec = {"params": [{"name": "layer", "value": 0, "bind": {"input": "range"}}],
            "data": {"values": [{"layer": 0, "w": 0.5}]}, "mark": "rect",
            "encoding": {"x": {"field": "w"}}}
    assert chart_tables(spec) == []
    assert chart_tables({**spec, "params": []})[0].rows == ((0.5,),)
