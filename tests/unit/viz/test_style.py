"""The one way tokens are named on every page, and the one text style of every chart."""
import pytest

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.style import FONT_SIZE, SMALL_LEGEND, chart_config, token_labels


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


def test_every_chart_has_the_one_config_and_a_small_legend_is_asked_for():
    config = chart({"mark": "point"}, description="A point.")["config"]
    assert config == chart_config()
    assert config["axis"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE}
    assert config["legend"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE,
                                "labelLimit": 400}
    small = chart({"mark": "point"}, description="A point.", config=SMALL_LEGEND)["config"]
    assert small["legend"] == {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE - 2,
                               "labelLimit": 160}  # 160 px is Vega-Lite's own default
    assert small["axis"] == config["axis"]
