"""Every lesson that applies to a decoder, on a random checkpoint of GPT-2 small's shape (12 x
12, d = 768, 50,257 ids, 64 tokens of text): the page runs without an exception, and numbers
it sends to the browser are the trace's, read back out of what AppTest received.

The folder is named as a model the way the sidebar lists one: ``model_names`` (in the modules
that read it) gets the folder added, and the page is opened with ``?model=FOLDER``; the
shared loader then opens it with ``tfviz.load``, as it opens any folder.
"""
from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

import tfviz
from bench.make_gpt2_folder import TEXT_64
from tests.app.specs import assert_layernorm_stats_are_the_hooks, instant_charts
from tests.support.claims import broken, page_words
from tests.support.gpt2_small import gpt2_small_folder

pytestmark = pytest.mark.slow
# A picture's cell is one of 255 steps of its colour scale (tfviz.viz.kit.instant_pictures.LEVELS):
# a weight in [0, 1] comes back to within half a step.
PICTURE_TOLERANCE = 0.5 / 254 + 1e-6


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(gpt2_small_folder(tmp_path_factory))


@pytest.fixture(scope="module")
def trace(folder):
    return tfviz.load(folder).trace(TEXT_64)


@pytest.fixture
def page(folder, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP
    import tfviz.ui.cache as cache
    import tfviz.ui.live as live
    import tfviz.ui.sidebar as sidebar

    listed = cache.model_names
    for module in (cache, sidebar, live):
        monkeypatch.setattr(module, "model_names", lambda: [*listed(), folder])

    def run(lesson: str, **query):
        # A page of GPT-2 small's size runs for tens of seconds on a busy 2-core machine (lesson
        # 16 times a generation): more than the 90 s of the other app tests' runs.
        at = AppTest.from_file(APP, default_timeout=600)
        for key, value in {"model": folder, "text": TEXT_64, **query}.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        at.switch_page(f"lessons/{lesson}").run()
        assert not at.exception, at.exception
        assert at.session_state["model"] == folder  # the page ran on the checkpoint
        return at

    return run


def picture_values(url: str) -> np.ndarray:
    """A palette picture's cells as positions on its colour scale, 0..1."""
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert image.mode == "P"
    return np.asarray(image, dtype=float) / 254


def shown_patterns(at, trace) -> int:
    """How many attention maps (or map rows) the page sent that equal the trace's patterns:
    pictures of a (layer, head) map, or packed rows of (layer, head, query) weights."""
    from tests.app.specs import unpacked
    from tfviz.viz.kit.instant import DIGITS

    matched = 0
    for _, data in instant_charts(at):
        for table in data.values():
            cols = set(table.columns)
            if {"layer", "head", "img"} <= cols:
                for row in table.itertuples():
                    shown = picture_values(row.img)
                    want = trace["pattern", int(row.layer)][int(row.head)]
                    matched += shown.shape == want.shape and np.abs(shown - want).max() <= PICTURE_TOLERANCE
            elif {"layer", "head", "q", "w"} <= cols:
                for row in table.itertuples():
                    want = trace["pattern", int(row.layer)][int(row.head), int(row.q)]
                    shown = np.nan_to_num(unpacked(row.w))  # empty: a masked key, weight 0
                    matched += (shown.shape == want.shape and
                                np.abs(shown - want).max() <= 0.5 * 10 ** -DIGITS + 1e-6)
    return matched


def test_tour(page, trace):
    at = page("01_tour.py")
    bars = [spec for spec in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))
            if "next token is probably" in json.dumps(spec.get("title", ""))]
    rows = bars[0]["layer"][0]["data"]["values"]
    logits = trace.logits[-1].astype(np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert [r["id"] for r in rows] == np.argsort(-p)[:5].tolist()
    # The page traced in its own thread: float32 logits through 12 blocks of 768, whose last
    # bits another kernel set moves by 4e-6 relative (ATEN_CPU_CAPABILITY=default, measured)
    np.testing.assert_allclose([r["probability"] for r in rows], np.sort(p)[::-1][:5], rtol=5e-5)
    assert "12 blocks, 12 heads, 768 numbers per token" in " ".join(c.value for c in at.caption)


def test_lookup_weights_of_every_head_and_query_of_the_chosen_layer(page, trace):
    at = page("04_lookup.py", layer="10")
    assert at.slider(key="lk_layer").value == 10
    assert layers_sent(at) == {10}
    assert shown_patterns(at, trace) >= 12 * 64




def layers_sent(at) -> set[int]:
    """Every layer number in the rows of the page's instant charts."""
    return {int(x) for _, data in instant_charts(at) for table in data.values()
            if "layer" in table.columns for x in table["layer"].dropna()}


def test_self_attention_sends_the_chosen_layer_only(page, trace):
    """Twelve layers of 64-token maps and vectors came to 38 MB: a deep model's page carries
    the layer its Layer slider chooses (here from the link), all twelve heads of it."""
    at = page("05_self_attention.py", layer="7")
    assert at.slider(key="sa_layer").value == 7
    assert layers_sent(at) == {7}
    assert shown_patterns(at, trace) >= 12 + 12 * 64  # the map of each head, and each query's row


def test_multihead_maps_of_every_layer_and_head(page, trace):
    at = page("07_multihead.py")
    assert shown_patterns(at, trace) >= 12 * 12


def test_layernorm_statistics_are_the_hooks(page, trace, folder):
    at = page("09_layernorm.py", layer="4")
    assert layers_sent(at) == {4}
    assert_layernorm_stats_are_the_hooks(at, trace, 4)
    assert_worked_example_pictures_are_torchs_layer_norm(at, trace, folder, 4)


def assert_worked_example_pictures_are_torchs_layer_norm(at, trace, folder, layer):
    """At d = 768 the worked example's three strips travel as one picture per (norm, token):
    decoded, its rows are the norm's input (the hooks: GPT-2 is pre-LN), that input normalised
    and torch's layer_norm with the checkpoint's own γ and β, to within a palette step."""
    import torch
    import torch.nn.functional as F
    from safetensors.numpy import load_file

    from tfviz.viz.kit.instant_length import SENTENCE_PREFIX

    weights = load_file(f"{folder}/model.safetensors")

    def param(suffix):
        return torch.tensor(next(v for k, v in weights.items() if k.endswith(suffix)), dtype=torch.float64)

    charts = [data for _, data in instant_charts(at) if "vectors" in data and "img" in data["vectors"]]
    assert len(charts) == 1
    data = charts[0]
    bound = float(data["numbers"][f"{SENTENCE_PREFIX}bound"].iloc[0])
    inputs = {0: ("hook_resid_pre", "ln_1"), 2: ("hook_resid_mid", "ln_2")}  # NORM_ORDER codes
    rows = data["vectors"]
    assert set(rows.layer) == {layer} and set(rows.norm) == set(inputs)
    assert len(rows) == 2 * len(trace.tokens)
    for row in rows.itertuples():
        hook, ln = inputs[int(row.norm)]
        x = torch.tensor(trace[f"blocks.{layer}.{hook}"][int(row.pos)], dtype=torch.float64)
        want = np.stack([x.numpy(), F.layer_norm(x, (768,), eps=1e-5).numpy(),
                         F.layer_norm(x, (768,), param(f"h.{layer}.{ln}.weight"),
                                      param(f"h.{layer}.{ln}.bias"), eps=1e-5).numpy()])
        shown = -bound + picture_values(row.img) * 2 * bound  # (3, 768)
        assert shown.shape == (3, 768)
        # half a palette step of 2·bound/254, plus float32 against float64
        np.testing.assert_allclose(shown, want, atol=bound / 254 + 1e-4)


def test_forward_walk_of_one_block(page, trace):
    at = page("12_forward.py")
    assert at.slider(key="fw_block").value == 0
    walk = next(data["numbers"] for _, data in instant_charts(at) if "numbers" in data)
    attention = walk[walk["step"] == 3]  # tokens, embeddings, positions, then block 0's attention
    assert sorted(attention["head"]) == list(range(12))
    for row in attention.itertuples():
        shown = picture_values(row.img)
        assert np.abs(shown - trace["pattern", 0][int(row.head)]).max() <= PICTURE_TOLERANCE


def test_kv_cache(page, trace):
    at = page("16_kv_cache.py")
    per_token = 2 * 12 * 12 * 64 * 4  # K and V, 12 layers, 12 heads, d_head 64, 4-byte floats
    assert any(f"{per_token:,} bytes per token" in c.value for c in at.caption)
    # a 124M model is timed once a step (bundle.facts.timing_repeats), and the page says so: the
    # old text claimed "the best of 5 runs" and "fixed overhead" for it
    words = page_words(at)
    assert "a single run" in words and "best of 5" not in words and "fixed overhead" not in words
    assert broken({"kv-cache": words}, at.session_state["model"]) == []
    # 144 rows of weights a step travel as one picture a step; step 0 reads the whole prompt,
    # so its rows are the last query's row of the trace's pattern in every layer and head
    weights = next(data["weights"] for _, data in instant_charts(at) if "weights" in data)
    assert {"step", "img"} <= set(weights.columns) and "v" not in weights.columns
    first = picture_values(weights.loc[weights["step"] == 0, "img"].iloc[0])
    want = np.stack([trace["pattern", lyr][:, -1] for lyr in range(12)]).reshape(144, -1)
    assert first.shape == want.shape == (144, len(trace.tokens))
    assert np.abs(first - want).max() <= PICTURE_TOLERANCE


@pytest.mark.parametrize("lesson", ["06_scaling.py", "08_masking.py"])
def test_scaling_and_masking_send_the_chosen_layer(page, lesson):
    at = page(lesson, layer="5")
    assert layers_sent(at) == {5}


@pytest.mark.parametrize("lesson", ["03_embeddings.py", "10_ffn.py", "14_decoding.py",
                                    "17_long_sequences.py"])
def test_page_runs(page, lesson):
    """Runs without an exception on the checkpoint (the fixture asserts it)."""
    at = page(lesson)
    assert at.title
