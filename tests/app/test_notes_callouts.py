"""Pages show their "In the notes" callouts, and name only lessons that exist (issue #13)."""
from __future__ import annotations

import re

import pytest

from tfviz.exercises.quiz import make_quiz
from tfviz.notes_errata import ERRATA, errata_for
from tfviz.ui.cache import get_bundle
from tfviz.ui.lessons import available, numbered
from tfviz.ui.notes import callout_label, callout_text

FILES = {lesson.url: lesson.file for lesson in available()}
# every built page that errata belong to; a planned lesson joins this list once its file exists
PAGES = sorted({url for e in ERRATA for url in (e.lesson, *e.also)
                if url in FILES and url != "exercises"})
NEEDS_MODEL = {"forward-walk": "reverse-encdec"}  # its erratum is about cross-attention
WITH_ERRATA = sorted({x for e in ERRATA for x in e.exercises})


def _ok(at):
    assert not at.exception, at.exception
    return at


def _boxes(at) -> list:
    return [e for e in at.expander if e.label.startswith("In the notes")]


def _callouts(at) -> list[str]:
    return ["\n".join(str(m.value) for m in box.markdown) for box in _boxes(at)]


def _dead_mentions(texts) -> list[str]:
    built = numbered()
    return [m.group(0) for t in texts for m in re.finditer(r"[Ll]essons? (\d+)", t)
            if int(m.group(1)) not in built]


def test_the_pages_with_errata_today():
    assert PAGES == ["bert", "decoding", "embeddings", "encoder-decoder", "forward-walk", "layernorm",
                     "long-sequences", "masking", "multi-head", "scaling", "self-attention", "tour"]


@pytest.mark.parametrize("url", PAGES)
def test_each_lesson_shows_its_errata_once(app_page, url):
    query = {"model": NEEDS_MODEL[url]} if url in NEEDS_MODEL else {}
    at = app_page(FILES[url], **query)
    assert _callouts(at) == [callout_text(errata_for(url))]
    for e in errata_for(url):
        assert e.right in _callouts(at)[0]
    (box,) = _boxes(at)  # closed, and its title says what it holds
    assert box.label == callout_label(errata_for(url)) and box.proto.expanded is False
    assert "For readers of the course notes" in _callouts(at)[0]


def test_forward_walk_of_a_decoder_has_no_cross_attention_callout(app_page):
    at = app_page(FILES["forward-walk"], model="gpt-tiny")
    assert _callouts(at) == []


def test_forward_walk_says_what_the_decoder_reads(app_page):
    at = app_page(FILES["forward-walk"], model="reverse-encdec")
    text = at.session_state["text"]
    info = " ".join(str(i.value) for i in at.info)
    assert "both the source and the target" not in info
    assert "`<bos>` followed by the model's own greedy answer" in info
    bundle = get_bundle("reverse-encdec")
    src, dec = bundle.seq2seq_inputs(text)
    shown = at.dataframe[0].value
    assert list(shown["tokens"]) == [" ".join(bundle.token_strings(src)),
                                     " ".join(bundle.token_strings(dec))]
    assert shown["tokens"][1].split(" ")[0] == "<bos>"


@pytest.mark.parametrize("exercise", WITH_ERRATA)
def test_the_exercises_page_shows_the_errata_of_the_chosen_exercise(app_page, exercise):
    at = app_page(FILES["exercises"])
    _ok(at.selectbox(key="ex_pick").set_value(exercise).run())
    errata = errata_for("exercises", exercise=exercise)
    before = [e for e in errata if not e.gives_away]  # one that states answers waits for them
    assert _callouts(at) == ([callout_text(before)] if before else [])
    _ok(at.button(key=f"ex_full_{exercise}:source").click().run())
    assert _callouts(at) == [callout_text(errata)]


def test_an_exercise_without_errata_shows_no_callout(app_page):
    at = app_page(FILES["exercises"])
    assert at.selectbox(key="ex_pick").value == "flying-arrows"
    assert _callouts(at) == []


def test_the_beam_exercise_names_no_missing_lesson(app_page):
    at = app_page(FILES["exercises"])
    _ok(at.selectbox(key="ex_pick").set_value("beam-search").run())
    captions = [str(c.value) for c in at.caption]
    practises = [c for c in captions if "It practises" in c]
    assert len(practises) == 1 and not _dead_mentions(practises)
    if 14 not in numbered():
        assert practises[0].endswith("It practises LM head and decoding (no lesson page yet).")


def test_quiz_captions_name_no_missing_lesson(app_page):
    at = app_page(FILES["quiz"])
    sections = ["Architectures and outputs", "Efficiency and beyond"]
    _ok(at.multiselect(key="qz_sections").set_value(sections).run())
    quiz = make_quiz(1, 8, sections)
    captions = [str(c.value) for c in at.caption if str(c.value).startswith("Question ")]
    assert len(captions) == len(quiz)
    assert not _dead_mentions(captions)
    built = numbered()
    for caption, q in zip(captions, quiz):
        assert (f"lesson {q.lesson} (" in caption) == (q.lesson in built), caption
