"""Lesson 16 (/kv-cache) in AppTest: both runs write what generate() writes, the "identical"
claim follows a real comparison, the chart's rows are the full recompute's last rows, the cost
table is the formula by hand, the calculator is kv_cache_bytes by hand, and hostile or empty
prompts get an answer, never a traceback. Timings: present and positive, never how fast."""
import numpy as np
import pytest

import tfviz
from tests.app.specs import instant_charts, param_values, unpacked
from tfviz.decoding import generate
from tfviz.decoding.generate import continuation_text
from tfviz.trace import run_with_trace

PAGE = "16_kv_cache.py"
DEFAULT = "The animal didn't cross the street because it was too tired."
TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def _ok(at):
    assert not at.exception, at.exception
    return at


def _set(at, **widgets):
    for key, value in widgets.items():
        widget = next(w for w in (*at.slider, *at.number_input, *at.text_area, *at.selectbox,
                                  *at.select_slider) if w.key == key)
        widget.set_value(value)
    return _ok(at.run())


def _table(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _steps_chart(at):
    return next((spec, data) for spec, data in instant_charts(at) if "weights" in data)


@pytest.mark.parametrize("model", ["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec"])
def test_the_page_uses_a_decoder_whatever_the_sidebar_says(app_page, model):
    at = app_page(PAGE, model=model)
    assert at.title[0].value == "The KV cache"
    used = model if model in ("gpt-tiny", "moe-tiny") else "gpt-tiny"
    assert (used != model) == any("is not a decoder" in i.value for i in at.info)
    bundle = tfviz.load(used)
    ids = bundle.encode(DEFAULT)
    for box, cache in zip(at.code[:2], (True, False)):  # both runs, as generate() writes them
        g = generate(bundle, ids, max_new_tokens=20, use_cache=cache)
        assert box.value == bundle.tokenizer.decode(g.prompt_ids) + g.text
    assert at.text_area(key="kv_prompt").value == DEFAULT
    assert len(instant_charts(at)) == 2  # the steps, the cost over lengths
    assert sum(e.label == "Show the code" for e in at.expander) == 3


def test_identical_is_a_real_comparison(app_page, gpt):
    at = _set(app_page(PAGE), kv_prompt="the dog", kv_new=20)
    with_cache = generate(gpt, "the dog", max_new_tokens=20, use_cache=True)
    without = generate(gpt, "the dog", max_new_tokens=20, use_cache=False)
    assert with_cache.new_ids == without.new_ids  # the reference itself agrees
    claim = next(s.value for s in at.success)
    assert claim.startswith(f"**The same {len(with_cache.new_ids)} tokens, compared id by id**")
    table = _table(at, "writes")
    assert list(table["writes"]) == gpt.token_strings(list(with_cache.new_ids))
    assert list(table["t"]) == list(range(2, 2 + len(with_cache.new_ids)))
    assert (table["ms (cache)"] >= 0).all() and (table["ms (no cache)"] >= 0).all()
    assert list(table["cache bytes (fp32)"]) == [2 * 3 * 4 * 16 * t * 4 for t in table["t"]]
    assert list(table["cache shape (layers × 2 × K/V heads × t × d_head)"]) == [
        f"3 × 2 × 4 × {t} × 16" for t in table["t"]]
    assert at.code[0].value == "the dog" + with_cache.text


def test_moe_tiny_runs_are_the_same_too(app_page):
    """moe-tiny's capacity is counted per prefix, so the cached run matches the re-read; the
    page says so only when the ids really agree."""
    moe = tfviz.load("moe-tiny")
    at = app_page(PAGE, model="moe-tiny")
    ids = moe.encode(DEFAULT)
    assert generate(moe, ids, max_new_tokens=20).new_ids == \
        generate(moe, ids, max_new_tokens=20, use_cache=False).new_ids
    assert at.success and "The same" in at.success[0].value
    assert not any("part at new token" in w.value for w in at.warning)


def test_the_rows_are_the_full_recomputes_last_rows(app_page, gpt):
    at = _set(app_page(PAGE), kv_prompt="the dog", kv_new=6)
    spec, data = _steps_chart(at)
    assert param_values(spec)["step"] == 1  # opens on the first step that reads the cache
    assert data["weights"]["s_nsteps"][0] == 6  # the steps taken, read by the length-free chart
    fit = [m.proto.body for m in at.get("html") if m.proto.body.startswith('<div hidden class="tfviz-length"')]
    assert fit == ['<div hidden class="tfviz-length" data-fit="{&quot;step&quot;: {&quot;n&quot;: 6, '
                   '&quot;default&quot;: 1}}"></div>']  # the view script fits the step slider to it
    g = generate(gpt, "the dog", max_new_tokens=6)
    ids = list(g.prompt_ids + g.new_ids)
    weights = data["weights"]
    for s in range(6):
        tr = run_with_trace(gpt.model, ids[:2 + s])  # a full recompute of the first t tokens
        for _, row in weights[weights["step"] == s].iterrows():
            want = tr["pattern", int(row["layer"])][int(row["head"]), -1]
            np.testing.assert_allclose(unpacked(row["v"]), want, atol=TOL)
    timing = data["timing"]
    assert len(timing) == 12 and (timing["ms"] > 0).all()
    assert list(timing[timing["run"] == "re-reading everything"]["fed"]) == [2, 3, 4, 5, 6, 7]
    assert list(timing[timing["run"] == "with the KV cache"]["fed"]) == [2, 1, 1, 1, 1, 1]


def test_cost_table_is_the_formula_by_hand(app_page):
    at = app_page(PAGE)
    table = _table(at, "multiply-adds (cache)")
    assert list(table["t"]) == [64, 128, 192, 256, 384, 512]  # opens on 512: the t² shows
    one = 3 * (64 * 12 * 16 + 64 * 64 + 2 * 64 * 256) + 64 * 600  # a token outside attention
    for _, r in table.iterrows():
        t = int(r["t"])
        assert r["multiply-adds (cache)"] == one + 3 * 2 * t * 64
        assert r["multiply-adds (no cache)"] == t * one + 3 * 2 * t * t * 64
        assert r["scores computed (no cache: L·H·t²)"] == 12 * t * t
        assert r["ms (cache)"] > 0 and r["ms (no cache)"] > 0
    at = _set(at, kv_top=128)  # the model's own context
    assert list(_table(at, "multiply-adds (cache)")["t"]) == [16, 32, 48, 64, 96, 128]
    assert tfviz.load("gpt-tiny").model.cfg.max_seq_len == 128  # the shared model is untouched


def test_the_calculator_is_kv_cache_bytes_by_hand(app_page):
    at = app_page(PAGE)
    # Llama-2-7B, 4096 tokens, fp16: 32 layers · 2 · 32 K/V heads · 128 · 4096 · 2 bytes
    assert 32 * 2 * 32 * 128 * 4096 * 2 == 2 * 2**30
    assert at.metric[-1].value == "2.00 GiB"
    assert any("= **2,147,483,648 bytes**" in m.value for m in at.markdown)
    at = _set(at, kv_model="Llama-2-70B (GQA)")
    assert (at.number_input(key="kv_layers").value, at.number_input(key="kv_heads").value) == (80, 8)
    want = 80 * 2 * 8 * 128 * 4096 * 2
    assert any(f"= **{want:,} bytes**" in m.value for m in at.markdown)
    assert at.metric[-1].value == "1.25 GiB"
    at = _set(at, kv_batch=8, kv_dtype="fp32 (4 bytes)")
    want = 80 * 2 * 8 * 128 * 4096 * 8 * 4
    assert any(f"= **{want:,} bytes**" in m.value for m in at.markdown)
    assert at.metric[-1].value == "20.0 GiB"
    at = _set(at, kv_model="Mistral-7B (GQA)")  # its rolling cache: the window, 4096 tokens
    assert at.number_input(key="kv_tokens").value == 4096
    assert any(f"= **{32 * 2 * 8 * 128 * 4096 * 8 * 4:,} bytes**" in m.value for m in at.markdown)
    assert any("reads up to 8,192 tokens" in c.value and "at most 4,096 tokens" in c.value
               for c in at.caption)
    table = _table(at, "at full context")
    mistral = table[table["model"] == "Mistral-7B (GQA)"].iloc[0]  # the row says what it caches
    assert (mistral["context"], mistral["tokens cached"], mistral["at full context"]) == (8192, 4096, "512 MiB")
    assert dict(zip(table["model"], table["per token"]))["GPT-2 small"] == "36.0 KiB"  # 2·12·12·64·2


def test_an_empty_prompt_waits_and_the_rest_still_works(app_page):
    at = _set(app_page(PAGE), kv_prompt="   \n  ")
    assert any("Type a prompt above" in i.value for i in at.info)
    assert not at.success and not any("weights" in d for _, d in instant_charts(at))
    assert _table(at, "multiply-adds (cache)") is not None and at.metric[-1].value == "2.00 GiB"


@pytest.mark.parametrize("prompt", [
    "The Dog JUMPED", "🙂🙂🙂 the dog 🐕", "<script>alert(1)</script> <eos> ``` **bold**",
    "مرحبا بالعالم שלום עולם", "x" * 100_000, "\u202e\u200b\x00tired",
], ids=["capitals", "emoji", "html", "rtl", "huge-chars", "controls"])
def test_hostile_prompts(app_page, prompt):
    at = _set(app_page(PAGE), kv_prompt=prompt, kv_new=8)
    assert at.success or at.warning  # the comparison is stated either way
    assert "weights" in {name for _, data in instant_charts(at) for name in data}
    for el in at.markdown:
        assert "<script>" not in el.value
    if len(prompt) > 1000:  # cut to the characters the app keeps, then to the room left
        assert any("kept its first" in c.value for c in at.caption)
        assert any("continues from the last" in c.value for c in at.caption)


def test_the_prompt_follows_the_sidebar_until_the_learner_types_one(app_page):
    at = app_page(PAGE)
    assert at.text_area(key="kv_prompt").value == DEFAULT
    at = _set(at, _typed="the dog ran to the park")  # the sidebar's text changes
    assert at.text_area(key="kv_prompt").value == "the dog ran to the park"
    bundle = tfviz.load("gpt-tiny")  # and the runs use it: the prompt the model read, then its guesses
    g = generate(bundle, bundle.encode("the dog ran to the park"), max_new_tokens=20, use_cache=True)
    assert at.code[0].value == bundle.tokenizer.decode(g.prompt_ids) + g.text
    at = _set(at, kv_prompt="the cat")  # a prompt of the learner's own is kept...
    at = _set(at, _typed="a bird sat on the mat")  # ...when the sidebar changes again
    assert at.text_area(key="kv_prompt").value == "the cat"
