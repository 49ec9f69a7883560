"""Lesson 17 (/long-sequences) in AppTest: every model, the pattern sliders, hostile text, and
the numbers the page shows (measured memory, the what-if's losses and answers) against an
independent computation."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.model.masks import receptive_field
from tfviz.model.transformer import Transformer

PAGE = "17_long_sequences.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec"])
def test_page_runs_for_every_model(app_page, model):
    at = _ok(app_page(PAGE, model=model))
    assert at.title[0].value == "Long sequences"


def test_reach_table_is_the_composed_receptive_field(app_page):
    at = app_page(PAGE)
    at.slider(key="ls_w").set_value(3)
    at.slider(key="ls_n").set_value(64)
    _ok(at.run())
    table = [d for d in at.dataframe if "L·w" in d.value.columns][0].value
    want = [receptive_field("sliding", L, 3, n=64) for L in range(1, 7)]
    assert list(table["reached by composing masks"]) == want == [3 * L for L in range(1, 7)]
    at.selectbox(key="ls_kind").set_value("global (Longformer)")
    _ok(at.run())
    table = [d for d in at.dataframe if "L·w" in d.value.columns][0].value
    assert list(table["reached by composing masks"]) == [63] * 6  # position 0 is global


@pytest.mark.parametrize("text", ["", "A" * 100_000, "<script>alert(1)</script> it 😀",
                                  "שלום עולם it was tired"])
def test_hostile_text(app_page, text):
    at = app_page(PAGE, text=text)
    _ok(at)
    at.slider(key="ls_k").set_value(1)
    _ok(at.run())


PROBE = "The animal didn't cross the street because it was too wide. It refers to the"
DEFAULTS = dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, pattern_seed=0)  # the sliders'


def _frame(at, column):
    return [d.value for d in at.dataframe if column in d.value.columns][0]


def _direct(kind, text):
    """(loss, answer word, probability) of gpt-tiny built with ``kind``, run by plain torch; its
    context is the text's length, so it draws its pattern over the text's positions as the
    explorer does (sine positions do not depend on the context length)."""
    b = tfviz.load("gpt-tiny")
    ids = b.encode(text)
    model = Transformer(dataclasses.replace(b.config, attn_pattern=kind, max_seq_len=len(ids),
                                            **DEFAULTS)).eval()
    model.load_state_dict(b.model.state_dict())
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0].double()
    p = torch.softmax(logits[-1], -1)
    loss = float(F.cross_entropy(logits[:-1], torch.tensor(ids[1:])))
    return loss, b.tokenizer.id_to_token(int(p.argmax())).lstrip("␣"), float(p.max())


def test_whatif_table_is_the_model_run_directly(app_page):
    at = _ok(app_page(PAGE, text=PROBE))
    table = _frame(at, "next-token loss (nats)")
    assert list(table["pattern"]) == ["full", "sliding", "dilated", "global", "bigbird", "strided"]
    for _, row in table.iterrows():
        loss, word, prob = _direct(row["pattern"], PROBE)
        assert row["next-token loss (nats)"] == pytest.approx(loss, abs=1e-3)
        assert row['"it" refers to the …'] == word
        assert row["probability"] == pytest.approx(prob, abs=1e-3)
    assert table['"it" refers to the …'][0] == "street"
    at.slider(key="ls_layer").set_value(0)
    at.slider(key="ls_head").set_value(3)
    _ok(at.run())


def test_default_text_says_how_to_get_the_answer(app_page):
    at = _ok(app_page(PAGE))
    table = _frame(at, "next-token loss (nats)")
    assert '"it" refers to the …' not in table.columns
    text = at.session_state["text"]
    assert table["next-token loss (nats)"][0] == pytest.approx(_direct("full", text)[0], abs=1e-3)
    assert any('end it with "It refers to the"' in c.value for c in at.caption)


def test_one_token_has_no_loss(app_page):
    at = _ok(app_page(PAGE, text="it"))
    assert _frame(at, "next-token loss (nats)")["next-token loss (nats)"].isna().all()
    assert any("single token" in c.value for c in at.caption)


def test_measured_memory_is_shown_and_grows_as_n_squared(app_page):
    at = _ok(app_page(PAGE))
    table = _frame(at, "full memory (MB)")
    full, window, ns = table["full memory (MB)"], table["window memory (MB)"], table["n"]
    for n, f in zip(ns, full):  # the n×n float32 scores, at most twice them and n×32 outputs
        assert n * n * 4 / 2**20 <= f <= (2 * n * n + 4 * n * 32) * 4 / 2**20 + 5e-4
    assert full.iloc[-1] / full.iloc[-2] == pytest.approx(4, rel=0.05)
    assert window.iloc[-1] / window.iloc[-2] == pytest.approx(2, rel=0.05)
