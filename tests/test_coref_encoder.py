"""The encoder's "it": which bert-tiny head prefers the right noun, measured by hand-checkable
pieces, and why a decoder's "it" cannot change between "tired" and "wide"."""
import numpy as np
import pytest

import tfviz
from tfviz.analysis import coref
from tfviz.data.coref import FORMS, coref_sentence, coref_split, coref_statement
from tfviz.training.evaluate import _statement_items, encoder_coref_metrics

TIRED = "the animal didn't cross the street because it was too tired."
WIDE = "the animal didn't cross the street because it was too wide."


def test_coref_statement_is_the_probe_sentence_without_its_probe():
    assert coref_statement("animal", "cross", "street", "tired") == TIRED
    for surface in FORMS.values():
        prefix, _, _ = coref_sentence("dog", "reach", "lake", "wet", surface)
        statement = coref_statement("dog", "reach", "lake", "wet", surface)
        assert prefix.startswith(statement + " ") and prefix.lower().endswith("it refers to the")
    with pytest.raises(ValueError):
        coref_statement("animal", "cross", "street", "purple")


def test_prefers_right_and_share_by_hand():
    p = np.zeros((2, 2, 4, 4))  # (layers, heads, query, key); the probe is token 3
    p[0, 0, 3] = [0.7, 0.2, 0.1, 0.0]  # always the first noun
    p[0, 1, 3] = [0.1, 0.3, 0.3, 0.3]  # the pieces of the second noun (1 and 2) add up
    p[1, 0, 3] = [0.25, 0.25, 0.25, 0.25]  # a tie is not a preference
    spans = ([3], [0], [1, 2])
    assert coref.prefers_right(p, spans, "agent").tolist() == [[True, False], [False, False]]
    assert coref.prefers_right(p, spans, "place").tolist() == [[False, True], [True, False]]
    share = coref.preference_share([(p, spans, "agent"), (p, spans, "place")])
    np.testing.assert_allclose(share, [[0.5, 0.5], [0.5, 0.0]])  # nobody switches here
    flipped = p.copy()
    flipped[0, 0, 3] = [0.2, 0.7, 0.1, 0.0]
    switch = coref.preference_share([(p, spans, "agent"), (flipped, ([3], [0], [1]), "place")])
    assert switch[0, 0] == 1.0  # the head that moved with the answer
    with pytest.raises(ValueError):
        coref.prefers_right(p, spans, "it")
    with pytest.raises(ValueError):
        coref.preference_share([])


def test_chosen_head_is_picked_on_one_set_and_scored_on_the_other():
    selection = np.array([[0.5, 0.95], [0.9, 0.5]])
    heldout = np.array([[0.99, 0.85], [0.9, 0.5]])
    assert coref.chosen_head(selection, heldout) == (0, 1, 0.85)  # not the held-out best


def test_statement_items_find_it_and_both_nouns():
    bert = tfviz.load("bert-tiny")
    combos = coref_split(0)[1][:6]
    items = _statement_items(bert.model, bert.tokenizer, combos)
    for combo, (patterns, (probe, agent, place), answer) in zip(combos, items):
        toks = bert.tokenizer.tokens(coref_statement(*combo))
        assert patterns.shape[:2] == (2, 4)
        words = dict(coref.token_words(toks))
        assert (probe, agent, place) == (words["it"], words[combo.agent], words[combo.place])
        assert answer == ("agent" if combo.adj in ("tired", "hungry", "scared", "sleepy", "weak", "lazy")
                          else "place")
        # the padded batch gives the same rows as the sentence alone (padding is masked); other
        # shapes sum in another order, so a float32 tolerance
        alone = bert.trace(coref_statement(*combo))
        n = len(toks)
        for layer in range(2):
            np.testing.assert_allclose(patterns[layer][:, :n, :n], alone["pattern", layer], atol=1e-5)


def test_the_manifest_head_is_the_measured_one_and_meets_the_target():
    bert = tfviz.load("bert-tiny")
    recorded = bert.manifest["eval"]
    measured = encoder_coref_metrics(bert.model, bert.tokenizer)
    head = measured["coref_head"]
    assert (head["layer"], head["head"]) == (recorded["coref_head"]["layer"], recorded["coref_head"]["head"])
    assert measured["coref_items"] == len(coref_split(0)[1])
    assert head["share"] >= 0.8  # the target, on combinations the corpus never held
    # it switches: right on both kinds of answer, not just on one noun
    assert min(measured["coref_head_by_answer"].values()) >= 0.7


def test_a_decoders_it_row_cannot_change_but_an_encoders_can():
    rows = {}
    for name in ("gpt-tiny", "bert-tiny"):
        b = tfviz.load(name)
        (a, spans), (w, _) = coref.probe_rows(b.trace(TIRED)), coref.probe_rows(b.trace(WIDE))
        rows[name] = coref.row_change(a, w, spans[0][-1])
    # gpt-tiny: the same tokens up to "it" under a causal mask give the same rows; only float
    # rounding of a matmul with another row count can differ (~1e-7), so 1e-6 is the bound
    assert rows["gpt-tiny"] < 1e-6
    assert rows["bert-tiny"] > 0.05
    assert coref.probe_rows(tfviz.load("bert-tiny").trace("hello there")) is None
