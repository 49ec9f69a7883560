"""Lesson 19 (/vision) in AppTest: it loads, its controls redraw the image, the numbers it
shows are patchify's and the model's own, and the shared model is left as it was."""
import numpy as np
import pytest
import torch

import tfviz
from tfviz.vision import SHAPES, patchify, shapes_image

PAGE = "19_vision.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _image(at):
    """The image the page drew, rebuilt from its controls with the generator itself."""
    s = at.session_state
    colour = tuple(int(s["vi_colour"][i:i + 2], 16) / 255 for i in (1, 3, 5))
    return shapes_image(int(s["vi_seed"]), 16, kind=s["vi_kind"], centre=(s["vi_row"], s["vi_col"]),
                        radius=s["vi_radius"], colour=colour, noise=s["vi_noise"])


def _patch_table(at):
    return next(d.value for d in at.dataframe if "pixel (row, column)" in d.value.columns)


def _numbers(at):
    return " ".join(m.value for m in at.markdown)


def test_page_loads_with_every_part(app_page):
    at = _ok(app_page(PAGE))
    assert at.title[0].value == "Vision transformer"
    text = _numbers(at)
    assert "N = HW / P² = 16·16 / 4² = **16**" in text and "P²·C = 4²·3 = **48**" in text
    assert "**48 × 32**" in text and "**17 × 32**" in text
    assert len(at.expander) >= 4  # "Show the code" under each part


@pytest.mark.parametrize("k", [0, 5, 15])
def test_unfolded_patch_is_patchify(app_page, k):
    at = app_page(PAGE)
    at.slider(key="vi_noise").set_value(0.2)
    at.slider(key="vi_patch").set_value(k)
    _ok(at.run())
    image, _ = _image(at)
    table = _patch_table(at)
    shown = np.stack([table["R"], table["G"], table["B"]], axis=1).ravel()  # pixel by pixel, RGB
    np.testing.assert_allclose(shown, patchify(image, 4)[k], atol=5e-5)  # shown to 4 decimals


def test_prediction_is_the_models_argmax_for_every_shape(app_page):
    at = app_page(PAGE)
    vit = tfviz.load("vit-tiny")
    for kind in SHAPES:
        at.selectbox(key="vi_kind").set_value(kind)
        at.slider(key="vi_row").set_value(8.0)
        at.slider(key="vi_col").set_value(7.5)
        at.slider(key="vi_radius").set_value(3.5)
        _ok(at.run())
        image, label = _image(at)
        with torch.no_grad():
            want = vit.config.classes[int(vit.model(torch.from_numpy(image)[None]).argmax())]
        assert at.metric[0].value == want
        assert f"Drawn: **{label.kind}**" in _numbers(at)


def test_randomise_and_seed_redraw_the_controls(app_page):
    at = app_page(PAGE)
    at.number_input(key="vi_seed").set_value(9)
    _ok(at.run())
    _, drawn = shapes_image(9, 16)
    assert at.session_state["vi_kind"] == drawn.kind
    assert at.session_state["vi_radius"] == pytest.approx(drawn.radius, abs=0.25)
    before = at.session_state["vi_seed"]
    at.button[0].click()
    _ok(at.run())
    seed = at.session_state["vi_seed"]
    assert at.session_state["vi_kind"] == shapes_image(seed, 16)[1].kind
    assert seed != before or at.session_state["vi_kind"] == drawn.kind


def test_colour_and_extreme_settings_keep_working(app_page):
    at = app_page(PAGE)
    at.color_picker(key="vi_colour").set_value("#000000")  # a black shape on black
    at.slider(key="vi_radius").set_value(8.0)
    at.slider(key="vi_row").set_value(0.0)
    at.slider(key="vi_noise").set_value(0.5)
    _ok(at.run())
    assert at.metric[0].value in SHAPES


@pytest.mark.parametrize("p, n, dim", [(1, 256, 3), (2, 64, 12), (8, 4, 192), (16, 1, 768)])
def test_patch_size_what_if(app_page, p, n, dim):
    at = app_page(PAGE)
    at.select_slider(key="vi_what_if_p").set_value(p)
    _ok(at.run())
    assert f"= **{n}** patches of P²·C = **{dim}** numbers" in _numbers(at)
    assert f"**{n} × {dim}** matrix" in _numbers(at)


def test_the_shared_model_is_untouched(app_page):
    from tfviz.ui.vision_cache import get_vit

    at = app_page(PAGE)
    shared = get_vit()
    before = {k: v.clone() for k, v in shared.model.state_dict().items()}
    for p in (1, 2, 16):
        at.select_slider(key="vi_what_if_p").set_value(p)
        _ok(at.run())
    at.button[0].click()
    _ok(at.run())
    assert all(torch.equal(before[k], v) for k, v in shared.model.state_dict().items())
    assert all(not p.requires_grad for p in shared.model.parameters())


def test_the_blocks_beside_gpt_tiny_say_what_differs(app_page):
    """The page no longer says the blocks are the same as a text model's: its table is
    block_comparison of the two models' own configs, and its sentence names what differs."""
    from tfviz.analysis.vision import block_comparison

    at = _ok(app_page(PAGE))
    table = next(d.value for d in at.dataframe if "vit-tiny" in d.value.columns)
    rows = {r[""]: r for r in table.to_dict("records")}
    gpt = tfviz.load("gpt-tiny").config
    assert rows["LayerNorm"]["vit-tiny"].startswith("pre-LN") and rows["LayerNorm"]["gpt-tiny"].startswith("post-LN")
    assert (rows["feed-forward activation"]["vit-tiny"], rows["feed-forward activation"]["gpt-tiny"]) == ("GELU", "ReLU")
    want = block_comparison(tfviz.load("vit-tiny").config, gpt)  # the trained bundles' configs
    assert [(r.part, r.vit, r.text) for r in want] == [(k, v["vit-tiny"], v["gpt-tiny"]) for k, v in rows.items()]
    text = _numbers(at)
    assert "the same as a text model's" not in text
    assert ("Different: mask, LayerNorm, LayerNorm after the last block, feed-forward activation, "
            "sizes.") in text
