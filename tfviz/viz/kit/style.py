"""Colours and sizes that read well on a projector and for colour-blind viewers."""
from types import MappingProxyType

# Token labels and colour conversions live a floor down, in tfviz.labels (analysis needs them
# too); figure builders take them from here.
from tfviz.labels import hex_colour, rgb, safe_label, token_labels, unit_rgb  # noqa: F401

# Okabe & Ito's palette for categories (experts, heads, token classes).
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_SIZE = 16

#: One colour per meaning, on every chart that draws it: a learner who met attention's weights
#: in blue reads blue as attention on the next chart too. A chart whose legend names one of
#: these takes its colours from here, through ``meaning_scale``.
MEANINGS = MappingProxyType({
    "attention": CATEGORICAL[0],  # blue: softmax weights, the soft blend of every value
    "hard lookup": CATEGORICAL[1],  # orange: all weight on the one best key
    "query": CATEGORICAL[5],  # vermillion: the token asking
})


def meaning_scale(labels) -> dict:
    """A Vega-Lite colour scale for a legend's ``labels`` ({label: meaning}, in legend order),
    each label in its meaning's colour from ``MEANINGS``.

    >>> meaning_scale({"softmax": "attention", "best key": "hard lookup"})
    {'domain': ['softmax', 'best key'], 'range': ['#0072B2', '#E69F00']}
    """
    return {"domain": list(labels), "range": [MEANINGS[m] for m in labels.values()]}


def relative_luminance(hex_colour: str) -> float:
    """WCAG 2's relative luminance of "#rrggbb": each channel linearised from sRGB, then
    0.2126 R + 0.7152 G + 0.0722 B; 0 for black, 1 for white.

    >>> relative_luminance("#000000"), relative_luminance("#ffffff")
    (0.0, 1.0)
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in unit_rgb(hex_colour)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio (L1 + 0.05) / (L2 + 0.05), the lighter colour's luminance on
    top: 1 (none) to 21 (black on white). Text needs 4.5 (AA), large text 3.

    >>> round(contrast_ratio("#000000", "#ffffff"), 2), round(contrast_ratio("#828180", "#ffffff"), 2)
    (21.0, 3.89)
    """
    light, dark = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def chart_config() -> dict:
    """The one Vega-Lite ``config`` of every chart (``charts.chart``): projector-sized text,
    titles from the left, no frame round a view, Okabe-Ito colours for categories. Legend
    labels are cut at 400 px (Vega-Lite's own default is 160); ``SMALL_LEGEND`` asks for less.

    >>> chart_config()["legend"]
    {'labelFontSize': 14, 'titleFontSize': 16, 'labelLimit': 400}
    """
    return {"axis": {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE},
            "legend": {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE, "labelLimit": 400},
            "title": {"fontSize": FONT_SIZE + 2, "anchor": "start"},
            "header": {"labelFontSize": FONT_SIZE, "titleFontSize": FONT_SIZE},
            "view": {"stroke": None}, "range": {"category": list(CATEGORICAL)}}


def title_text(title) -> str:
    """A Vega-Lite title (a string, lines as a list, or ``{"text": ...}``) as one line of text.

    >>> title_text({"text": ["Two", "lines"], "subtitle": "x"}), title_text(None)
    ('Two lines', '')
    """
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, (list, tuple)):
        return " ".join(str(t) for t in title)
    return str(title) if title else ""


def described(spec: dict) -> dict:
    """A Vega-Lite spec that carries a ``description``: its own, else its title's text. Vega
    makes the description the chart's accessible name (the ``aria-label`` of its
    ``role="graphics-document"`` box), what a screen reader says before the numbers; a title
    alone is only drawn. Returns ``spec`` itself when it has one, else a shallow copy.

    >>> described({"title": {"text": "Bars"}, "mark": "bar"})["description"]
    'Bars'
    >>> described({"description": "Own words", "title": "Bars"})["description"]
    'Own words'
    """
    if spec.get("description"):
        return spec
    text = title_text(spec.get("title"))
    return {**spec, "description": text} if text else spec


#: ``chart(..., config=SMALL_LEGEND)``: smaller legend titles, labels cut at Vega-Lite's 160 px.
SMALL_LEGEND = MappingProxyType({"legend": {"titleFontSize": FONT_SIZE - 2, "labelLimit": 160}})

#: The greys of text and rules that should recede: notes beside a chart, a dashed reference
#: line (``GREY``), what was left out (``LIGHT_GREY``). Presenter view darkens both.
GREY = "#555555"
LIGHT_GREY = "#777777"
MASKED_GREY = "#d9d9d9"  # a masked (−∞) cell, on every page that draws one
