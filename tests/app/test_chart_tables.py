"""Every plain chart drawn through ``ui/widgets.vega`` has its numbers under it as a table
(``viz/chart_numbers.chart_tables``): an expander "The numbers as a table" holding an HTML
``<table>``. Checked against independent numbers:
torch's own parameter count, and the chart's own rows."""
from __future__ import annotations

import tfviz
from tests.support.html_tables import html_tables
from tfviz.ui.state import DEFAULT_MODEL


def tables(at) -> list[list[list[str]]]:
    """Every HTML table in the page's "The numbers as a table" expanders: rows of cells (the
    header first), as a browser reads them (entities decoded)."""
    out = []
    for exp in at.expander:
        if exp.label != "The numbers as a table":
            continue
        for element in exp.get("html"):
            if "<table" not in element.value:
                continue
            out += html_tables(element.value)
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
    from tfviz.viz.kit.chart_numbers import chart_tables

    spec = {"params": [{"name": "layer", "value": 0, "bind": {"input": "range"}}],
            "data": {"values": [{"layer": 0, "w": 0.5}]}, "mark": "rect",
            "encoding": {"x": {"field": "w", "title": "weight"}}}
    assert chart_tables(spec) == []
    assert chart_tables({**spec, "params": []})[0].rows == ((0.5,),)


def test_a_matrix_chart_table_holds_the_models_gamma_row_by_row(app_page):
    """Lesson 9's γ map travels packed (``instant_matrix.matrix_chart``); its table unpacks it into
    one row per LayerNorm, named as the chart names them, which must be the model's own γ."""
    import numpy as np

    at = app_page("09_layernorm.py")
    gammas = [t for t in tables(at) if t[1][0] == "L0 ln1"]
    assert gammas, [t[0][:3] for t in tables(at)]
    model = tfviz.load(DEFAULT_MODEL).model
    first = np.array([float(v) for v in gammas[0][1][1:]])
    # The chart's data carries 4 decimals (instant.DIGITS), so the table does too.
    np.testing.assert_allclose(first, model.blocks[0].ln1.weight.detach().numpy(), atol=5.1e-5)
    assert len(gammas[0][0]) == 1 + model.cfg.d_model


def test_a_length_free_matrix_table_names_its_rows_by_the_sentences_tokens(app_page):
    """Lesson 3's embedding rows travel with their token labels in the data (a length-free
    chart, ``instant_matrix.token_rows_chart``); the table names each row by its token and holds the
    model's own embedding row, read here from the model's table E at the token's id."""
    import numpy as np

    from tfviz.ui.state import DEFAULT_TEXT
    from tfviz.viz.kit.style import token_labels

    at = app_page("03_embeddings.py")
    bundle = tfviz.load(DEFAULT_MODEL)
    ids = bundle.encode(DEFAULT_TEXT)
    labels = token_labels(bundle.trace(DEFAULT_TEXT).tokens)
    rows = next(t for t in tables(at) if t[1][0] == labels[0])[1:]
    assert [r[0] for r in rows] == labels
    E = bundle.model.embed.weight.detach().numpy()
    found = np.array([[float(v) for v in r[1:]] for r in rows])
    np.testing.assert_allclose(found, E[ids], atol=5.1e-5)  # 4 decimals (instant.DIGITS)
