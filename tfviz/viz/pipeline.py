"""Charts for the tour: the model's top guesses and RNN vs transformer as sentences grow.

Also the words of each stage of the trip (``stage_html``).

The tour is the first page a learner opens, often on a server that has only just started,
and everything Python does before it is drawn shares one GIL with the server's warm-up. So
these two charts are plain Vega-Lite dicts (no altair), and their few rows travel inside their
views, in the spec: Streamlit turns a chart's top-level data into an Arrow table, and pyarrow
imports pandas to build one. altair, pandas and pyarrow together made the first page
slower (bench/first_page_ab.py; BENCHMARKS.md, "first lesson"). ``tfviz.ui.drawing.vega`` draws
dicts as they are.
"""
from __future__ import annotations

import html

from tfviz.viz.kit.charts import chart, colour, n, q, view
from tfviz.viz.kit.instant import slider
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, SMALL_LEGEND



def predictions_chart(predictions, *, title: str) -> dict:
    """Horizontal bars of the top guesses: predictions = [(id, token string, probability), ...],
    most likely first (the bars keep that order)."""
    rows = [{"id": int(i), "token": str(t), "probability": float(p), "label": f"{t}  (id {i})"}
            for i, t, p in predictions]
    data = {"values": rows}  # in the views, not a dataset: no Arrow (module docstring)
    x = q("probability", "probability")
    y = n("label", "next token", sort=[r["label"] for r in rows])
    hover = [{"field": "token", "type": "nominal"}, {"field": "id", "type": "quantitative"},
             {"field": "probability", "type": "quantitative", "format": ".4f"}]
    bars = view({"type": "bar", "color": CATEGORICAL[0]}, data=None, x=x, y=y, tooltip=hover)
    text = view({"type": "text", "align": "left", "dx": 4, "fontSize": FONT_SIZE - 2}, data=None,
                x=x, y=y, tooltip=hover, text=q("probability", format=".3f"))
    said = ", ".join(f"{r['token']} {r['probability']:.3f}" for r in rows)
    # A step height per bar: Streamlit ignores a fixed height on layered charts.
    return chart({"layer": [{"data": data, **bars}, {"data": data, **text}]}, title=title,
                 height={"step": 40}, config=SMALL_LEGEND,
                 description=f"{title} The most likely next tokens and their probabilities: "
                             f"{said}.")


LONGEST_PARAM = "longest"  # the RNN chart's slider: the longest sentence it draws
SLIDER_FROM = 4  # the slider's lowest setting: below it the two lines barely part


def rnn_vs_transformer_chart(rows, *, shown: int,
                             title: str = "RNN vs transformer as the sentence grows") -> dict:
    """Two panels (sequential steps, longest path) with one line per model; rows from
    :func:`tfviz.analysis.pipeline.rnn_vs_transformer` for every length the chart can show.
    A slider under the chart ("longest", starting at ``shown``) picks the longest sentence
    drawn, in the browser: the rows are filtered there, so moving it runs no script. The
    faceted chart sits alone in a concat so that its rows stay in the spec (module docstring).
    """
    model = n("model", "model")
    lines = {**view({"type": "line", "point": True, "strokeWidth": 3}, data=None,
                    x=q("n", "sentence length n (tokens)"), y=q("value", "count"),
                    color=colour("model", ["RNN", "Transformer"], [CATEGORICAL[5], CATEGORICAL[0]],
                                 title="model"),
                    strokeDash=model,
                    tooltip=[{"field": "model", "type": "nominal"},
                             {"field": "measure", "type": "nominal"},
                             {"field": "n", "type": "quantitative"},
                             {"field": "value", "type": "quantitative"}]),
             "width": 300, "height": 240}
    column = {"field": "measure", "type": "nominal", "title": None,
              "header": {"labelFontSize": FONT_SIZE}}
    longest = max((r["n"] for r in rows), default=0)
    shortest = min((r["n"] for r in rows), default=0)
    panels = {"data": {"values": list(rows)},
              "transform": [{"filter": f"datum.n <= {LONGEST_PARAM}"}],
              "facet": {"column": column}, "spec": lines}
    pick = slider(LONGEST_PARAM, longest, "Longest sentence on the chart", shown, lower=SLIDER_FROM)
    return chart({"params": [pick], "hconcat": [panels]}, title=title, config=SMALL_LEGEND,
                 description=f"{title}: sequential steps and the longest path between two tokens "
                             f"for sentences of {shortest} tokens up to the length the slider "
                             f"under the chart picks (at most {longest}); an RNN's grow with the "
                             "length, a transformer's stay at 1.")


def stage_html(title: str, note: str, shape: tuple[int, ...], chips: str = "") -> str:
    """One stage of the tour's trip: its name and what happens there, its shape in a code box
    at the right, then ``chips`` (HTML, e.g. the tokens), as one block of HTML for ``st.html``
    (classes in ``tfviz/ui/assets/readable.css``). One element for all of it: the tour is the
    first page a learner opens, and every element is work for the browser.

    >>> stage_html("Tokens", "3 ids <one per piece>", (3,))
    '<div class="tfviz-stage"><p><strong>Tokens</strong> — 3 ids &lt;one per piece&gt;</p><code>shape (3,)</code></div>'
    """
    return (f'<div class="tfviz-stage"><p><strong>{html.escape(title)}</strong> — '
            f'{html.escape(note)}</p><code>shape {html.escape(str(tuple(shape)))}</code></div>'
            f"{chips}")


# Between two stages: an arrow, which says nothing a screen reader needs
STAGE_ARROW = '<div class="tfviz-stage-arrow" aria-hidden="true">↓</div>'
