"""Text as learners type it: the tokenizer lesson shows what the model reads, and the sidebar
and the coreference lesson name the words the model never learned."""
import pytest

import tfviz
from tfviz.ui.state import EXAMPLES

TEACHER = "The teacher didn't cross the river because it was too tired. It refers to the"


def _all_text(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "code")
                     for e in at.get(kind))


def test_tokenizer_lesson_shows_the_normalised_text(app_page):
    at = app_page("02_tokenizer.py", text="The ANIMAL ﬁnally crossed the Street.")
    codes = [c.value for c in at.code]
    assert "The ANIMAL ﬁnally crossed the Street." in codes
    read = tfviz.load("gpt-tiny").tokenizer.normalize("The ANIMAL ﬁnally crossed the Street.")
    assert read == "the animal finally crossed the street." and read in codes
    assert "uncased" in _all_text(at)


def test_sidebar_names_words_the_model_never_read(app_page):
    at = app_page("01_tour.py", text="The xylophone's owner didn't cross the street.")
    notes = [str(c.value) for c in at.sidebar.caption]
    assert any("**xylophone's**" in n and "**owner**" in n for n in notes), notes
    known = app_page("01_tour.py", text=EXAMPLES["Coreference (tired)"])
    assert not any("never read" in str(c.value) for c in known.sidebar.caption)


def test_coreference_lesson_says_when_a_known_word_is_new_to_the_pattern(app_page):
    at = app_page("07_multihead.py", text=TEACHER)
    infos = [str(i.value) for i in at.info]
    assert any('"teacher" was never the first noun' in i and "animal" in i for i in infos), infos
    assert not any("never read" in str(c.value) for c in at.sidebar.caption)  # teacher is a known word
    plain = app_page("07_multihead.py", text=EXAMPLES["Coreference, with the probe"])
    assert not any("was never" in str(i.value) for i in plain.info)


@pytest.mark.parametrize("page", ["14_decoding.py", "17_long_sequences.py"])
def test_pages_that_show_the_answer_explain_a_noun_from_outside_the_pattern(app_page, page):
    """gpt-tiny continues the teacher sentence with a noun it was trained on (not "teacher"):
    the pages that show its answer (the continuation, the what-if table) say why, and say
    nothing for a known pattern."""
    from tfviz.decoding import generate

    gpt = tfviz.load("gpt-tiny")
    assert generate(gpt, TEACHER, max_new_tokens=1).text.strip() != "teacher"
    at = app_page(page, text=TEACHER)
    infos = [str(i.value) for i in at.info]
    assert any('"teacher" was never the first noun' in i for i in infos), infos
    plain = app_page(page, text=EXAMPLES["Coreference, with the probe"])
    assert not any("was never" in str(i.value) for i in plain.info)
