"""Instant views on a page: draw a chart from ``tfviz.viz.instant``, and keep the URL in step.

The view controls of an instant chart (layer, head, query token, step) are inputs that Vega
binds under the chart; moving one changes the chart in the browser without a script rerun.
The server never hears of it, so the browser owns those URL keys:

- the view script (``tfviz/ui/assets/view_sync.js``, drawn once by the frame, ``view_sync``)
  writes a moved input's value into
  the URL with ``history.replaceState``, and moves every other input of the same name with
  it (two charts of one page, or the same key on two pages, stay together);
- the other charts follow one per task, so a key press is never stuck behind them, and a
  chart out of sight (a hidden tab, far down the page) follows only when it comes near the
  viewport;
- when Streamlit writes the URL itself (after the text or model changed) it only knows the
  view keys the page was opened with, so the script patches ``history.pushState`` and
  ``replaceState`` to put the current view keys back in;
- a chart that is drawn anew (a new sentence) starts from the values the server knew; the
  script sets its inputs to the current view as soon as they appear.

On the server, ``view_value`` reads a key from the URL the run was started with, which is
right when the page opens (a shared link) and when the learner moves to another page.
"""
from __future__ import annotations

import streamlit as st

from tfviz.ui.browser_code import module_script
from tfviz.ui.widgets import vega
from tfviz.viz.instant import VIEW_KEYS
from tfviz.viz.instant_layer import one_layer


def view_sync() -> None:
    """The page's view-keeping script, ``tfviz/ui/assets/view_sync.js`` (see the module
    docstring), with the view keys as its data. The frame draws it on every page; the browser
    runs it once per page load."""
    st.html(module_script("view_sync.js", {"keys": list(VIEW_KEYS)}), unsafe_allow_javascript=True)


def length_marker(n: int, default_query: int) -> None:
    """The length and default query of the sentence that the length-free charts beside it
    draw (``tfviz.viz.instant_length``): the view script fits their query sliders to it."""
    st.html(f'<div hidden class="tfviz-length" data-ntok="{int(n)}" '
            f'data-dq="{int(default_query)}"></div>')


def linked_value(key: str) -> int | None:
    """The view key ``key`` from the URL this run was started with, or None when the link
    names none (or nothing a whole number)."""
    raw = st.query_params.get(key)
    if raw is None or not raw.strip().isdigit() or len(raw.strip()) > 4:
        return None
    return int(raw)


def view_value(key: str, upper: int, default: int = 0) -> int:
    """The view key ``key`` from the URL this run was started with, as a whole number in
    0..upper, else ``default``: where an instant chart starts (a shared link's view)."""
    linked = linked_value(key)
    return min(max(default, 0), upper) if linked is None else min(linked, upper)


def instant(builder, *args, only_layer: int | None = None, **kwargs) -> None:
    """Draw the instant chart ``builder(*args, **kwargs)`` (a Vega-Lite dict from
    ``tfviz.viz.instant``): ``tfviz.ui.widgets.vega``, the one cached wrapper, by the name the
    lessons' instant views were written with. ``only_layer``: send that layer's numbers only
    (``tfviz.viz.instant_layer``; the layer comes from :func:`layer_picker`)."""
    if only_layer is None:
        vega(builder, *args, **kwargs)
        return

    def one(*a, **k):
        return one_layer(builder(*a, **k), only_layer)

    one.__module__ = builder.__module__  # the cache key names the builder and the layer
    one.__qualname__ = f"{builder.__qualname__}[layer {int(only_layer)}]"
    vega(one, *args, **kwargs)


ALL_LAYERS_UP_TO = 4  # a model with more layers sends its instant charts one layer at a time


def layer_picker(n_layers: int, key: str) -> int | None:
    """For a deep model (more than ``ALL_LAYERS_UP_TO`` layers: GPT-2 small has 12), a slider
    choosing the one layer whose numbers the page's instant charts carry; None for our small
    models, whose charts carry every layer and switch layers in the browser. Moving it reruns
    the page: the price of keeping a 12-layer page to one layer's megabytes."""
    if n_layers <= ALL_LAYERS_UP_TO:
        return None
    layer = st.slider("Layer", 0, n_layers - 1, view_value("layer", n_layers - 1), key=key,
                      help="This model is deep: the charts below carry one layer at a time, so "
                           "choosing another layer asks the server (heads and tokens still "
                           "switch in your browser).")
    st.caption(f"{n_layers} layers: the charts below show layer {layer}; the slider above "
               "chooses another.")
    return layer
