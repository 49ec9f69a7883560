"""Presenter view's chart settings (tfviz.viz.kit.presenter), and the palette it keeps.

The functions are pure: they return a new spec or figure and never write into the one they
get, which is shared by every learner on the server (a cached spec, a shared figure).
"""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from tfviz.viz.kit import presenter
from tfviz.viz.kit.style import CATEGORICAL

FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize")


def _walk(node, path=()):
    """Every (path, key, value) of a nested dict/list."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, key, value
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, path + (i,))


def _at(node, path):
    """node[path[0]][path[1]]..., or None where the path does not exist."""
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _instant_spec() -> dict:
    """A real instant chart (lesson 6's scale on/off maps), as the page sends it."""
    from tfviz.viz import scaling as isc

    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(5), size=(2, 2, 5))  # (L, H, n, n) rows summing to 1
    entropy = -(maps * np.log2(maps)).sum(-1)  # (L, H, n)
    return isc.scale_on_off(maps, maps ** 2 / (maps ** 2).sum(-1, keepdims=True), entropy,
                            entropy, ["a", "b", "c", "d", "e"], layer=1, head=0)


def _chart_spec() -> dict:
    """A chart of the toolkit (``tfviz.viz.kit.charts``): lesson 6's variance chart."""
    from tfviz.analysis.scaling import dot_product_variance
    from tfviz.viz.scaling import variance_chart

    return variance_chart(dot_product_variance((1, 4, 16), 200, 0))


@pytest.mark.parametrize("make", [_instant_spec, _chart_spec], ids=["instant", "chart"])
def test_vega_spec_enlarges_text_and_lines_and_leaves_the_shared_spec_alone(make):
    import altair as alt

    spec = make()
    kept = copy.deepcopy(spec)
    out = presenter.vega_spec(spec)
    assert spec == kept  # the cached spec is untouched
    assert out is not spec and out["config"] is not spec.get("config")
    sizes = [v for _, k, v in _walk(out) if k in FONT_KEYS and isinstance(v, (int, float))]
    assert sizes and min(sizes) >= presenter.MIN_TEXT
    checked = 0
    for path, key, value in _walk(out):
        before = _at(kept, path + (key,))
        if key == "strokeWidth" and isinstance(before, (int, float)) and before > 0:
            assert value >= max(presenter.MIN_STROKE, 2 * before)
            checked += 1
        if key == "height" and isinstance(before, (int, float)) and "mark" not in path:
            assert value == pytest.approx(before * presenter.SCALE)
            checked += 1
    assert checked
    for name, data in spec.get("datasets", {}).items():  # data is shared, not copied
        assert out["datasets"][name] is data
    assert out["config"]["axis"]["labelColor"] == presenter.INK
    alt.Chart.from_dict(out)  # still a valid Vega-Lite spec (validated against the schema)


def test_vega_spec_scales_explicit_sizes_and_fills_in_the_rest():
    spec = {"mark": {"type": "text", "fontSize": 14, "color": "#777777"},
            "encoding": {"x": {"field": "a", "axis": {"labelFontSize": 30, "labelLimit": 100}}},
            "config": {"title": {"fontSize": 18}}}
    out = presenter.vega_spec(spec)
    assert out["mark"] == {"type": "text", "fontSize": 24, "color": "#000000"}  # grey text: black
    assert out["encoding"]["x"]["axis"] == {"labelFontSize": 45, "labelLimit": 200}
    assert out["config"]["title"]["fontSize"] == 27  # explicit config kept, scaled
    assert out["config"]["text"]["fontSize"] == 24  # and presenter defaults where none
    bars = presenter.vega_spec({"mark": {"type": "bar", "color": "#777777"}})
    assert bars["mark"]["color"] == "#777777"  # the data's colours are kept
    cells = presenter.vega_spec({"layer": [{"mark": "rect"},
                                           {"mark": {"type": "text", "fontSize": 12}}]})
    assert cells["layer"][1]["mark"] == {"type": "text", "fontSize": 24, "opacity": 0}  # hidden


def test_the_sweep_chart_keeps_its_log_axis_and_thickens_its_lines():
    from tfviz.viz.lookup import sweep_chart

    rows = [{"temperature": t, "weight on best key": 1 / (1 + t), "distance from hard answer": t}
            for t in (0.1, 1.0, 10.0)]
    chart = sweep_chart(rows, current=1.0)
    out = presenter.vega_spec(chart)
    line, rule, label = out["layer"]
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["mark"]["strokeWidth"] >= 2 * chart["layer"][0]["mark"]["strokeWidth"]
    assert rule["mark"]["strokeWidth"] >= presenter.MIN_STROKE
    assert label["mark"]["fontSize"] >= 24 and out["config"]["axis"]["labelFontSize"] >= 24
    assert out["height"] == 1.5 * chart["height"]


# --- the palette presenter view keeps -------------------------------------------------------
# Machado, Oliveira & Fernandes (2009), severity 1.0: linear-RGB matrices that simulate
# protanopia, deuteranopia and tritanopia.
MACHADO = {
    "protan": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
               [-0.003882, -0.048116, 1.051998]],
    "deutan": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
               [-0.011820, 0.042940, 0.968881]],
    "tritan": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
               [0.004733, 0.691367, 0.303900]],
}


def _linear(colour: str) -> np.ndarray:
    c = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a linear-RGB colour."""
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ np.clip(rgb, 0, 1)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _gap(a: str, b: str, matrix) -> float:
    """ΔE*ab (CIE76) between two colours as a viewer with ``matrix``'s deficiency sees them."""
    m = np.asarray(matrix)
    return float(np.linalg.norm(_lab(m @ _linear(a)) - _lab(m @ _linear(b))))


@pytest.mark.parametrize("kind", ["normal", *MACHADO])
def test_the_categorical_palette_stays_apart_for_colour_blind_viewers(kind):
    """Okabe & Ito's eight colours: every pair at least 15 ΔE apart for each simulated
    dichromacy (measured minimum: 16.1, tritan green/sky blue; about 2.3 is the smallest
    difference an eye notices), and the pair most charts contrast (blue #0072B2 against
    vermillion #D55E00) above 90."""
    matrix = np.eye(3) if kind == "normal" else MACHADO[kind]
    gaps = {(a, b): _gap(a, b, matrix) for a, b in itertools.combinations(CATEGORICAL, 2)}
    assert min(gaps.values()) >= 15, min(gaps.items(), key=lambda kv: kv[1])
    assert gaps[(CATEGORICAL[0], CATEGORICAL[5])] >= 90


def test_the_simulation_is_right_on_known_cases():
    """Independent checks of the helpers above: grey stays grey for every deficiency (each
    Machado row sums to 1), black and white are 100 ΔE apart, and pure red and green, told
    apart by everyone else, come close for a deuteranope."""
    for matrix in MACHADO.values():
        np.testing.assert_allclose(np.asarray(matrix).sum(axis=1), 1.0, atol=1e-5)
    assert _gap("#000000", "#FFFFFF", np.eye(3)) == pytest.approx(100, abs=0.1)
    assert _gap("#FF0000", "#00FF00", np.eye(3)) > 150
    assert _gap("#FF0000", "#00FF00", MACHADO["deutan"]) < 0.5 * _gap("#FF0000", "#00FF00", np.eye(3))


def test_a_long_heatmap_grows_by_half_and_its_labels_stay_on_their_rows():
    from tfviz.viz.positions import pe_heatmap

    table = np.sin(np.arange(64 * 16, dtype=float)).reshape(64, 16)
    chart = pe_heatmap(table, title="PE")
    out = presenter.vega_spec(chart)
    assert out["height"] == presenter.SCALE * chart["height"] and out["width"] == chart["width"]
    rect = out["layer"][0]["encoding"]
    assert rect["y"]["axis"]["labelFontSize"] >= 24
    # 64 rows of 24 px labels do not fit in 540 × 1.5 px: the axis names every k-th row only
    assert rect["y"]["axis"]["values"] == list(range(0, 64, 2))
    assert out["datasets"] is chart["datasets"]  # the data itself is shared, never copied
