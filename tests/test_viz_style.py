"""Fixed chart margins: sized from the figure's own labels, so the browser lays it out once."""
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tfviz.viz.heatmap import attention_heatmap
from tfviz.viz.style import FONT_SIZE, NUMBER_WIDTH, fixed_margins, label_margin


def _axes(fig):
    return [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]


def test_fixed_margins_sizes_room_from_the_labels_and_titles():
    fig = go.Figure(go.Bar(x=["head 0", "head 1"], y=[1.0, 2.0]))
    fig.update_xaxes(title="head")
    fig.update_yaxes(title="length")
    fixed_margins(fig)
    assert all(axis.automargin is False for axis in _axes(fig))
    assert (fig.layout.margin.t, fig.layout.margin.r) == (60, 10)
    assert fig.layout.margin.l == label_margin(["0" * NUMBER_WIDTH], title=True)  # numbers + title
    # two short labels sit side by side: one line of labels plus the title
    assert fig.layout.margin.b == FONT_SIZE + 12 + 2 * FONT_SIZE + 12


def test_fixed_margins_leaves_room_for_turned_labels_when_they_crowd():
    names = [f"{i} token_number_{i}" for i in range(40)]
    fig = fixed_margins(go.Figure(go.Bar(x=names, y=np.arange(40.0))))
    assert fig.layout.margin.b == label_margin(names, title=False)
    assert fig.layout.margin.b > 0.6 * FONT_SIZE * len("39 token_number_39")


def test_fixed_margins_reads_ticktext_and_every_subplot():
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1]), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1]), row=1, col=2)
    fig.update_yaxes(tickvals=[0, 1], ticktext=["short", "a much longer label"], row=1, col=2)
    fixed_margins(fig, top=80)
    assert len(_axes(fig)) == 4 and all(axis.automargin is False for axis in _axes(fig))
    assert fig.layout.margin.l == label_margin(["a much longer label"], title=False)


def test_given_sides_are_kept_and_the_rest_estimated():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1.0, 2.0]))
    fixed_margins(fig, left=50, top=80, right=0)
    assert fig.layout.margin.to_plotly_json() == {"l": 50, "r": 0, "t": 80, "b": FONT_SIZE + 24}
    heat = attention_heatmap(np.full((3, 3), 1 / 3), ["a", "b", "c"], title="t")
    assert heat.layout.margin.l == heat.layout.margin.b == label_margin(["0 a"])
