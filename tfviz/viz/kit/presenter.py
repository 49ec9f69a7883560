"""Presenter view's charts: the same figure, legible from the back of a lecture hall.

Pure functions on the JSON a chart is sent as (a Vega-Lite spec dict): every 2-D chart of the
app is one, so this is the one restyler. They return a new dict and never change the one they
are given: the specs the wrappers in ``tfviz.ui`` draw are cached and shared by every learner
on the server.

- Text: every font size becomes at least ``MIN_TEXT`` px (24), and sizes above that grow by
  ``SCALE``. That covers the chart's config (axes, legends, titles, facet headers, text marks)
  and every explicit size in the spec itself (a heatmap's cell labels, an axis of its own).
- Annotations packed into cells or onto bars (text marks a builder made small, at most
  ``SMALL_TEXT`` px) are not drawn: at 24 px they would run into each other, and at their own
  size nobody at the back reads them. The colours and the legend carry the values; the
  tooltip and the normal page still give each number.
- Lines: strokes twice as thick (at least ``MIN_STROKE`` px), points ``SCALE``² the area.
- Contrast: labels, titles and text marks in black instead of grey. The colours of the data
  are kept as they are: the palette is already colour-blind safe (``tfviz.viz.kit.style``;
  tests/unit/viz/test_presenter.py measures it), and a class that follows on its own laptops
  should see the same colours as the projector.
- Room: views are ``SCALE`` times taller, so that rows of labels (a heatmap's tokens) do not
  run into each other (a view named ``PICTURE``, an image drawn pixel by pixel, keeps its
  height, so that its pixels stay square); length limits on labels double, as the text grows
  by up to 24/14. Widths stay as they are: the screen's width is what runs out first.

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
LIMIT_SCALE = 2  # label length limits (px): 14 px labels become 24 px
INK = "#000000"  # labels and titles
PICTURE = "picture"  # the name of a view whose height stays: an image's pixels stay square

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


def is_grey(colour: Any) -> bool:
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
               "labelLimit": 400,
               # a colour bar as long as its view allows, up to 1.5x Vega-Lite's 200 px, so
               # that its 24 px numbers do not run into each other
               "gradientVerticalMaxLength": 200 * SCALE},
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
        elif key == "labelOverlap" and value is False:
            # every label fitted at the page's size; at 24 px they may touch, and then Vega
            # drops one rather than print one over the other
            out[key] = True
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            if key in _GREY_TEXT_KEYS and is_grey(value) and (is_text or key != "color"):
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
        elif key == "height" and (not is_mark or node.get("type") == "image") and \
                node.get("name") != PICTURE:
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
    >>> vega_spec({"mark": "rect", "encoding": {"y": {"axis": {"labelOverlap": False}}}})["encoding"]
    {'y': {'axis': {'labelOverlap': True}}}
    """
    out = _vega_walk(spec)
    out["config"] = _merge(out.get("config") or {}, VEGA_CONFIG)
    return out
