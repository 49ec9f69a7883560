"""Lesson 16's instant charts: valid Vega-Lite, one row of weights per (step, layer, head) holding
the analysis' numbers, and a step slider over every step."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tests.app.specs import unpacked
from tfviz.experiments import kv_cache as kc
from tfviz.viz import kv_cache as ikv
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()


@pytest.fixture(scope="module")
def run():
    gpt = tfviz.load("gpt-tiny")
    side = kc.side_by_side(gpt, gpt.encode("the dog"), 5)
    labels = gpt.token_strings(list(side.prompt_ids + side.cached_ids))
    return side, labels


def test_steps_chart_is_valid_and_carries_every_row(run):
    side, labels = run
    spec = ikv.steps_chart(side.steps, side.rows, labels, (3, 4, 16), step=4)
    validate_jsonschema(spec, SCHEMA)
    step = next(p for p in spec["params"] if p["name"] == "step")
    assert (step["value"], step["bind"]["max"]) == (4, 4)
    rows = spec["datasets"]["weights"]
    assert len(rows) == 5 * 3 * 4
    assert not ikv.rows_pictured(3, 4) and all("img" not in r for r in rows)  # cells, with hover
    cells = spec["vconcat"][2]["layer"][0]
    assert cells["mark"]["type"] == "rect" and cells["encoding"]["tooltip"][-1]["field"] == "v"
    for r in rows:
        np.testing.assert_allclose(unpacked(r["v"]), side.rows[r["step"]][r["layer"], r["head"]],
                                   atol=5e-5 + 1e-9)
    info = spec["datasets"]["timing"][::2]  # two rows per step, the cached run first
    assert [i["run"] for i in info] == [ikv.RUNS[0]] * 5
    assert [i["t"] for i in info] == [2, 3, 4, 5, 6]
    assert [i["shape"] for i in info] == [f"3 × 2 × 4 × {t} × 16" for t in range(2, 7)]
    assert len(spec["datasets"]["strips"]) == 3 * 2 * 6  # K and V strips of every layer, 6 positions


def test_cost_chart_is_valid(run):
    spec = ikv.cost_chart([16, 32], [1.0, 1.1], [1.2, 1.9], [10, 20], [30, 90])
    validate_jsonschema(spec, SCHEMA)
    assert len(spec["datasets"]["cost"]) == 4


def test_steps_chart_is_length_free():
    """Prompts of 3-16 tokens share one spec, whatever the number of steps the model takes
    before <eos> (here 5 at most): each chart carries its own prompt's and answer's tokens,
    its number of steps, and at each step the new query's row of weights, which a full
    recompute of the first t tokens (the trace's own last row, no cache) gives as well."""
    from tests.support.length_free import check_length_free
    from tfviz.trace import run_with_trace

    gpt = tfviz.load("gpt-tiny")
    long = gpt.encode("The animal didn't cross the street because it was too tired, and the dog "
                      "saw the bird on the mat by the door.")

    def build(n):
        side = kc.side_by_side(gpt, long[:n], 5, repeats=1)
        ids = list(side.prompt_ids + side.cached_ids)
        labels = gpt.token_strings(ids)
        chart = ikv.steps_chart(side.steps, side.rows, labels, (3, 4, 16), most=5)
        steps = len(side.steps)
        assert [s.t for s in side.steps] == list(range(n, n + steps))
        assert chart["datasets"]["weights"][0]["s_nsteps"] == steps
        for r in chart["datasets"]["weights"]:
            full = run_with_trace(gpt.model, ids[:n + r["step"]])  # no cache: t tokens read again
            np.testing.assert_allclose(unpacked(r["v"]), full["pattern", r["layer"]][r["head"], -1],
                                       atol=5e-5 + 1e-6)  # four decimals sent; the cached
            # run adds the same float32 products in another order (its row_gap, about 1e-7)
        t_read = n + steps - 1  # the tokens the last step read: the labels the chart counts
        return chart, token_labels(labels[:t_read]), ikv.steps_layout(n, 5)

    built = check_length_free(build)
    step = next(p for p in built[13]["params"] if p["name"] == "step")
    assert (step["value"], step["bind"]["max"]) == (1, 4)  # opens on step 1; the page fits it
    stepi = next(p for p in built[13]["params"] if p["name"] == "stepi")
    assert stepi["expr"] == "max(0, min(step, nsteps - 1))"


# --- a model of GPT-2 small's 12 layers x 12 heads: each step's rows as one picture ----------

def big_bundle():
    """A random decoder of GPT-2 small's 12 layers x 12 heads (narrow: d_model 96), a byte a
    token: its 144 rows of weights per step are what the chart must send as pictures."""
    import dataclasses

    import torch

    from tfviz.bundle import Bundle
    from tfviz.config import preset
    from tfviz.model import Transformer
    from tfviz.tokenizer.byte import ByteTokenizer

    torch.manual_seed(0)
    cfg = dataclasses.replace(preset("gpt-tiny"), n_layers=12, n_heads=12, d_model=96)
    return Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)


def cividis_values(url: str) -> np.ndarray:
    """A picture's pixels read back as numbers in [0, 1]: each pixel's nearest colour on the
    cividis stops (``instant_pictures.CIVIDIS``), interpolated here by numpy on a fine ramp,
    independently of how ``picture`` builds its palette."""
    import base64
    import io

    from PIL import Image

    from tfviz.viz.kit.instant_pictures import CIVIDIS

    assert url.startswith("data:image/png;base64,")
    rgb = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"),
                     dtype=float)  # (rows, cols, 3)
    stops = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in CIVIDIS], dtype=float)
    at = np.linspace(0, 1, 2001)
    ramp = np.stack([np.interp(at, np.linspace(0, 1, len(stops)), stops[:, k]) for k in range(3)],
                    axis=1)  # (2001, 3)
    nearest = np.argmin(((rgb[..., None, :] - ramp) ** 2).sum(-1), axis=-1)  # (rows, cols)
    return at[nearest]


def test_a_big_models_rows_travel_as_pictures():
    """12 x 12 heads: each step sends one picture of its (144, t) weights, a pixel a weight in
    the cells' cividis from 0 to 1, drawn as an image t cells wide on the tokens' axis; the
    spec is valid Vega-Lite and promises no hover values."""
    b = big_bundle()
    side = kc.side_by_side(b, b.encode("the dog sat"), 5, repeats=1)
    labels = b.token_strings(list(side.prompt_ids + side.cached_ids))
    assert ikv.rows_pictured(12, 12)
    spec = ikv.steps_chart(side.steps, side.rows, labels, (12, 12, b.config.d_head), step=2)
    validate_jsonschema(spec, SCHEMA)
    rows = spec["datasets"]["weights"]
    assert [r["step"] for r in rows] == list(range(5)) and all("v" not in r for r in rows)
    for r, s, want in zip(rows, side.steps, side.rows):
        seen = cividis_values(r["img"])
        assert seen.shape == (12 * 12, s.t)  # a row per layer and head, only the keys read
        flat = np.asarray(want).reshape(144, s.t)  # layer-major: row = layer * 12 + head
        # 255 levels of the scale (1/254 apart) and pixels rounded to whole RGB values:
        # read back within 0.006 of the weight
        np.testing.assert_allclose(seen, flat, atol=0.006)
        assert np.abs(flat - flat.mean()).max() > 0.05  # the weights differ: the test can fail
    panel = spec["vconcat"][2]
    image, x, y = panel["layer"]
    assert image["mark"]["type"] == "image" and image["mark"]["width"] == {
        "expr": f"{panel['width']['step']} * cur_t"}
    assert image["transform"] == [{"filter": "datum.step == stepi"}]
    assert image["mark"]["height"] == 144 * panel["height"]["step"]
    assert x["encoding"]["color"]["scale"] == {"domain": [0, 1], "scheme": "cividis"}
    assert y["encoding"]["y"]["scale"]["domain"] == list(range(144))
    assert "tooltip" not in json.dumps(panel)  # no hover values are promised
    assert "one 1 × ' + cur_t + ' row per layer and head" in panel["title"]["text"]["expr"]
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # 5 steps: few marks


def test_a_big_models_pictured_chart_is_length_free():
    """The pictured chart keeps its spec for prompts that share a layout, and each carries
    its own prompt's tokens and every step's picture of the query's weights, which a full
    recompute of the t tokens (no cache) gives as well."""
    from tests.support.length_free import check_length_free
    from tfviz.trace import run_with_trace

    b = big_bundle()
    text = "abcdefghijklmnopqrstuvwxyz"

    def build(n):
        side = kc.side_by_side(b, b.encode(text[:n]), 4, repeats=1)
        ids = list(side.prompt_ids + side.cached_ids)
        labels = b.token_strings(ids)
        chart = ikv.steps_chart(side.steps, side.rows, labels, (12, 12, b.config.d_head), most=4)
        steps = len(side.steps)
        for r in chart["datasets"]["weights"]:
            full = run_with_trace(b.model, ids[:n + r["step"]])  # no cache: t tokens read again
            last = np.stack([full["pattern", lyr][:, -1] for lyr in range(12)])  # (12, 12, t)
            np.testing.assert_allclose(cividis_values(r["img"]), last.reshape(144, -1),
                                       atol=0.006)  # as in the test above
        return chart, token_labels(labels[:n + steps - 1]), ikv.steps_layout(n, 4)

    check_length_free(build)
