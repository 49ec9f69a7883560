"""Instant views on a page: draw a chart from ``tfviz.viz.kit.instant``, and keep the URL in step.

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

import html
import json
from dataclasses import dataclass

import streamlit as st

from tfviz.ui.browser_code import module_script
from tfviz.ui.drawing import vega
from tfviz.viz.kit.instant import VIEW_KEYS
from tfviz.viz.kit.instant_layer import as_layer, one_layer


def view_sync() -> None:
    """The page's view-keeping script, ``tfviz/ui/assets/view_sync.js`` (see the module
    docstring), with the view keys as its data. The frame draws it on every page; the browser
    runs it once per page load."""
    st.html(module_script("view_sync.js", {"keys": list(VIEW_KEYS)}), unsafe_allow_javascript=True)


def fit_html(fit: dict[str, dict]) -> str:
    """The hidden marker that tells the view script which token sliders beside it follow the
    sentence: ``fit`` maps a slider's name to ``{"n": positions, "default": where the sentence
    opens}`` (and ``"from": 1`` for a slider counted from 1), sent as JSON data. The script
    (``fitted`` in ``assets/view_sync.js``) gives each slider that range and shows the position
    the charts draw: the learner's, kept in range, else the default.

    >>> fit_html({"pos": {"n": 3, "default": 2}})
    '<div hidden class="tfviz-length" data-fit="{&quot;pos&quot;: {&quot;n&quot;: 3, &quot;default&quot;: 2}}"></div>'
    """
    clean = {str(name): {k: int(v) for k, v in f.items()} for name, f in fit.items()}
    return f'<div hidden class="tfviz-length" data-fit="{html.escape(json.dumps(clean))}"></div>'


def length_marker(n: int, default_query: int | None = None, **defaults: int) -> None:
    """The length of the sentence that the length-free charts beside it draw
    (``tfviz.viz.kit.instant_length``) and which of their token sliders follow it: the query
    sliders, opening on ``default_query`` (when given), and each slider named in ``defaults``
    opening where it says (``pos=n - 1``). The view script fits each to 0..n-1 (``fit_html``)."""
    opens = ({"query": default_query} if default_query is not None else {}) | defaults
    fit_marker({name: {"n": n, "default": at} for name, at in opens.items()})


def fit_marker(fit: dict[str, dict]) -> None:
    """Draw ``fit_html(fit)``: token sliders fitted to counts of their own (a target beside its
    source, the steps of an answer counted from 1)."""
    st.html(fit_html(fit))


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


def instant(builder, *args, only_layer: int | None = None, layer_data: bool = False,
            **kwargs) -> None:
    """Draw the instant chart ``builder(*args, **kwargs)`` (a Vega-Lite dict from
    ``tfviz.viz.kit.instant``): ``tfviz.ui.drawing.vega``, the one cached wrapper, by the name the
    lessons' instant views were written with. ``only_layer``: send that layer's numbers only
    (``tfviz.viz.kit.instant_layer``; the layer comes from :func:`layer_picker`); with
    ``layer_data``, the arguments already hold that layer's numbers alone (``as_layer``)."""
    if only_layer is None:
        vega(builder, *args, **kwargs)
        return
    keep = as_layer if layer_data else one_layer

    def one(*a, **k):
        return keep(builder(*a, **k), only_layer)

    one.__module__ = builder.__module__  # the cache key names the builder and the layer
    alone = " alone" if layer_data else ""
    one.__qualname__ = f"{builder.__qualname__}[layer {int(only_layer)}{alone}]"
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


@dataclass(frozen=True)
class Opening:
    """Where a page's instant charts open on the learner's model: the layer and head of a
    shared link's view (else the first), and, for a deep model, the one layer its charts carry
    (``only``, from :func:`layer_picker`; None when they carry every layer)."""

    only: int | None
    layer: int
    head: int

    @property
    def view(self) -> dict[str, int | None]:
        """The keywords an instant chart of one layer and head takes: layer, head, only_layer."""
        return {"layer": self.layer, "head": self.head, "only_layer": self.only}


def view_opening(cfg, key: str) -> Opening:
    """The opening of a page whose instant charts choose a layer and a head of ``cfg``'s model:
    a deep model's layer slider (key ``key``), then where the charts start."""
    only = layer_picker(cfg.n_layers, key)
    layer = view_value("layer", cfg.n_layers - 1) if only is None else only
    return Opening(only, layer, view_value("head", cfg.n_heads - 1))
