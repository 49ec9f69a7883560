"""Presenter view's charts: the same figure, legible from the back of a lecture hall (issue #19).

Pure functions on the JSON a chart is sent as (a Vega-Lite spec dict, a plotly figure dict).
They return a new dict and never change the one they are given: the specs and figures the
wrappers in ``tfviz.ui`` draw are cached and shared by every learner on the server.

- Text: every font size becomes at least ``MIN_TEXT`` px (24), and sizes above that grow by
  ``SCALE``. That covers the chart's config (axes, legends, titles, facet headers, text marks)
  and every explicit size in the spec itself (a heatmap's cell labels, an axis of its own).
- Annotations packed into cells or onto bars (text marks a builder made small, at most
  ``SMALL_TEXT`` px) are not drawn: at 24 px they would run into each other, and at their own
  size nobody at the back reads them. The colours and the legend carry the values; the
  tooltip and the normal page still give each number. The same for plotly heatmaps' cell
  text when a cell is too narrow for it.
- Lines: strokes twice as thick (at least ``MIN_STROKE`` px), points ``SCALE``² the area.
- Contrast: labels, titles and text marks in black instead of grey. The colours of the data
  are kept as they are: the palette is already colour-blind safe (``tfviz.viz.style``;
  tests/test_viz_presenter.py measures it), and a class that follows on its own laptops
  should see the same colours as the projector.
- Room: views (and plotly figures) are ``SCALE`` times taller, so that rows of labels (a heatmap's tokens) do not
  run into each other; length limits on labels double, as the text grows by up to 24/14;
  plotly's fixed margins (sized for 16 px text by ``style.fixed_margins``) grow by ``SCALE``,
  and a plotly figure gets at least ``ROW`` px per label of a categorical y axis. Widths stay
  as they are: the screen's width is what runs out first.

>>> spec = {"mark": {"type": "text", "fontSize": 12}, "config": {"axis": {"labelFontSize": 14}}}
>>> big = vega_spec(spec)
>>> big["mark"]["fontSize"], big["config"]["axis"]["labelFontSize"], spec["mark"]["fontSize"]
(24, 24, 12)
"""
from __future__ import annotations

from typing import Any

MIN_TEXT = 24  # px: the smallest text presenter view draws
SCALE = 1.5  # 16 px text (style.FONT_SIZE) -> 24 px
MIN_STROKE = 3  # px: the thinnest line presenter view draws
SMALL_TEXT = 12  # px: a text mark this small is a cell's or a bar's annotation
CELL_TEXT = 80  # px: the width a plotly heatmap cell needs for "-0.25" at 24 px
LIMIT_SCALE = 2  # label length limits (px): 14 px labels become 24 px
ROW = 32  # px per label on a categorical y axis: 24 px text and a little air
PLOT_WIDTH = 1100  # px: about the widest a chart is drawn in presenter view (1280 px screen)
PLOT_HEIGHT = 560  # px: the tallest a plotly plot grows for its row labels (a 720 px screen)
INK = "#000000"  # labels and titles

# Vega-Lite properties that hold a font size, a line width, a mark's area, a text's length.
_FONT_KEYS = {"fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize"}
_STROKE_KEYS = {"strokeWidth", "domainWidth", "tickWidth", "symbolStrokeWidth"}
_LIMIT_KEYS = {"labelLimit", "titleLimit", "limit"}
_GREY_TEXT_KEYS = {"labelColor", "titleColor", "color", "subtitleColor"}  # only on text parts


def font(size: float) -> int:
    """A font size as presenter view draws it.

    >>> [font(s) for s in (10, 14, 16, 18, 24)]
    [24, 24, 24, 27, 36]
    """
    return int(max(MIN_TEXT, round(size * SCALE)))


def stroke(width: float) -> float:
    """A line width as presenter view draws it; 0 (no line) stays 0.

    >>> [stroke(w) for w in (0, 0.5, 1, 2, 4)]
    [0, 3, 3, 4, 8]
    """
    return 0 if width <= 0 else max(MIN_STROKE, 2 * width)


def _is_grey(colour: Any) -> bool:
    """A mid or dark grey such as #555555 or #777 (text that should be black on a projector)."""
    if not isinstance(colour, str) or not colour.startswith("#") or len(colour) not in (4, 7):
        return False
    digits = colour[1:]
    channels = [digits[i] * 2 for i in range(3)] if len(digits) == 3 else \
        [digits[i:i + 2] for i in (0, 2, 4)]
    try:
        r, g, b = (int(c, 16) for c in channels)
    except ValueError:
        return False
    return r == g == b and r <= 0xAA


# --- Vega-Lite ----------------------------------------------------------------------------

VEGA_CONFIG = {
    "axis": {"labelFontSize": MIN_TEXT, "titleFontSize": MIN_TEXT + 2, "labelColor": INK,
             "titleColor": INK, "domainWidth": 2, "tickWidth": 2, "domainColor": INK,
             "tickColor": INK, "labelLimit": 360},
    "legend": {"labelFontSize": MIN_TEXT, "titleFontSize": MIN_TEXT, "labelColor": INK,
               "titleColor": INK, "symbolSize": 260, "symbolStrokeWidth": 2,
               "labelLimit": 400},
    "header": {"labelFontSize": MIN_TEXT, "titleFontSize": MIN_TEXT + 2, "labelColor": INK,
               "titleColor": INK},
    "title": {"fontSize": MIN_TEXT + 4, "subtitleFontSize": MIN_TEXT, "color": INK,
              "subtitleColor": INK},
    "text": {"fontSize": MIN_TEXT},
    "line": {"strokeWidth": 4},
    "rule": {"strokeWidth": MIN_STROKE},
    "trail": {"size": 4},
    "point": {"size": 140, "strokeWidth": MIN_STROKE},
    "circle": {"size": 140},
    "square": {"size": 140},
}


def _vega_walk(node: Any, *, text_mark: bool = False) -> Any:
    """A copy of ``node`` (any part of a spec) with presenter-sized text and lines. Values that
    are not dicts or lists (strings, numbers, a dataset's Arrow bytes) are shared, not copied:
    nothing here writes into them."""
    if isinstance(node, list):
        return [_vega_walk(item, text_mark=text_mark) for item in node]
    if not isinstance(node, dict):
        return node
    mark = node.get("mark")
    is_mark = "type" in node  # a mark definition: its height is the mark's own
    is_text = text_mark or node.get("type") == "text" or mark == "text" or \
        (isinstance(mark, dict) and mark.get("type") == "text")
    out, hide = {}, False
    for key, value in node.items():
        if key == "datasets" or key == "data" or key == "values":
            out[key] = value  # data is never resized: copy nothing
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            if key in _GREY_TEXT_KEYS and _is_grey(value) and (is_text or key != "color"):
                out[key] = INK
            elif key == "mark" and isinstance(value, str):
                out[key] = value
            elif key == "height" and isinstance(value, dict) and \
                    isinstance(value.get("step"), (int, float)):  # {"step": 20} per row
                out[key] = {**value, "step": value["step"] * SCALE}
            else:
                out[key] = _vega_walk(value, text_mark=is_text)
        elif key == "fontSize" and is_text and is_mark and value <= SMALL_TEXT:
            out[key] = font(value)
            hide = True  # a cell's or a bar's annotation: see the module docstring
        elif key in _FONT_KEYS:
            out[key] = font(value)
        elif key in _STROKE_KEYS:
            out[key] = stroke(value)
        elif key in _LIMIT_KEYS and value > 0:
            out[key] = int(value * LIMIT_SCALE)
        elif key == "height" and (not is_mark or node.get("type") == "image"):
            out[key] = value * SCALE  # a view's, or the picture filling it (not a bar's)
        elif key in ("dx", "dy") and is_text and is_mark:  # offsets sized for 14 px text
            out[key] = value * SCALE
        elif key == "size":  # a text mark's font size, or a point's area
            out[key] = font(value) if is_text else value * SCALE * SCALE
        else:
            out[key] = value
    if hide:
        out["opacity"] = 0
    return out


def _merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra``'s settings added where ``base`` has none (``base`` wins)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out.setdefault(key, value)
    return out


def vega_spec(spec: dict) -> dict:
    """A Vega-Lite spec (a dict, as ``Chart.to_dict()`` gives) for presenter view: a new dict,
    ``spec`` itself untouched. Explicit sizes in ``spec`` are scaled (``font``, ``stroke``);
    where it sets none, ``VEGA_CONFIG`` supplies presenter defaults.

    >>> spec = {"mark": "line", "config": {"title": {"fontSize": 18}}}
    >>> out = vega_spec(spec)
    >>> out["config"]["title"]["fontSize"], out["config"]["line"]["strokeWidth"], "line" in spec["config"]
    (27, 4, False)
    """
    out = _vega_walk(spec)
    out["config"] = _merge(out.get("config") or {}, VEGA_CONFIG)
    return out


# --- plotly -------------------------------------------------------------------------------

_PLOTLY_FONTS = {"font", "tickfont", "textfont", "titlefont", "insidetextfont",
                 "outsidetextfont", "legendgrouptitle"}


def _plotly_walk(node: Any, parent: str = "") -> Any:
    if isinstance(node, list):
        return [_plotly_walk(item, parent) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if parent in _PLOTLY_FONTS and key == "size" and isinstance(value, (int, float)) \
                and not isinstance(value, bool):
            out[key] = font(value)
        elif parent in _PLOTLY_FONTS and key == "color" and _is_grey(value):
            out[key] = INK
        elif parent == "line" and key == "width" and isinstance(value, (int, float)):
            out[key] = stroke(value)
        elif parent == "marker" and key == "size" and isinstance(value, (int, float)):
            out[key] = value * SCALE
        elif key in ("x", "y", "z", "text", "customdata", "hovertext"):
            out[key] = value  # data: shared, never changed
        else:
            out[key] = _plotly_walk(value, key)
    return out


def _sized(node: dict, *path: str, size: int = MIN_TEXT) -> None:
    """Give the font at ``node[path...]`` a size of at least ``size`` and, unless it has a
    colour of its own, black (creating the path)."""
    for key in path:
        if isinstance(node.get(key), str):  # a title given as a plain string
            node[key] = {"text": node[key]}
        node = node.setdefault(key, {})
    node["size"] = max(node.get("size") or 0, size)
    node.setdefault("color", INK)


def _y_labels(figure: dict, name: str) -> int:
    """How many labels the categorical y axis ``name`` ("yaxis", "yaxis2") shows: its
    ticktext, else the distinct text values its traces put on it (0 for a numeric axis)."""
    axis = figure.get("layout", {}).get(name) or {}
    if axis.get("ticktext") is not None:
        return len(axis["ticktext"])
    ref = "y" + name[5:]
    labels = set()
    for trace in figure.get("data", []):
        values = trace.get("y")
        if trace.get("yaxis", "y") == ref and values is not None \
                and not isinstance(values, (str, dict)) and len(values) \
                and isinstance(values[0], str):
            labels.update(str(v) for v in values)
    return len(labels)


def _thin(axis: dict, length: float, along: float | None = None) -> None:
    """Keep every k-th of an axis's explicit tick labels, so that they fit ``length`` px at
    ``along`` px each (a y axis's rows), or side by side at 24 px (about 0.6 em a character,
    plus a gap; turned labels one line each)."""
    vals, text = axis.get("tickvals"), axis.get("ticktext")
    if vals is None or text is None or len(text) < 2 or len(vals) != len(text):
        return
    if along is not None:
        wide = along
    elif axis.get("tickangle") not in (None, 0, "auto"):
        wide = MIN_TEXT * 1.4
    else:
        wide = 0.6 * MIN_TEXT * max(len(str(t)) for t in text) + 12
    k = -(-int(len(text) * wide) // max(int(length), 1))  # ceil
    if k > 1:
        axis["tickvals"], axis["ticktext"] = list(vals)[::k], list(text)[::k]


def _columns(trace: dict) -> int:
    """How many columns a heatmap trace has (its x values, else its z's shape)."""
    x, z = trace.get("x"), trace.get("z")
    if x is not None and not isinstance(x, (str, dict)):
        return len(x)
    if isinstance(z, dict) and "shape" in z:  # plotly's typed array: {"bdata", "dtype", "shape"}
        return int(str(z["shape"]).split(",")[-1])
    return len(z[0]) if z is not None and len(z) and hasattr(z[0], "__len__") else 0


def _span(axis: dict) -> float:
    """The share of the plot's height an axis covers (its domain; subplots split it)."""
    low, high = axis.get("domain") or (0, 1)
    return max(high - low, 0.05)


def plotly_figure(figure: dict) -> dict:
    """A plotly figure (as ``Figure.to_dict()`` gives) for presenter view: a new dict,
    ``figure`` untouched. Fonts as ``font``, lines as ``stroke``, black text; margins grown
    by ``SCALE`` so that the bigger tick labels still fit (``style.fixed_margins`` switched
    plotly's own automatic margins off); ``ROW`` px of height per label of a categorical y
    axis, and explicit x tick labels thinned to what fits ``PLOT_WIDTH``.

    >>> fig = {"data": [{"type": "scatter", "line": {"width": 2}}],
    ...        "layout": {"font": {"size": 16}, "margin": {"l": 40, "r": 10, "t": 60, "b": 30}}}
    >>> out = plotly_figure(fig)
    >>> out["layout"]["font"], out["layout"]["margin"], out["data"][0]["line"]["width"]
    ({'size': 24, 'color': '#000000'}, {'l': 60, 'r': 15, 't': 90, 'b': 45}, 4)
    >>> fig["layout"]["font"]["size"]
    16
    """
    out = _plotly_walk(figure)
    layout = out.setdefault("layout", {})
    layout["font"] = {"size": MIN_TEXT, **layout.get("font", {}), "color": INK}  # size: scaled
    margin = layout.get("margin")
    if isinstance(margin, dict):
        layout["margin"] = {k: int(v * SCALE) if isinstance(v, (int, float)) and k in "lrtb" else v
                            for k, v in margin.items()}
    # Streamlit's plotly theme gives axes, legends, colour bars and the title sizes of their
    # own (12-16 px), which win over layout.font: each part gets an explicit size instead.
    _sized(layout, "title", "font", size=MIN_TEXT + 4)
    for name in {"xaxis", "yaxis", *(k for k in layout if k.startswith(("xaxis", "yaxis")))}:
        axis = layout.setdefault(name, {})
        _sized(axis, "tickfont")
        _sized(axis, "title", "font")
        if axis.get("type") == "log" and "dtick" not in axis:
            axis["dtick"] = 1  # labels at powers of 10 only: plotly draws the 2s and 5s smaller
    _sized(layout, "legend", "font")
    _sized(layout, "legend", "title", "font")
    for trace in out.get("data", []):
        if "colorbar" in trace or trace.get("showscale") is not False and "colorscale" in trace:
            _sized(trace, "colorbar", "tickfont")
            _sized(trace, "colorbar", "title", "font")
        if trace.get("type") == "heatmap" and "texttemplate" in trace and \
                _columns(trace) * CELL_TEXT > PLOT_WIDTH:
            del trace["texttemplate"]  # cells too narrow for 24 px numbers: colours only
        if "text" in trace or "texttemplate" in trace:
            _sized(trace, "textfont")
    for note in layout.get("annotations", []):
        _sized(note, "font")
    # Explicit tick labels (a heatmap's dimensions 0..63) thinned to what fits side by side.
    for name in [k for k in layout if k.startswith("xaxis")]:
        _thin(layout[name], PLOT_WIDTH * _span(layout[name]))
    if isinstance(layout.get("height"), (int, float)):  # as tall as Vega's views grow: the
        layout["height"] = int(layout["height"] * SCALE)  # margins grew, the plot keeps its share
    # Rows of 24 px labels need ROW px each: a taller figure (a slide may scroll), up to
    # PLOT_HEIGHT; past that, explicit y labels are thinned like the x ones.
    for name in [k for k in layout if k.startswith("yaxis")]:
        _thin(layout[name], PLOT_HEIGHT * _span(layout[name]), along=ROW)
    if isinstance(layout.get("height"), (int, float)):
        margin = layout.get("margin") or {}
        plot = layout["height"] - margin.get("t", 100) - margin.get("b", 80)
        need = max((_y_labels(out, name) * ROW / _span(layout.get(name) or {})
                    for name in layout if name.startswith("yaxis")), default=0)
        if need > plot:
            layout["height"] = int(layout["height"] + need - plot)
    return out
