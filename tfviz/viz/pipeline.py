"""Charts for the tour: the model's top guesses and RNN vs transformer as sentences grow."""
from __future__ import annotations

import altair as alt
import pandas as pd

from tfviz.viz.style import CATEGORICAL, FONT_SIZE, SMALL_LEGEND, readable


def predictions_chart(predictions, *, title: str) -> alt.Chart:
    """Horizontal bars of the top guesses: predictions = [(id, token string, probability), ...]."""
    df = pd.DataFrame(predictions, columns=["id", "token", "probability"])
    df["label"] = [f"{t}  (id {i})" for i, t in zip(df["id"], df["token"])]
    order = list(df["label"])
    bars = alt.Chart(df).mark_bar(color=CATEGORICAL[0]).encode(
        x=alt.X("probability:Q", title="probability"),
        y=alt.Y("label:N", title="next token", sort=order),
        tooltip=["token", "id", alt.Tooltip("probability:Q", format=".4f")],
    )
    text = bars.mark_text(align="left", dx=4, fontSize=FONT_SIZE - 2).encode(
        text=alt.Text("probability:Q", format=".3f"))
    # A step height per bar: Streamlit ignores a fixed height on layered charts.
    return readable((bars + text).properties(title=title, height=alt.Step(40)), **SMALL_LEGEND)


def rnn_vs_transformer_chart(rows, *, title: str = "RNN vs transformer as the sentence grows"
                             ) -> alt.Chart:
    """Two panels (sequential steps, longest path) with one line per model; rows from
    :func:`tfviz.analysis.pipeline.rnn_vs_transformer`."""
    df = pd.DataFrame(rows)
    colours = alt.Scale(domain=["RNN", "Transformer"], range=[CATEGORICAL[5], CATEGORICAL[0]])
    lines = alt.Chart(df).mark_line(point=True, strokeWidth=3).encode(
        x=alt.X("n:Q", title="sentence length n (tokens)"),
        y=alt.Y("value:Q", title="count"),
        color=alt.Color("model:N", scale=colours, title="model"),
        strokeDash=alt.StrokeDash("model:N", title="model"),
        tooltip=["model", "measure", "n", "value"],
    ).properties(width=300, height=240)
    chart = lines.facet(column=alt.Column("measure:N", title=None,
                                          header=alt.Header(labelFontSize=FONT_SIZE)))
    return readable(chart.properties(title=title), **SMALL_LEGEND)
