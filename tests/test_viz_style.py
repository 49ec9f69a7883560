"""Fixed chart margins: sized from the figure's own labels, so the browser lays it out once."""
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tfviz.viz import attention as attv
from tfviz.viz.heatmap import attention_heatmap
from tfviz.viz.moe import routing_heatmap
from tfviz.viz.style import FONT_SIZE, NUMBER_WIDTH, fit_margins, label_margin


def _axes(fig):
    return [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]


def test_fit_margins_sizes_room_from_the_labels_and_titles():
    fig = go.Figure(go.Bar(x=["head 0", "head 1"], y=[1.0, 2.0]))
    fig.update_xaxes(title="head")
    fig.update_yaxes(title="length")
    fit_margins(fig)
    assert all(axis.automargin is False for axis in _axes(fig))
    assert fig.layout.margin.l == label_margin(["0" * NUMBER_WIDTH], title=True)  # numbers + title
    # two short labels sit side by side: one line of labels plus the title
    assert fig.layout.margin.b == FONT_SIZE + 12 + 2 * FONT_SIZE + 12


def test_fit_margins_leaves_room_for_turned_labels_when_they_crowd():
    names = [f"{i} token_number_{i}" for i in range(40)]
    fig = fit_margins(go.Figure(go.Bar(x=names, y=np.arange(40.0))))
    assert fig.layout.margin.b == label_margin(names, title=False)
    assert fig.layout.margin.b > 0.6 * FONT_SIZE * len("39 token_number_39")


def test_fit_margins_reads_ticktext_and_every_subplot():
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1]), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1]), row=1, col=2)
    fig.update_yaxes(tickvals=[0, 1], ticktext=["short", "a much longer label"], row=1, col=2)
    fit_margins(fig)
    assert len(_axes(fig)) == 4 and all(axis.automargin is False for axis in _axes(fig))
    assert fig.layout.margin.l == label_margin(["a much longer label"], title=False)


def test_a_figure_that_sized_its_own_margins_is_left_alone():
    fig = attention_heatmap(np.full((3, 3), 1 / 3), ["a", "b", "c"], title="t")
    before = fig.layout.margin.to_plotly_json()
    assert fit_margins(fig).layout.margin.to_plotly_json() == before


def test_every_shared_chart_is_served_with_fixed_margins():
    from tfviz.ui.widgets import _shared_figure

    weights = np.array([[[0.7, 0.1], [0.2, 0.3]]])
    fig = _shared_figure("test.coref", (weights, ["animal", "street"]),
                         {"best": (0, 0), "probe": "it"}, _builder=attv.coref_figure)
    assert all(axis.automargin is False for axis in _axes(fig))
    plain = _shared_figure("test.bar", (), {}, _builder=lambda: go.Figure(go.Bar(x=["a"], y=[1])))
    assert all(axis.automargin is False for axis in _axes(plain)) and plain.layout.margin.l > 0


def test_routing_map_always_shows_its_key():
    probs = np.array([[0.9, 0.1], [0.2, 0.8]])
    chosen = probs > 0.5
    fig = routing_heatmap(probs, chosen, np.zeros_like(chosen), ["a", "b"], title="t")
    assert fig.layout.showlegend is True
    assert [t.name for t in fig.data[1:]] == ["chosen", "dropped (expert full)"]
