"""Finding "it", the agent and the place in any tokenization, and reading attention to them."""
import numpy as np
import pytest

import tfviz
from tfviz.analysis import coref
from tfviz.tokenizer.served import train_served_tokenizer

TIRED = "the animal didn't cross the street because it was too tired"
WIDE = "the animal didn't cross the street because it was too wide"
BPE = ["␣the", "␣animal", "␣didn", "'t", "␣cross", "␣the", "␣street", "␣because", "␣it", "␣was",
       "␣too", "␣tired"]


def test_bpe_tokens_with_readable_space_marker():
    assert coref.find_coref_positions(BPE) == (8, 1, 6)
    assert coref.find_coref_positions(BPE, probe="last") == (11, 1, 6)


def test_raw_gpt2_marker_and_split_nouns():
    toks = ["Ġthe", "Ġan", "imal", "Ġdidn", "'t", "Ġcross", "Ġthe", "Ġstr", "eet", "Ġbecause",
            "Ġit", "Ġwas"]
    assert coref.find_coref_positions(toks) == coref.CorefPositions(probe=10, agent=2, place=8)
    assert coref.coref_spans(toks) == ([10], [1, 2], [7, 8])


def test_character_tokens_from_the_fallback_tokenizer():
    b = tfviz.load("gpt-tiny")
    toks = b.token_strings(b.encode(TIRED)) if not b.trained else list(TIRED.replace(" ", "␣"))
    found = coref.find_coref_positions(toks)
    assert found == (TIRED.index(" it ") + 2, TIRED.index("animal") + 5, TIRED.index("street") + 5)


def test_tokens_from_a_trained_byte_level_bpe():
    tok = train_served_tokenizer([TIRED, WIDE, "the dog ran to the park"] * 20, vocab_size=300)
    toks = tok.tokens(WIDE)
    probe, agent, place = coref.find_coref_positions(toks)
    words = dict((w, span) for w, span in coref.token_words(toks))
    assert probe == words["it"][-1] and agent == words["animal"][-1] and place == words["street"][-1]
    assert "".join(toks).replace("␣", " ").strip() == WIDE


def test_the_it_after_because_wins_and_other_nouns_work():
    text = "it rained. the dog didn't enter the hall because it was scared. it refers to the"
    toks = list(text)
    probe, agent, place = coref.find_coref_positions(toks)
    assert probe == text.index("because it") + len("because i")
    assert (agent, place) == (text.index("dog") + 2, text.index("hall") + 3)
    assert coref.find_coref_positions(toks, probe="last").probe == len(text) - 1


@pytest.mark.parametrize("text", ["hello world", "the cat sat on the mat", "it was the dog",
                                  "the dog because it", ""])
def test_not_a_coreference_sentence(text):
    assert coref.find_coref_positions(list(text)) is None


def test_antecedent_weights_read_the_pattern():
    b = tfviz.load("gpt-tiny")
    tr = b.trace(TIRED)
    probe, agent, place = coref.find_coref_positions(tr.tokens)
    w = coref.antecedent_weights(tr, probe, [agent, place])
    assert w.shape == (3, 4, 2)
    assert w[1, 2, 0] == pytest.approx(tr["pattern", 1][2, probe, agent])
    assert w[2, 0, 1] == pytest.approx(tr["pattern", 2][0, probe, place])
    spans = coref.coref_spans(tr.tokens)
    summed = coref.antecedent_weights(tr, probe, [spans[1]])
    assert summed[0, 3, 0] == pytest.approx(tr["pattern", 0][3, probe, spans[1]].sum())
    stacked = np.stack([tr["pattern", i] for i in range(3)])
    np.testing.assert_array_equal(coref.antecedent_weights(stacked, probe, [agent, place]), w)


def test_best_head_is_the_largest_gap_between_the_two_nouns():
    p = np.zeros((2, 2, 3, 3))
    p[0, 0, 2] = [0.9, 0.1, 0.0]  # L0 H0 prefers the agent
    p[1, 1, 2] = [0.2, 0.7, 0.1]  # L1 H1 prefers the place
    w = coref.antecedent_weights(p, 2, [0, 1])  # (layers, heads, 2): from "it" to each noun
    gap = w[..., 0] - w[..., 1]
    np.testing.assert_allclose(gap, [[0.8, 0.0], [0.0, -0.5]])  # by hand from the rows above
    assert coref.best_head(gap) == (0, 0)
    assert coref.best_head(np.array([[0.1, -0.6], [0.3, 0.2]])) == (0, 1)  # largest |gap|


def test_answer_for():
    assert coref.answer_for(BPE) == "agent"
    assert coref.answer_for(list(WIDE)) == "place"
    assert coref.answer_for(list("the cat sat")) is None


def test_antecedent_gap_and_switching_head():
    b = tfviz.load("gpt-tiny")
    tired, wide = b.trace(TIRED), b.trace(WIDE)
    gap = coref.antecedent_gap(tired, "last")
    probe, agent, place = coref.find_coref_positions(tired.tokens, probe="last")
    spans = coref.coref_spans(tired.tokens, "last")
    expected = (tired["pattern", 1][2, probe, spans[1]].sum()
                - tired["pattern", 1][2, probe, spans[2]].sum())
    assert gap.shape == (3, 4) and gap[1, 2] == pytest.approx(expected)
    assert coref.antecedent_gap(b.trace("the cat sat"), "it") is None
    # "it" comes before the adjective: a decoder's "it" row cannot differ between the two.
    # Not exactly 0 if the two adjectives tokenize to different lengths: a matmul with another
    # row count may round each row differently (~1e-7 here, more on another CPU): a float32
    # tolerance, far below the gaps of ~0.1 the lesson shows.
    same = coref.switching_head(coref.antecedent_gap(tired), coref.antecedent_gap(wide))[1]
    assert same == pytest.approx(0.0, abs=1e-5)
    head, moved = coref.switching_head(gap, coref.antecedent_gap(wide, "last"))
    assert moved == pytest.approx((gap - coref.antecedent_gap(wide, "last"))[head])
