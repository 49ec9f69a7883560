"""Colours and sizes that read well on a projector and for colour-blind viewers."""
import html

SEQUENTIAL = "Cividis"  # perceptually uniform and colour-blind safe
DIVERGING = "RdBu_r"  # blue = negative, red = positive; safe for red-green deficiency
# Okabe & Ito's palette for categories (experts, heads, token classes).
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_SIZE = 16
# The default plotly template turns on automatic margins, which makes the browser lay every
# chart out twice; on a 2-core classroom server that doubles the time to redraw a heatmap.
# Heatmaps use this plain template instead, with margins sized from their labels.
PLAIN_TEMPLATE = "none"


def label_margin(labels, *, title: bool = True) -> int:
    """Pixels a column of tick labels (and an axis title) needs beside a plot.

    >>> label_margin(["0 the", "1 animal"]) > label_margin(["0 a"])
    True
    """
    longest = max((len(str(label)) for label in labels), default=1)
    return int(0.6 * FONT_SIZE * longest) + (2 * FONT_SIZE if title else 0) + 12


def unique_labels(tokens) -> list[str]:
    """Axis labels that stay distinct when a token repeats: "the" at 0 and 4 -> "0 the", "4 the".

    Plotly reads a little HTML in labels (<b>, <a href>), so text a learner typed is escaped
    and shows as typed.

    >>> unique_labels(["the", "cat", "<b>"])
    ['0 the', '1 cat', '2 &lt;b&gt;']
    """
    return [f"{i} {safe_label(t)}" for i, t in enumerate(tokens)]


def safe_label(text: str) -> str:
    """Escape text for plotly's label markup.

    >>> safe_label("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return html.escape(str(text), quote=False)
