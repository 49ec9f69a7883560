"""Story corpus, lexicon and the coreference probe."""

import random
import re
from collections import Counter
from itertools import product

import pytest

from tfviz.data import coref, lexicon
from tfviz.data.coref import (ALL_COMBOS, DEGREES, FORMS, NEGATIONS, Surface, coref_eval_items,
                              coref_sentence, coref_split, coref_text)
from tfviz.data.lexicon import CLASSES, word_class
from tfviz.data.stories import TEMPLATES, story_corpus, words_of


def test_coref_sentence_golden():
    prefix, answer, distractor = coref_sentence("animal", "cross", "street", "tired")
    assert prefix == "the animal didn't cross the street because it was too tired. it refers to the"
    assert (answer, distractor) == ("animal", "street")
    assert coref_sentence("animal", "cross", "street", "wide")[1:] == ("street", "animal")
    every = Surface("did not", "very", comma=True, spaced=True, capitals=True)
    assert coref_text(("animal", "cross", "street", "wide"), every) == (
        "The animal did not cross the street, because it was very wide . It refers to the street .")


ALL_SURFACES = [Surface(*s) for s in product(NEGATIONS, DEGREES, (False, True), (False, True), (False, True))]


def test_answer_follows_the_adjective():
    for combo in ALL_COMBOS:
        _, answer, distractor = coref_sentence(*combo)
        if combo.adj in lexicon.AGENT_ADJS:
            assert (answer, distractor) == (combo.agent, combo.place)
        else:
            assert (answer, distractor) == (combo.place, combo.agent)


def test_coref_sentence_rejects_unknown_words():
    with pytest.raises(ValueError):
        coref_sentence("animal", "cross", "street", "purple")
    with pytest.raises(ValueError):
        coref_sentence("whale", "cross", "street", "tired")


def test_split_is_disjoint_complete_deterministic_and_balanced():
    train, heldout = coref_split(seed=0)
    assert set(train).isdisjoint(heldout)
    assert set(train) | set(heldout) == set(ALL_COMBOS) and len(ALL_COMBOS) == 3072
    assert coref_split(seed=0) == (train, heldout)
    assert coref_split(seed=1) != (train, heldout)
    assert abs(len(heldout) / len(ALL_COMBOS) - 0.15) < 0.01
    kinds = Counter(c.adj in lexicon.AGENT_ADJS for c in heldout)
    assert kinds[True] == kinds[False]
    for name in ("agent", "verb", "place", "adj"):  # every word is still seen in training
        assert {getattr(c, name) for c in train} == {getattr(c, name) for c in ALL_COMBOS}


def test_corpus_never_contains_heldout_items():
    heldout_texts = {coref_text(c, surface) for c in coref_split(0)[1] for surface in ALL_SURFACES}
    assert len(heldout_texts) == len(coref_split(0)[1]) * 48  # every way of writing each one
    corpus = story_corpus(3000, seed=5)
    assert heldout_texts.isdisjoint(corpus)
    items = coref_eval_items(0)
    assert len(items) == len(coref_split(0)[1]) and items[0][0].endswith("it refers to the")
    assert coref_eval_items(0, FORMS["capitals"])[0][0].endswith("It refers to the")


def test_corpus_determinism_and_mix():
    a = story_corpus(2000, seed=3)
    assert a == story_corpus(2000, seed=3) and a != story_corpus(2000, seed=4)
    coref_items = [s for s in a if "refers to the" in s]
    assert 0.35 < len(coref_items) / len(a) < 0.45
    assert story_corpus(0) == []

    def share(items, pattern):
        return sum(bool(re.search(pattern, s)) for s in items) / len(items)

    # every way of writing that FORMS evaluates is common in training, not a rare accident
    assert 0.4 < share(a, r"^[A-Z]") < 0.6  # capitalised starts, in both kinds of item
    assert 0.4 < share(coref_items, r"did not") < 0.6
    assert 0.25 < share(coref_items, r" so \w+ ?\.") < 0.42 and 0.25 < share(coref_items, r" very ") < 0.42
    assert 0.2 < share(coref_items, r", because") < 0.4
    assert 0.1 < share(coref_items, r" \. ") < 0.3
    assert 0.4 < share(coref_items, r"\. It refers") < 0.6


_ITEM = re.compile(r"the (\w+) (?:didn't|did not) (\w+) the (\w+),? because it was (?:too|so|very) "
                   r"(\w+) ?\. it refers to the (\w+) ?\.")


def test_coref_items_in_corpus_have_the_right_answer():
    items = [s for s in story_corpus(500, seed=7) if "refers to the" in s]
    for s in items:
        agent, verb, place, adj, answer = _ITEM.fullmatch(s.lower()).groups()
        assert answer == coref_sentence(agent, verb, place, adj)[1]
    assert len(items) > 150


def test_word_class_covers_every_generated_word():
    rng = random.Random(0)
    sentences = story_corpus(3000, seed=1) + [t(rng) for t in TEMPLATES for _ in range(50)]
    seen = Counter(w for s in sentences for w in words_of(s))
    assert all(word_class(w) in CLASSES for w in seen)
    unlabelled = {w for w in seen if w not in lexicon.LEXICON}
    assert not unlabelled
    classes = Counter(word_class(w) for w in seen.elements())
    assert set(classes) == set(CLASSES)  # every class actually occurs


def test_lexicon_classes_do_not_overlap():
    groups = {
        "noun": set(lexicon.NOUNS),
        "verb": set(lexicon.TRANSITIVE + lexicon.INTRANSITIVE + lexicon.COREF_VERBS),
        "adj": set(lexicon.GRADABLE + lexicon.AGENT_ADJS + lexicon.PLACE_ADJS),
        "function": set(lexicon.FUNCTION),
        "other": set(lexicon.ADVERBS + lexicon.NUMBERS),
    }
    names = list(groups)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not groups[a] & groups[b], (a, b)
    for cls, words in groups.items():
        assert all(word_class(w) == cls for w in words)


@pytest.mark.parametrize(
    "word, cls",
    [("cats", "noun"), ("children", "noun"), ("walked", "verb"), ("dancing", "verb"), ("carries", "verb"),
     ("wider", "adj"), ("happiest", "adj"), ("the", "function"), ("didn't", "function"), ("?", "punct"),
     ("...", "punct"), ("slowly", "other"), ("xyz", "other"), ("", "other"), ("␣cats", "noun"),
     (" The", "function"), ("Ġdidn", "function"), ("'t", "function")],
)
def test_word_class_examples(word, cls):
    assert word_class(word) == cls


@pytest.mark.parametrize(
    "fn, word, out",
    [(lexicon.plural, "fox", "foxes"), (lexicon.plural, "child", "children"), (lexicon.past, "hurry", "hurried"),
     (lexicon.past, "chase", "chased"), (lexicon.ing, "dance", "dancing"), (lexicon.s_form, "watch", "watches"),
     (lexicon.comparative, "wide", "wider"), (lexicon.superlative, "lazy", "laziest"),
     (lexicon.comparative, "small", "smaller")],
)
def test_inflection(fn, word, out):
    assert fn(word) == out


def test_lexicon_is_read_only():
    with pytest.raises(TypeError):
        lexicon.LEXICON["new"] = "noun"
    assert coref.HELDOUT_FRACTION == 0.15
