"""Colours and sizes that read well on a projector and for colour-blind viewers."""
import html

SEQUENTIAL = "Cividis"  # perceptually uniform and colour-blind safe
DIVERGING = "RdBu_r"  # blue = negative, red = positive; safe for red-green deficiency
# Okabe & Ito's palette for categories (experts, heads, token classes).
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_SIZE = 16
# Heatmaps start from plotly's empty template: its grid lines and backgrounds add nothing to a
# map of coloured cells.
PLAIN_TEMPLATE = "none"


def label_margin(labels, *, title: bool = True) -> int:
    """Pixels a column of tick labels (and an axis title) needs beside a plot.

    >>> label_margin(["0 the", "1 animal"]) > label_margin(["0 a"])
    True
    """
    longest = max((len(str(label)) for label in labels), default=1)
    return int(0.6 * FONT_SIZE * longest) + (2 * FONT_SIZE if title else 0) + 12


def fixed_margins(fig, *, left: int, bottom: int, top: int = 60, right: int = 10):
    """Give ``fig`` fixed margins and switch off plotly's automatic ones on every axis.

    Streamlit's chart theme turns ``automargin`` on for every axis. plotly.js then measures
    every tick label in the browser and lays the chart out a second time. Streamlit mounts a
    new chart whenever a figure changes, so this is paid on every slider move: on this 2-core
    machine one 12-token map took 73 ms to draw with it and 36 ms without, the four-head grid
    52 and 31 ms (bench/bench_plotly.py). Size ``left`` and ``bottom`` with ``label_margin``.
    """
    fig.update_layout(margin={"l": left, "r": right, "t": top, "b": bottom})
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    return fig


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
