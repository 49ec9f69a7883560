"""Presenter view's plotly figures: the rules of :mod:`tfviz.viz.presenter`, applied to the dict
a plotly figure is sent as (``Figure.to_dict()``).

Fonts as ``font``, lines as ``stroke``, black text, as in Vega-Lite. What plotly needs besides:
its fixed margins (sized for 16 px text by ``style.fixed_margins``) grow by ``SCALE``, since it
does not make room for bigger tick labels by itself; Streamlit's plotly theme sizes axes,
legends, colour bars and titles on its own, so each part gets an explicit size; a categorical
y axis gets ``ROW`` px per label (up to ``PLOT_HEIGHT``, past which its labels are thinned, as
explicit x labels are to what fits ``PLOT_WIDTH``); a heatmap's cell text goes when a cell is
narrower than ``CELL_TEXT``. The figure given is never changed: it may be a shared one.
"""
from __future__ import annotations

from typing import Any

from tfviz.viz.presenter import INK, MIN_TEXT, SCALE, font, is_grey, stroke

CELL_TEXT = 80  # px: the width a plotly heatmap cell needs for "-0.25" at 24 px
ROW = 32  # px per label on a categorical y axis: 24 px text and a little air
PLOT_WIDTH = 1100  # px: about the widest a chart is drawn in presenter view (1280 px screen)
PLOT_HEIGHT = 560  # px: the tallest a plotly plot grows for its row labels (a 720 px screen)

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
        elif parent in _PLOTLY_FONTS and key == "color" and is_grey(value):
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
