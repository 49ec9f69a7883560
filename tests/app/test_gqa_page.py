"""Lesson 18 (/gqa) in AppTest: the maps are gqa-tiny's own for the learner's text and name the
shared K/V head, the shapes and trade-off tables hold the three models' numbers, hostile text is
answered."""
import numpy as np
import pytest

import tfviz
from tests.app.specs import instant_charts, param_values, unpacked
from tfviz.config import preset
from tfviz.decoding.memory import config_kv_cache_bytes
from tfviz.trace import run_with_trace

PAGE = "18_gqa.py"
TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing


@pytest.fixture(scope="module")
def gqa_bundle():
    return tfviz.load("gqa-tiny")


def _maps(at):
    return next((spec, data) for spec, data in instant_charts(at) if "head" in param_values(spec))


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "reverse-encdec"])
def test_maps_are_gqa_tiny_on_the_text_whatever_the_sidebar(app_page, gqa_bundle, model):
    at = app_page(PAGE, model=model, text="the cat sat on the mat")
    spec, data = _maps(at)
    names = data["maps"]["s_names"][0].split("\x1f")  # in the data: the spec is length-free
    assert names == ["K/V head 0", "K/V head 0", "K/V head 1", "K/V head 1"] * 3
    assert param_values(spec)["layer"] == 0 and param_values(spec)["head"] == 0  # no view in the URL
    ids = gqa_bundle.read(at.session_state["text"]).ids
    trace = run_with_trace(gqa_bundle.model, ids)
    maps = data["maps"]
    assert len(maps) == 12  # 3 layers x 4 query heads: one map per query head
    for row in maps.itertuples():
        np.testing.assert_allclose(unpacked(row.v), trace["pattern", row.layer][row.head].reshape(-1),
                                   atol=TOL)
    assert (model != "gpt-tiny") == any("always compares" in i.value for i in at.info)


def test_a_shared_link_opens_its_layer_and_head(app_page):
    spec, _ = _maps(app_page(PAGE, text="the cat sat", layer="2", head="3"))
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (2, 3)
    spec, _ = _maps(app_page(PAGE, text="the cat sat", layer="99", head="x"))
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (2, 0)  # clamped; junk ignored


def test_shapes_and_trade_off_tables(app_page):
    at = app_page(PAGE, text="the cat sat")
    shapes = at.table[0].value
    assert list(shapes["query heads per K/V head"]) == [1, 2, 4]
    assert list(shapes["KV cache per token (fp32, bytes)"]) == [1536, 768, 384]
    trade = at.dataframe[0].value
    assert list(trade["K/V heads"]) == [4, 2, 1]
    for model, loss, params in zip(trade["model"], trade["validation loss"], trade["parameters"]):
        bundle = tfviz.load(model)
        assert params == sum(p.numel() for p in bundle.model.parameters())
        assert config_kv_cache_bytes(preset(model), 1) in list(trade["KV cache per token (bytes)"])
        if bundle.trained:
            assert loss == pytest.approx(bundle.manifest["eval"]["val_loss"])


@pytest.mark.parametrize("text", [
    "a", "🙂🙂🙂", "<script>alert(1)</script>", "مرحبا بالعالم שלום עולם", "attention " * 10_000,
], ids=["one-letter", "emoji", "html", "rtl", "huge"])
def test_hostile_text(app_page, text):
    at = app_page(PAGE, text=text)
    assert not at.exception
    assert instant_charts(at)
    for el in at.markdown:
        assert "<script>" not in el.value


def test_cache_at_a_context_is_bytes_per_token_times_tokens_times_batch(app_page):
    at = app_page(PAGE, text="the cat sat")
    at.number_input(key="gqa_ctx").set_value(4096)
    at.number_input(key="gqa_batch").set_value(8)
    at.run()
    assert not at.exception
    table = at.dataframe[1].value
    # by hand: 2 (K,V) x 3 layers x 16 values x 4 bytes x K/V heads, per token
    per_token = {"MHA": 2 * 3 * 4 * 16 * 4, "GQA": 2 * 3 * 2 * 16 * 4, "MQA": 2 * 3 * 1 * 16 * 4}
    want = {v: per_token[v] * 4096 * 8 / 2**20 for v in per_token}  # 48, 24, 12 MiB
    assert dict(zip(table["variant"], table["KV cache for this context and batch"])) == \
        {v: f"{m:.1f} MiB" for v, m in want.items()} == {"MHA": "48.0 MiB", "GQA": "24.0 MiB", "MQA": "12.0 MiB"}
    assert "lie within" in " ".join(m.value for m in at.markdown)


def test_the_crossing_point_table_and_its_sources(app_page):
    """Where the cache weighs as much as the weights: our three models from their real tensors,
    Llama 2 from its published parameter counts; the intro no longer says the cache always wins."""
    from tfviz.decoding.memory import human_bytes

    at = app_page(PAGE, text="the cat sat")
    table = next(d.value for d in at.dataframe if "cache = weights at (tokens)" in d.value.columns)
    rows = {r["model"]: r for r in table.to_dict("records")}
    for model in ("gpt-tiny", "gqa-tiny", "mqa-tiny"):
        real = sum(p.numel() * 4 for p in tfviz.load(model).model.parameters())
        per_token = config_kv_cache_bytes(preset(model), 1)
        assert rows[model]["cache = weights at (tokens)"] == round(real / per_token)
        assert rows[model]["weights"] == human_bytes(real)
    # Llama-2-7B: 6,738,415,616 parameters, 2·32·32·128·2 bytes of cache per token, both fp16
    assert rows["Llama-2-7B"]["cache = weights at (tokens)"] == round(6_738_415_616 * 2 / (2 * 32 * 32 * 128 * 2))
    assert rows["Llama-2-7B"]["= sequences at full context"] == 6.3
    assert rows["Llama-2-70B"]["cache = weights at (tokens)"] == round(68_976_648_192 * 2 / (2 * 80 * 8 * 128 * 2))
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "not the weights, fills the memory" not in text and "Ainslie et al. (2023)" in text
    assert "holds 2.00 GiB of cache against 12.6 GiB of weights" in text and "about 25,705 cached" in text


def test_decode_time_is_measured_beside_the_cache_bytes(app_page):
    """Step 4: the three models timed on this machine (once per server), each beside its cache
    bytes per token, and the uptraining sentence. No timed assertion: times are only positive."""
    at = app_page(PAGE, text="the cat sat")
    table = next(d.value for d in at.dataframe if "ms per new token after 96 tokens" in d.value.columns)
    assert list(table["variant"]) == ["MHA", "GQA", "MQA"]
    assert list(table["model"]) == ["gpt-tiny", "gqa-tiny", "mqa-tiny"]
    assert list(table["K/V heads"]) == [4, 2, 1]
    for model, nbytes in zip(table["model"], table["KV cache per token (bytes)"]):
        cfg = preset(model)
        assert nbytes == 2 * cfg.n_layers * cfg.kv_heads * cfg.d_head * 4  # by hand: 1536, 768, 384
    assert all(ms > 0 for ms in [*table["ms per new token after 8 tokens"],
                                 *table["ms per new token after 96 tokens"]])
    captions = " ".join(c.value for c in at.caption)
    assert "Measured on this server (" in captions and "the median of 5 rounds" in captions
    assert "on 1 torch thread as the server runs every page" in captions
    text = " ".join(m.value for m in at.markdown)
    assert "After 96 tokens" in text and "A step after 96 tokens took" in text
    assert "MHA's whole cache at 128 tokens is 192 KiB" in text
    assert "uptraining" in text and "5% of the steps" in text and "average" in text
