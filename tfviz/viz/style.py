"""Colours and sizes that read well on a projector and for colour-blind viewers."""
from types import MappingProxyType

# Token labels and colour conversions live a floor down, in tfviz.labels (analysis needs them
# too); figure builders take them from here.
from tfviz.labels import hex_colour, rgb, safe_label, token_labels, unit_rgb  # noqa: F401

SEQUENTIAL = "Cividis"  # perceptually uniform and colour-blind safe
DIVERGING = "RdBu_r"  # blue = negative, red = positive; safe for red-green deficiency
# Okabe & Ito's palette for categories (experts, heads, token classes).
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_SIZE = 16
# Heatmaps start from plotly's empty template: its grid lines and backgrounds add nothing to a
# map of coloured cells.
PLAIN_TEMPLATE = "none"








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


def label_margin(labels, *, title: bool = True) -> int:
    """Pixels a column of tick labels (and an axis title) needs beside a plot.

    >>> label_margin(["0 the", "1 animal"]) > label_margin(["0 a"])
    True
    """
    longest = max((len(str(label)) for label in labels), default=1)
    return int(0.6 * FONT_SIZE * longest) + (2 * FONT_SIZE if title else 0) + 12


def layout(fig, title: str, height: int, **extra):
    """What every plotly figure's layout shares: its title, projector-sized text and a height;
    ``extra`` adds the figure's own settings (template, background, legend). The altair
    counterpart is ``readable``; margins are ``fixed_margins``. Returns ``fig``.

    >>> import plotly.graph_objects as go
    >>> fig = layout(go.Figure(), "Keys", 300, showlegend=False)
    >>> fig.layout.title.text, fig.layout.font.size, fig.layout.height, fig.layout.showlegend
    ('Keys', 16, 300, False)
    """
    return fig.update_layout(title={"text": title}, font={"size": FONT_SIZE}, height=height,
                             **extra)


NUMBER_WIDTH = 6  # characters of a numeric tick label such as "−0.25" or "1,000"


def fixed_margins(fig, *, top: int = 60, right: int = 10, left: int | None = None,
                  bottom: int | None = None, plot_width: int = 700):
    """Give ``fig`` fixed margins and switch off plotly's automatic ones on every axis: the one
    place a figure's margins are set. Every plotly builder calls it last. Returns ``fig``.

    Streamlit's chart theme turns ``automargin`` on for every axis. plotly.js then measures
    every tick label in the browser and lays the chart out a second time. Streamlit mounts a
    new chart whenever a figure changes, so this is paid on every slider move; without it a
    12-token map draws in about half the time (bench/bench_plotly.py, BENCHMARKS.md).

    ``left`` and ``bottom`` default to room estimated from the figure's own tick labels and
    axis titles (``label_margin``): x labels get their full length when there are too many to
    sit side by side (plotly then turns them), one line otherwise. Colour bars and legends
    still make their own room.

    >>> import plotly.graph_objects as go
    >>> fig = fixed_margins(go.Figure(go.Bar(x=["a", "b"], y=[1, 2])), top=50)
    >>> fig.layout.margin.to_plotly_json(), fig.layout.xaxis.automargin
    ({'l': 69, 'r': 10, 't': 50, 'b': 40}, False)
    """
    if left is None or bottom is None:
        fit_left, fit_bottom = _label_room(fig, plot_width)
        left = fit_left if left is None else left
        bottom = fit_bottom if bottom is None else bottom
    fig.update_layout(margin={"l": left, "r": right, "t": top, "b": bottom})
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    return fig


def _label_room(fig, plot_width: int) -> tuple[int, int]:
    """(left, bottom) pixels for the left-hand y labels and the bottom x labels of ``fig``."""
    lefts, bottoms = [FONT_SIZE], [FONT_SIZE]
    for name in [k for k in fig.layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        axis = fig.layout[name]
        labels, titled = _axis_labels(fig, name), bool(axis.title.text)
        if name.startswith("y") and axis.side != "right":
            lefts.append(label_margin(labels, title=titled) if labels else 2 * FONT_SIZE + 12)
        elif name.startswith("x") and axis.side != "top":
            longest = max((len(t) for t in labels), default=0)
            side_by_side = len(labels) * (0.6 * FONT_SIZE * longest + 8) <= plot_width
            bottoms.append(label_margin(labels, title=titled) if labels and not side_by_side
                           else (FONT_SIZE + 12 if labels else 0) + (2 * FONT_SIZE if titled else 0) + 12)
    return max(lefts), max(bottoms)


def _axis_labels(fig, name: str) -> list[str]:
    """The tick labels axis ``name`` ("xaxis", "yaxis2", ...) will show, as well as they can be
    known before the browser draws them: its ticktext, or the category names of the traces
    on it, or a number's width."""
    axis = fig.layout[name]
    if axis.showticklabels is False:
        return []
    if axis.ticktext is not None:
        return [str(t) for t in axis.ticktext]
    letter, ref = name[0], name[0] + name[5:]  # "xaxis2" -> trace attribute "x", reference "x2"
    labels = []
    for trace in fig.data:
        if getattr(trace, f"{letter}axis", None) in (ref, None if ref in "xy" else ref):
            values = getattr(trace, letter, None)
            if values is not None and len(values) and isinstance(values[0], str):
                labels += [str(v) for v in values]
    return labels or ["0" * NUMBER_WIDTH]




def readable(chart, *, legend_title_size: int = FONT_SIZE, legend_label_limit: int = 400):
    """Projector-sized text for an altair chart: axis labels and titles, legend, chart title.

    Legend labels are cut at ``legend_label_limit`` pixels (Vega-Lite's own default is 160);
    some charts ask for a smaller ``legend_title_size``.

    >>> import altair as alt
    >>> config = readable(alt.Chart().mark_point()).to_dict()["config"]
    >>> config["axis"], config["title"]
    ({'labelFontSize': 14, 'titleFontSize': 16}, {'fontSize': 18})
    """
    config = readable_config(legend_title_size=legend_title_size,
                             legend_label_limit=legend_label_limit)
    return (chart.configure_axis(**config["axis"]).configure_legend(**config["legend"])
            .configure_title(**config["title"]))


def readable_config(*, legend_title_size: int = FONT_SIZE, legend_label_limit: int = 400) -> dict:
    """``readable``'s settings as a Vega-Lite ``config`` for a chart written as a dict.

    >>> readable_config()["legend"]
    {'labelFontSize': 14, 'titleFontSize': 16, 'labelLimit': 400}
    """
    return {"axis": {"labelFontSize": FONT_SIZE - 2, "titleFontSize": FONT_SIZE},
            "legend": {"labelFontSize": FONT_SIZE - 2, "titleFontSize": legend_title_size,
                       "labelLimit": legend_label_limit},
            "title": {"fontSize": FONT_SIZE + 2}}


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


#: ``readable(chart, **SMALL_LEGEND)``: smaller legend titles, labels cut at Vega-Lite's 160 px.
SMALL_LEGEND = MappingProxyType({"legend_title_size": FONT_SIZE - 2, "legend_label_limit": 160})

