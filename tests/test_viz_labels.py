"""The one way tokens are named on every page, and the one altair text style."""
import altair as alt
import pytest

from tfviz.viz.kit.style import FONT_SIZE, SMALL_LEGEND, readable, token_labels


@pytest.mark.parametrize("kwargs, expected", [
    ({}, ["0 the", "1 <b>", "2 the"]),  # altair, tables and widgets show text as typed
    ({"escape": True}, ["0 the", "1 &lt;b&gt;", "2 the"]),  # plotly reads <b> as markup
    ({"start": 1}, ["1 the", "2 <b>", "3 the"]),  # the exercise tables count from 1
])
def test_token_labels_golden(kwargs, expected):
    assert token_labels(["the", "<b>", "the"], **kwargs) == expected


def test_token_labels_stay_distinct_and_keep_the_token():
    tokens = ["␣the", "&", "␣the", "a b", ""]
    labels = token_labels(tokens)
    assert len(set(labels)) == len(tokens)
    assert [label.split(" ", 1) for label in labels] == [[str(i), t] for i, t in enumerate(tokens)]
    assert token_labels([]) == []


def _config(chart) -> dict:
    return chart.to_dict()["config"]


def test_readable_sets_projector_sized_text():
    config = _config(readable(alt.Chart().mark_point()))
    assert config["axis"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE}
    assert config["legend"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE,
                                "labelLimit": 400}
    assert config["title"] == {"fontSize": FONT_SIZE + 2}


def test_small_legend_keeps_the_tour_and_positions_style():
    config = _config(readable(alt.Chart().mark_point(), **SMALL_LEGEND))
    assert config["legend"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE - 2,
                                "labelLimit": 160}  # 160 px is Vega-Lite's own default
