"""Lesson 19's instant chart: valid Vega-Lite, and the data it sends is the image's pixels and
the trace's class-token rows (every layer and head), so the browser draws the model's numbers."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis.vision import cls_attention
from tfviz.viz import vision as iv
from tfviz.vision import shapes_image


@pytest.fixture(scope="module")
def drawn():
    vit = tfviz.load("vit-tiny")
    image = shapes_image(4, 16, noise=0.1)[0]
    tr = vit.trace(image)
    weights, kept = cls_attention([tr["pattern", l] for l in range(vit.config.n_layers)])
    return image, tr, weights, kept, iv.cls_attention_chart(image, weights, kept, 4, layer=1, head=2)


def test_the_spec_is_valid_vega_lite_and_starts_where_asked(drawn):
    *_, spec = drawn
    validate_jsonschema(json.loads(json.dumps(spec)), load_schema())
    assert {p["name"]: p.get("value") for p in spec["params"]} == {"layer": 1, "head": 2}
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # each cell labelled for screen readers


def test_the_data_is_the_trace_and_the_image(drawn):
    image, tr, weights, kept, spec = drawn
    rows = spec["datasets"]["cls"]
    assert len(rows) == 2 * 4 * 16
    for row in rows:
        want = tr[f"blocks.{row['layer']}.attn.hook_pattern"][row["head"], 0]  # the class token's row
        assert row["v"] == pytest.approx(want[1 + row["patch"]], abs=5e-5)  # sent to 4 decimals
        assert row["own"] == pytest.approx(want[0], abs=5e-5)
        assert (row["r"], row["c"]) == divmod(row["patch"], 4)
    pixels = {(p["y"], p["x"]): p["rgb"] for p in spec["datasets"]["pixels"]}
    assert len(pixels) == 256
    for (i, j), rgb in pixels.items():
        want = np.round(np.clip(image[i, j], 0, 1) * 255).astype(int)
        assert [int(rgb[k:k + 2], 16) for k in (1, 3, 5)] == want.tolist()


def test_wrong_shapes_are_refused(drawn):
    image, _, weights, kept, _ = drawn
    with pytest.raises(ValueError, match="one weight per patch"):
        iv.cls_attention_chart(image, weights[..., :15], kept, 4)


def test_presenter_view_keeps_the_image_square_and_grows_the_weights(drawn):
    """Presenter view makes views 1.5x taller for its larger text; the image's pixels stay
    square, so the line under it stays under it."""
    from tfviz.viz.kit import presenter

    *_, spec = drawn
    picture, grid = spec["hconcat"]
    big_picture, big_grid = presenter.vega_spec(spec)["hconcat"]
    assert big_picture["height"] == picture["height"] == picture["width"] == big_picture["width"]
    assert big_grid["height"] == grid["height"] * presenter.SCALE
    kept = big_picture["layer"][3]["mark"]
    assert kept["type"] == "text" and kept["y"] > big_picture["height"]


def test_the_pixels_tooltip_says_each_pixels_colour_in_0_to_255(drawn):
    image, *_, spec = drawn
    for p in spec["datasets"]["pixels"]:
        assert [int(c) for c in p["RGB"].split(", ")] == \
            np.round(np.clip(image[p["y"], p["x"]], 0, 1) * 255).astype(int).tolist()
