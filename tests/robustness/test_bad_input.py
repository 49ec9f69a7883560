"""Whatever a learner types into any box, the page answers kindly and keeps working."""
import pytest

from tfviz.ui.lessons import available

BAD_TEXT = {
    "empty": "",
    "spaces": "     ",
    "huge": "attention " * 10_000,  # 100 000 characters
    "emoji_combining": "👨‍👩‍👧‍👦 e\u0301 n\u0303 🏳️‍🌈",
    "rtl": "مرحبا بالعالم שלום עולם",
    "control": "a\x00b\x07c\x1b[31m",
    "unseen_script": "ᚠᛇᚻ᛫ᛒᛦᚦ ꦲꦏ 𓀀𓀁",
    "script_tag": "<script>alert(1)</script>",
    "img_tag": "<img src=x onerror=alert(1)>",
    "number": "123456789",
    "float": "3.5e308",
}
RAW_HTML = ("<script>alert(1)", "<img src=x onerror")


def assert_no_raw_html(at, where: str = "") -> None:
    """User HTML may appear only as text: never inside an element that renders HTML.
    ``where`` names the input in the failure message."""
    for el in at.get("markdown") + at.get("html") + at.get("caption"):
        body = getattr(el.proto, "body", "")
        renders_html = el.type == "html" or getattr(el.proto, "allow_html", False)
        if renders_html:
            assert not any(raw in body for raw in RAW_HTML), (where, body[:200])


def _text_boxes(at):
    return [w for w in list(at.text_input) + list(at.text_area) if w.key != "_typed"]


@pytest.mark.parametrize("lesson", available(), ids=lambda l: l.url)
def test_every_text_box_on_every_page(app_page, lesson):
    at = app_page(lesson.file)
    if not _text_boxes(at):
        pytest.skip("no text box on this page besides the shared one")
    for name, bad in BAD_TEXT.items():
        for i in range(len(_text_boxes(at))):
            boxes = _text_boxes(at)
            if i < len(boxes):
                boxes[i].set_value(bad)
        at.run()
        assert not at.exception, (name, at.exception)
        for button in at.button:  # "Check", "Train", ... after the bad input
            if button.disabled:  # e.g. Train while the lab's run goes on: nobody can press it
                continue
            if any(word in button.label.lower() for word in ("check", "submit", "run", "train", "encode")):
                button.click()
                at.run()
                assert not at.exception, (name, button.label, at.exception)
                break
        assert_no_raw_html(at)


@pytest.mark.parametrize("lesson", available(), ids=lambda l: l.url)
def test_shared_text_on_every_page(app_page, lesson):
    """Every bad text in turn, typed into the shared box of one session, as a learner would:
    each run is checked on its own. "empty" and "spaces" come first (BAD_TEXT's order), so the
    sentence they must keep is the page's own opening one, a real sentence."""
    at = app_page(lesson.file)
    opening = at.session_state["text"]
    assert opening.strip(), "the page opens with a sentence to keep"
    for name, bad in BAD_TEXT.items():
        at.text_area(key="_typed").set_value(bad).run()
        assert not at.exception, (name, at.exception)
        assert_no_raw_html(at, name)
        if name in ("empty", "spaces"):
            assert at.session_state["text"] == opening, (name, "empty text must keep the previous sentence")
            assert any("Type some text" in i.value for i in at.info), name
        if name == "huge":
            assert len(at.session_state["text"]) <= 2000, name
            assert any("first 2,000 characters" in i.value for i in at.info), name
