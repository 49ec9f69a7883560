"""The teacher's page in the real app frame: choices, previews, download buttons, answer key."""

import pytest

from tfviz.exercises.registry import make_instance
from tfviz.exercises.worksheet import worksheet, worksheet_html

PAGE = "22_teacher.py"
DOWNLOADS = ["tc_dl_sheet_md", "tc_dl_sheet_html", "tc_dl_key_md", "tc_dl_key_html"]




def _ok(at):
    assert not at.exception, at.exception
    return at


def _downloads(at):
    return {b.proto.id.rsplit("-", 1)[-1]: b.proto for b in at.get("download_button")}


def _markdown(at):
    return [str(m.value).strip() for m in at.markdown]  # st.markdown trims the text


def test_default_sheet_has_four_downloads_and_a_key_with_the_right_numbers(app_page):
    at = app_page(PAGE)
    assert at.title[0].value == "Teacher: printable class sheets"
    buttons = _downloads(at)
    assert sorted(buttons) == sorted(DOWNLOADS)
    assert buttons["tc_dl_sheet_md"].url.endswith(".md")
    assert buttons["tc_dl_key_html"].url.endswith(".html")
    assert "Answer key" in buttons["tc_dl_key_md"].label
    ids = ["flying-arrows", "thinking-machines", "causal-mask"]
    sheet, key = worksheet(ids, 3, 100)
    shown = _markdown(at)
    assert sheet.strip() in shown and key.strip() in shown  # previews = the files
    for code in (100, 101, 102):
        out = make_instance("flying-arrows", code).field("output").answer_text
        weights = make_instance("thinking-machines", code).field("weights").answer_text
        assert f"**{out}**" in key and f"**{weights}**" in key
        assert f"(class code {code})" in sheet
    assert "variant **c** → **102**" in " ".join(shown)


def test_changing_every_widget(app_page):
    at = app_page(PAGE)
    _ok(at.multiselect(key="tc_pick").set_value(["how-are-you", "beam-search"]).run())
    _ok(at.number_input(key="tc_n").set_value(2).run())
    _ok(at.text_input(key="tc_code").set_value("4711").run())
    _, key = worksheet(["how-are-you", "beam-search"], 2, 4711)
    assert key.strip() in _markdown(at)
    concat = make_instance("how-are-you", 4712).field("concat").answer_text
    assert f"**{concat}**" in key
    html_sheet, html_key = worksheet_html(["how-are-you", "beam-search"], 2, 4711)
    assert "<script" not in html_sheet and concat in html_key
    assert sorted(_downloads(at)) == sorted(DOWNLOADS)


def test_garbage_code_and_no_exercises(app_page):
    at = app_page(PAGE)
    _ok(at.text_input(key="tc_code").set_value("<script>alert(1)</script>").run())
    assert any("class code is a whole number" in str(w.value) for w in at.warning)
    assert not at.get("download_button")
    _ok(at.text_input(key="tc_code").set_value("7").run())
    _ok(at.multiselect(key="tc_pick").set_value([]).run())
    assert any("Pick at least one exercise" in str(i.value) for i in at.info)
    assert not at.get("download_button")


def test_teacher_page_with_another_model(app_page):
    at = app_page(PAGE, model="reverse-encdec")
    assert len(at.get("download_button")) == 4
