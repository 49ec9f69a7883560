"""Charts for the tour: the model's top guesses and RNN vs transformer as sentences grow.

The tour is the first page a learner opens, often on a server that has only just started,
and everything Python does before it is drawn shares one GIL with the server's warm-up. So
these two charts are plain Vega-Lite dicts (no altair), and their few rows travel inside their
views, in the spec: Streamlit turns a chart's top-level data into an Arrow table, and pyarrow
imports pandas to build one. altair, pandas and pyarrow together made the first page 0.7 s
slower (BENCHMARKS.md, "first lesson"). ``tfviz.ui.widgets.vega`` draws dicts as they are.
"""
from __future__ import annotations

from tfviz.viz.style import CATEGORICAL, FONT_SIZE, SMALL_LEGEND, described, readable_config

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


def predictions_chart(predictions, *, title: str) -> dict:
    """Horizontal bars of the top guesses: predictions = [(id, token string, probability), ...],
    most likely first (the bars keep that order)."""
    rows = [{"id": int(i), "token": str(t), "probability": float(p), "label": f"{t}  (id {i})"}
            for i, t, p in predictions]
    encoding = {
        "x": {"field": "probability", "type": "quantitative", "title": "probability"},
        "y": {"field": "label", "type": "nominal", "title": "next token",
              "sort": [r["label"] for r in rows]},
        "tooltip": [{"field": "token", "type": "nominal"}, {"field": "id", "type": "quantitative"},
                    {"field": "probability", "type": "quantitative", "format": ".4f"}],
    }
    data = {"values": rows}
    bars = {"data": data, "mark": {"type": "bar", "color": CATEGORICAL[0]}, "encoding": encoding}
    text = {"data": data, "mark": {"type": "text", "align": "left", "dx": 4,
                                   "fontSize": FONT_SIZE - 2},
            "encoding": {**encoding, "text": {"field": "probability", "type": "quantitative",
                                              "format": ".3f"}}}
    # A step height per bar: Streamlit ignores a fixed height on layered charts.
    return described({"$schema": SCHEMA, "layer": [bars, text], "title": title,
                      "height": {"step": 40}, "config": readable_config(**SMALL_LEGEND)})


def rnn_vs_transformer_chart(rows, *, title: str = "RNN vs transformer as the sentence grows"
                             ) -> dict:
    """Two panels (sequential steps, longest path) with one line per model; rows from
    :func:`tfviz.analysis.pipeline.rnn_vs_transformer`. The faceted chart sits alone in a
    concat so that its rows stay in the spec (module docstring)."""
    model = {"field": "model", "type": "nominal", "title": "model"}
    lines = {
        "mark": {"type": "line", "point": True, "strokeWidth": 3},
        "encoding": {
            "x": {"field": "n", "type": "quantitative", "title": "sentence length n (tokens)"},
            "y": {"field": "value", "type": "quantitative", "title": "count"},
            "color": {**model, "scale": {"domain": ["RNN", "Transformer"],
                                         "range": [CATEGORICAL[5], CATEGORICAL[0]]}},
            "strokeDash": model,
            "tooltip": [{"field": "model", "type": "nominal"},
                        {"field": "measure", "type": "nominal"},
                        {"field": "n", "type": "quantitative"},
                        {"field": "value", "type": "quantitative"}],
        },
        "width": 300, "height": 240,
    }
    column = {"field": "measure", "type": "nominal", "title": None,
              "header": {"labelFontSize": FONT_SIZE}}
    panels = {"data": {"values": list(rows)}, "facet": {"column": column}, "spec": lines}
    return described({"$schema": SCHEMA, "hconcat": [panels], "title": title,
                      "config": readable_config(**SMALL_LEGEND)})
