"""Lesson 17 (/long-sequences) in AppTest: every model, the pattern sliders, hostile text."""
import pytest

from tfviz.model.masks import receptive_field

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
