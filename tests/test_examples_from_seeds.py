"""The sidebar offers the lecture notes' own "it" sentences exactly as the notes write them
(issue #13), so a student holding the slides can type nothing and see the same sentence."""
from pathlib import Path

import pytest

import tfviz
from tfviz.analysis import coref
from tfviz.ui.state import EXAMPLES, NOTES_EXAMPLES

SEEDS = (Path(__file__).resolve().parents[1] / "../shared/seeds").resolve()


def _seed_lines() -> set[str]:
    lines = set()
    for path in SEEDS.glob("*.txt"):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip().replace("**", "")  # seed 001 sets "wide" in bold
            lines.add(line.strip('"'))  # seed 004 quotes its sentence
    return lines


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the seed notes are not here ({SEEDS})")
@pytest.mark.parametrize("label", list(NOTES_EXAMPLES))
def test_the_notes_sentences_are_offered_verbatim(label):
    assert EXAMPLES[label] == NOTES_EXAMPLES[label]
    assert NOTES_EXAMPLES[label] in _seed_lines()


@pytest.mark.parametrize("label,noun", [("The notes' chicken (tired)", "chicken"),
                                        ("The notes' chicken (wide)", "road"),
                                        ("Coreference (tired)", "animal")])
def test_gpt_tiny_answers_the_notes_sentences(label, noun):
    """Typed as the notes write them (capitals, with or without a full stop), gpt-tiny still
    names the right noun after "It refers to the"."""
    from tfviz.decoding import generate

    gpt = tfviz.load("gpt-tiny")
    text = EXAMPLES[label].rstrip(".") + ". It refers to the"
    assert coref.coref_spans(gpt.trace(text).tokens) is not None  # found "it" and two nouns
    assert generate(gpt, text, max_new_tokens=1).text.strip() == noun
