"""Which typed words a model never read: the sidebar's and the coreference lesson's notices."""
import pytest

import tfviz
from tfviz.data import coref, lexicon
from tfviz.data.stories import story_corpus, words_of
from tfviz.data.vocabulary import normalized_words, pattern_gaps, unknown_words
from tfviz.training.recipes import CORPUS_SENTENCES


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def test_normalised_words_follow_the_tokenizer(gpt):
    typed = "The ANIMAL didn’t cross, ﬁnally: 3 times 😀 שלום"
    assert normalized_words(typed) == ["the", "animal", "didn't", "cross", "finally", "times", "שלום"]
    assert normalized_words(typed, commas=True)[3:5] == ["cross", ","]
    # the same words as the tokenizer's own normalised text, split by the corpus's word splitter
    plain = gpt.tokenizer.normalize("The ANIMAL didn't cross the Street.")
    assert normalized_words("The ANIMAL didn't cross the Street.") == [w for w in words_of(plain) if w.isalpha() or "'" in w]


def test_manifest_words_are_exactly_the_training_corpus_words(gpt):
    """A second derivation: read the words straight off the corpus the recipe trains on."""
    corpus = story_corpus(CORPUS_SENTENCES, seed=0, coref_fraction=0.5)
    assert gpt.manifest["vocabulary"]["words"] == sorted({w for s in corpus for w in words_of(s) if w[0].isalpha()})


def test_unknown_words_in_typed_text(gpt):
    known = gpt.manifest["vocabulary"]["words"]
    assert unknown_words("The animal didn't cross the street because it was too tired.", known) == []
    assert unknown_words("The animal did not cross the street, so it was very tired .", known) == []
    assert unknown_words("The teacher's xylophone, the XYLOPHONE!", known) == ["teacher's", "xylophone"]
    assert unknown_words("😀 123 <b>", known) == ["b"]  # only letters make words; tags are text


@pytest.mark.parametrize("text, gaps", [
    ("The animal didn't cross the street because it was too tired.", []),
    ("the teacher didn't cross the river because it was too tired. it refers to the", [("teacher", "agent")]),
    ("The dog did not jump the moon, because it was so purple .", [("jump", "verb"), ("moon", "place"), ("purple", "adjective")]),
    ("The cat sat on the mat.", []),  # not the pattern: nothing to say
])
def test_pattern_gaps_name_words_new_to_their_role(gpt, text, gaps):
    roles = gpt.manifest["vocabulary"]["coref"]
    assert [(g.word, g.role) for g in pattern_gaps(text, roles)] == gaps
    assert set(roles["agents"]) == set(lexicon.AGENTS) and "teacher" in gpt.manifest["vocabulary"]["words"]
    assert all(c.agent in roles["agents"] for c in coref.ALL_COMBOS)
