"""Lesson 19's charts as Vega-Lite dicts: valid specs whose data, read back the way the browser
reads it, is the image's pixels, patchify's matrix, vit-tiny's learned weights, the cosine of
its position vectors and torch's softmax of its logits; and presenter view keeps the picture's
pixels square."""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import vision as av
from tfviz.viz.kit import presenter
from tfviz.viz import vision as vv
from tfviz.vision import patchify, shapes_image

SENT = 5e-5  # the matrices travel rounded to 4 decimals (tfviz.viz.kit.instant.DIGITS)


@pytest.fixture(scope="module")
def vit():
    return tfviz.load("vit-tiny")


@pytest.fixture(scope="module")
def image():
    return shapes_image(7, 16, noise=0.1)[0]  # (16, 16, 3) in [0, 1]


def valid(spec: dict) -> dict:
    validate_jsonschema(json.loads(json.dumps(spec)), load_schema())
    return spec


def matrix_of(spec: dict) -> np.ndarray:
    """The matrix a ``matrix_chart`` draws, unpacked as its transforms do in the browser."""
    (row,) = spec["datasets"]["matrix"]
    values = [float(v) for v in row["v"].split(",")]
    ylabels = next(p["value"] for p in spec["params"] if p["name"] == "ylabels")
    return np.array(values).reshape(len(ylabels), -1)


def labels_of(spec: dict, name: str) -> list[str]:
    return next(p["value"] for p in spec["params"] if p["name"] == name)


def test_the_picture_is_the_image_pixel_by_pixel_with_its_grid_and_names(image):
    spec = valid(vv.image_grid_figure(image, 4, title="Your image"))
    pixels = spec["datasets"]["pixels"]
    assert len(pixels) == 16 * 16 and spec["data"] == {"name": "pixels"}  # the chart's own rows
    for p in pixels:
        want = np.round(np.clip(image[p["y"], p["x"]], 0, 1) * 255).astype(int).tolist()
        assert [int(p["rgb"][k:k + 2], 16) for k in (1, 3, 5)] == want
        assert [int(c) for c in p["RGB"].split(", ")] == want  # what the tooltip says
    grid = spec["datasets"]["grid"]  # 3 vertical and 3 horizontal lines, on patch borders
    assert sorted((g["x"], g["x2"]) for g in grid if g["x"] == g["x2"]) == [(4, 4), (8, 8), (12, 12)]
    assert sorted((g["y"], g["y2"]) for g in grid if g["y"] == g["y2"]) == [(4, 4), (8, 8), (12, 12)]
    names = spec["datasets"]["patches"]
    assert [n["label"] for n in names] == [f"p{k}" for k in range(16)]
    for n in names:  # each name inside its patch, row by row as patchify numbers them
        assert (int(n["y"] // 4), int(n["x"] // 4)) == divmod(n["patch"], 4)
    assert spec["description"] == ("The 16×16 image, pixel by pixel, cut by yellow lines into 16 "
                                   "patches of 4×4 pixels, named p0 to p15 row by row.")
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"


@pytest.mark.parametrize("p, lines, named", [(1, 30, False), (2, 14, False), (8, 2, True), (16, 0, True)])
def test_other_patch_sizes_draw_their_own_grid(image, p, lines, named):
    spec = valid(vv.image_grid_figure(image, p, title="t", numbers=(16 // p) ** 2 <= 16))
    assert len(spec["datasets"].get("grid", [])) == lines
    assert len(spec["datasets"].get("patches", [])) == ((16 // p) ** 2 if named else 0)


def test_a_patch_size_that_does_not_cut_the_image_is_refused(image):
    with pytest.raises(ValueError, match="does not cut"):
        vv.image_grid_figure(image, 3, title="t")


def test_the_flattened_patches_are_the_image_read_by_their_column_names(image):
    spec = valid(vv.patches_figure(patchify(image, 4), 4, 3))
    shown = matrix_of(spec)
    assert shown.shape == (16, 48)
    np.testing.assert_allclose(shown, patchify(image, 4), atol=SENT)
    # independent of patchify: column "(r,c)X" of row pk is pixel (r, c) of patch k, channel X
    cols = labels_of(spec, "xlabels")
    for k in (0, 5, 15):
        r0, c0 = divmod(k, 4)
        for i, name in enumerate(cols):
            r, c = int(name[1]), int(name[3])
            want = image[4 * r0 + r, 4 * c0 + c, "RGB".index(name[5])]
            assert shown[k, i] == pytest.approx(want, abs=SENT)
    assert labels_of(spec, "ylabels") == [f"p{k}" for k in range(16)]
    colour = spec["layer"][0]["encoding"]["color"]["scale"]
    assert colour["domain"] == [0.0, 1.0]


@pytest.mark.parametrize("name", ["E", "E_pos", "class_token"])
def test_the_learned_matrices_are_the_models_own(vit, name):
    weights = vit.weights()[name]
    weights = weights[None] if weights.ndim == 1 else weights
    rows = len(weights)
    spec = valid(vv.matrix_figure(weights, title=name, y_labels=[f"r{i}" for i in range(rows)], y_title="row"))
    np.testing.assert_allclose(matrix_of(spec), weights, atol=SENT)
    bound = float(np.abs(weights).max())
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domain"] == pytest.approx([-bound, bound])  # symmetric: white is 0
    assert f"−{bound:.2f} to {bound:.2f}" in spec["description"]
    assert labels_of(spec, "ylabels") == [f"r{i}" for i in range(rows)]


def test_the_first_blocks_input_is_the_models_embedding(vit, image):
    """x₀ as drawn is what vit-tiny's forward pass computes before its first block."""
    steps = av.embedding_steps(image, vit.weights(), 4)
    spec = vv.matrix_figure(steps.x0, title="x0", y_labels=["[CLS]", *(f"p{i}" for i in range(16))],
                            y_title="token")
    with torch.no_grad():
        want = vit.model.embed(torch.from_numpy(image)[None].float())[0].numpy()
    np.testing.assert_allclose(matrix_of(spec), want, atol=1e-4)  # float32 forward vs float64 steps


def test_the_position_similarity_is_the_cosine_of_the_learned_rows(vit):
    E_pos = vit.weights()["E_pos"].astype(float)
    spec = valid(vv.similarity_figure(av.position_similarity(E_pos, 5, 4, 4), 5))
    shown = matrix_of(spec)
    for j in range(16):
        a, b = E_pos[1 + 5], E_pos[1 + j]  # row 0 is the class token's
        want = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        assert shown[divmod(j, 4)] == pytest.approx(want, abs=SENT)
    assert shown[1, 1] == pytest.approx(1.0, abs=SENT)  # p5 with itself
    numbers = spec["layer"][1]
    assert numbers["mark"]["type"] == "text" and numbers["mark"]["fontSize"] > presenter.SMALL_TEXT
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [-1.0, 1.0]


def test_the_bars_are_torchs_softmax_of_the_logits(vit, image):
    tr = vit.trace(image)
    probs, guess = av.prediction(tr.logits, vit.config.classes)
    spec = valid(vv.probabilities_figure(vit.config.classes, probs, "square"))
    with torch.no_grad():
        want = torch.softmax(vit.model(torch.from_numpy(image)[None].float()), -1)[0].numpy()
    rows = spec["datasets"]["rows"]
    assert [r["class"] for r in rows] == list(vit.config.classes)
    for r, w in zip(rows, want):
        assert r["p"] == pytest.approx(float(w), abs=SENT)
        assert r["drawn"] == ("yes" if r["class"] == "square" else "no")
    bars, numbers = spec["layer"]
    assert numbers["encoding"]["text"] == {"field": "p", "type": "quantitative", "title": "probability",
                                           "format": ".3f"}  # each bar's number beside it
    assert bars["encoding"]["color"]["scale"]["range"] == ["#009E73", "#0072B2"]  # drawn: green
    told = "; ".join(f"{c} {float(w):.3f}" for c, w in zip(vit.config.classes, want))
    assert spec["description"] == f"vit-tiny's probability for each class: {told}. The shape drawn is square."


def test_presenter_view_keeps_the_pictures_pixels_square_and_grows_the_rest(image):
    grid = vv.image_grid_figure(image, 4, title="t")
    big = presenter.vega_spec(grid)
    assert (big["width"], big["height"]) == (grid["width"], grid["height"]) == (320, 320)
    matrix = vv.matrix_figure(np.eye(3), title="m", y_labels=list("abc"), y_title="")
    big = presenter.vega_spec(matrix)
    assert big["height"] == matrix["height"] * presenter.SCALE
    # and its colour bar may grow with it (Vega-Lite caps it at 200 px unless told)
    assert big["config"]["legend"]["gradientVerticalMaxLength"] == 200 * presenter.SCALE


def test_the_numbers_under_each_chart_are_its_data_not_its_decoration(vit, image):
    """'The numbers as a table' (chart_numbers.chart_tables) tables what each chart draws: the
    pixels, not the grid lines or the patch names; the bars' classes and probabilities."""
    from tfviz.viz.kit.chart_numbers import chart_tables

    (pixels,) = chart_tables(vv.image_grid_figure(image, 4, title="t"))
    assert pixels.columns == ("colour", "row", "column", "R, G, B (0-255)") and pixels.total == 256
    colour, row, col, rgb = pixels.rows[17]
    assert (row, col) == (1, 1) and colour == "#%02x%02x%02x" % tuple(
        int(v) for v in np.round(np.clip(image[1, 1], 0, 1) * 255))
    probs = np.array([0.2, 0.3, 0.5])
    (bars,) = chart_tables(vv.probabilities_figure(vit.config.classes, probs, "circle"))
    assert bars.columns == ("class", "the shape drawn?", "probability")
    assert bars.rows == tuple((c, "yes" if c == "circle" else "no", p)
                              for c, p in zip(vit.config.classes, probs))
    (matrix,) = chart_tables(vv.similarity_figure(np.eye(2), 0))
    assert matrix.rows == (("0", 1.0, 0.0), ("1", 0.0, 1.0))
