"""Lesson 13 (/encoder-decoder) in AppTest: it always reads reverse-encdec, from its own source
box; every number it sends is checked against the model (one full teacher-forced trace, torch's
softmax, the training code's anti-diagonal evaluation); bad sources say what is allowed."""
import numpy as np
import pytest
import torch

import tfviz
from tests.app.specs import fits, instant_charts, param_values, unpacked
from tfviz.decoding.seq2seq import ALLOWED
from tfviz.training.evaluate import reverse_metrics
from tfviz.viz.kit.instant_length import length_cap

PAGE = "13_encoder_decoder.py"
# Four decimals sent (tfviz.viz.kit.instant.DIGITS: 5e-5), and the page's numbers come from one
# step at a time while the reference is one full pass: float32 sums in another order (~1e-6).
TOL = 0.5e-4 + 1e-5


@pytest.fixture(scope="module")
def encdec():
    return tfviz.load("reverse-encdec")


def _chart(at, dataset: str):
    return next((spec, data) for spec, data in instant_charts(at) if dataset in data)


def _source(at, text: str):
    at.text_input(key="ed_source").set_value(text).run()
    assert not at.exception, at.exception
    return at


def check_numbers(at, encdec, source: str) -> None:
    """Every chart and table of the page against reverse-encdec reading ``source``."""
    tr = encdec.trace(source)  # the encoder reads the source; the decoder <bos> + its answer
    n, T = len(source), len(tr.tokens)
    assert encdec.tokenizer.decode(tr.ids[1:]) == source[::-1]
    L, H = encdec.config.n_layers, encdec.config.n_heads
    assert any(f"the model writes **`{source[::-1]}`**, the exact reverse, in {T} decoding steps"
               in m.value for m in at.markdown)

    spec, data = _chart(at, "enc")  # the encoder: every layer and head, and the memory
    for _, row in data["enc"].iterrows():
        np.testing.assert_allclose(unpacked(row["v"]).reshape(n, n),
                                   tr["pattern", int(row["layer"]), "enc"][int(row["head"])], atol=TOL)
    assert len(data["enc"]) == encdec.config.enc_layers * H
    memory = tr[f"enc_blocks.{encdec.config.enc_layers - 1}.hook_resid_post"]
    np.testing.assert_allclose(unpacked(data["memory"]["v"].iloc[0]).reshape(memory.shape), memory, atol=TOL)
    # it opens on the encoder's own sharpest row's head (not the cross-attention head's number),
    # and the text says how concentrated that row is, from the trace
    tops = np.stack([tr["pattern", layer, "enc"] for layer in range(encdec.config.enc_layers)]).max(-1)
    layer, head, query = np.unravel_index(int(tops.argmax()), tops.shape)
    first = data["enc"].iloc[0]  # the head it opens on rides in the data: the spec is length-free
    assert (first["s_open_layer"], first["s_open_head"]) == (layer, head)
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (-1, -1)  # no link: open there
    encoder_fit, decoder_fit = fits(at)
    assert encoder_fit == {"layer": {"n": encdec.config.enc_layers, "default": layer},
                           "head": {"n": H, "default": head}}
    text = " ".join(m.value for m in at.markdown)
    assert "spreads over the whole source" not in text
    if n > 1:
        assert f"**layer {layer}, head {head}** gives **{tops.max():.2f}** of `{source[query]}`'s" in text
        assert f"gives no token more than {tops.min():.2f}" in text

    spec, data = _chart(at, "cross")  # the decoder, step by step
    lower = np.tril(np.ones((T, T), bool))
    for _, row in data["self"].iterrows():
        sent = unpacked(row["v"]).reshape(T, T)
        want = tr["pattern", int(row["layer"])][int(row["head"])]
        assert np.isnan(sent[~lower]).all()
        np.testing.assert_allclose(sent[lower], want[lower], atol=TOL)
    for _, row in data["cross"].iterrows():
        np.testing.assert_allclose(unpacked(row["v"]).reshape(T, n),
                                   tr["cross_attn.pattern", int(row["layer"])][int(row["head"])], atol=TOL)
    assert len(data["self"]) == len(data["cross"]) == L * H
    probs = torch.softmax(torch.from_numpy(tr.logits).double(), -1).numpy()  # (T, vocab)
    for s in range(T):
        bars = data["next"][data["next"]["step"] == s + 1].sort_values("rank")
        top = np.argsort(-probs[s], kind="stable")[:len(bars)]
        assert list(bars["token"]) == encdec.token_strings(top)
        np.testing.assert_allclose(bars["p"], probs[s, top], atol=TOL)
        assert list(bars["written"])[0] == "written"  # greedy writes the most probable
    assert param_values(spec)["step"] == 1 and spec["params"][0]["bind"]["max"] == length_cap(T)
    assert decoder_fit["step"] == {"n": T, "default": 1, "from": 1}  # the view script fits it to T

    ids = encdec.encode(source)
    ref = np.array(reverse_metrics(encdec.model, encdec.tokenizer, [(ids, ids[::-1])])["anti_diagonal_weights"])
    table = next(d.value for d in at.dataframe if "head 0" in d.value.columns)
    shown = table[[f"head {h}" for h in range(H)]].to_numpy(dtype=float)
    np.testing.assert_allclose(shown, ref, atol=TOL)  # both rounded to 4 decimals
    layer, head = np.unravel_index(int(ref.argmax()), ref.shape)
    first = data["self"].iloc[0]
    assert (first["s_open_layer"], first["s_open_head"]) == (layer, head)  # it opens there
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (-1, -1)
    assert decoder_fit["layer"] == {"n": L, "default": layer} and decoder_fit["head"] == {"n": H, "default": head}
    assert any(f"**layer {layer}, head {head}** does it best" in m.value and
               f"**{ref[layer, head]:.3f}**" in m.value for m in at.markdown)

    kv = next(d.value for d in at.dataframe if "K, V projections per layer" in d.value.columns)
    assert list(kv["K, V projections per layer"]) == [1, T] and list(kv["steps"]) == [T, T]
    assert list(kv["answer"]) == [source[::-1]] * 2


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec"])
def test_the_page_reads_reverse_encdec_whatever_the_sidebar_says(app_page, encdec, model):
    at = app_page(PAGE, model=model)
    assert at.title[0].value == "Encoder, decoder, encoder-decoder"
    assert at.session_state["model"] == model
    assert (model != "reverse-encdec") == any("always uses **reverse-encdec**" in i.value for i in at.info)
    assert at.text_input(key="ed_source").value == "hello" and not at.error
    check_numbers(at, encdec, "hello")


def test_every_number_for_a_typed_source(app_page, encdec):
    at = _source(app_page(PAGE), "Abc, DEFG")
    assert any('Read as "abcdefg"' in c.value for c in at.caption)
    check_numbers(at, encdec, "abcdefg")


def test_the_architectures_table_and_masks(app_page):
    at = app_page(PAGE)
    table = at.table[0].value
    assert list(table.index) == ["Encoder-only", "Decoder-only", "Encoder-decoder"]
    assert list(table["in this app"]) == ["bert-tiny", "gpt-tiny", "reverse-encdec"]
    spec, data = _chart(at, "mask00")
    allowed = {name: frame.pivot(index="row", columns="col", values="allowed").to_numpy()
               for name, frame in data.items()}
    assert allowed["mask00"].all() and allowed["mask20"].all() and allowed["mask22"].all()
    causal = np.tril(np.ones((4, 4), bool))
    np.testing.assert_array_equal(allowed["mask10"], causal)
    np.testing.assert_array_equal(allowed["mask21"], causal)


def test_the_source_of_the_sidebar_is_the_default_when_it_can_be_read(app_page, encdec):
    at = app_page(PAGE, model="reverse-encdec", text="pop")
    assert at.text_input(key="ed_source").value == "pop"
    check_numbers(at, encdec, "pop")


def test_a_shared_link_opens_its_step_layer_and_head(app_page):
    at = app_page(PAGE, step="3", layer="0", head="1")
    spec, _ = _chart(at, "cross")
    assert (param_values(spec)["step"], param_values(spec)["layer"], param_values(spec)["head"]) == (3, 0, 1)
    spec, _ = _chart(at, "enc")
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (0, 1)
    at = app_page(PAGE, step="999")  # past the last step: the layout's last, drawn as the 6th
    spec, _ = _chart(at, "cross")
    assert param_values(spec)["step"] == length_cap(6) and fits(at)[1]["step"]["n"] == 6


@pytest.mark.parametrize("typed, named", [
    ("", None), ("   ", None), ("xyz", "`x`, `y`, `z`"), ("abc😀", "`😀`"),
    ("<script>alert(1)</script>", "`<`, `s`, `r`"), ("שלום עולם", "`ש`"),
    ("abcdefghijklm", "13 letters"), ("a" * 100_000, "more than 2,000 letters"), ("\u202eabc", "U+202E"),
    ("a*b_c`d$e", "`*`, `_`, `` ` ``, `$`"),
])
def test_a_source_that_cannot_be_read_says_what_is_allowed(app_page, encdec, typed, named):
    at = _source(app_page(PAGE), typed)
    assert len(at.error) == 1 and at.error[0].value.endswith(ALLOWED)
    if named:
        assert named in at.error[0].value
    assert any('shows the example "hello"' in c.value for c in at.caption)
    check_numbers(at, encdec, "hello")  # the page still works, on the example
    _source(at, "dog")  # and a good source clears the message
    assert not at.error
    check_numbers(at, encdec, "dog")
