"""The "In the notes" errata: each points at a real place in the seed notes and at a real page."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfviz.exercises.registry import EXERCISES
from tfviz.notes_errata import ERRATA, errata_for
from tfviz.ui.lessons import PLANNED, available, numbered
from tfviz.ui.notes import callout_text

SEEDS = (Path(__file__).resolve().parents[1] / "../shared/seeds").resolve()
PAGES = {lesson.url for lesson in available()}


def test_ids_are_unique_and_every_text_is_filled_in():
    assert len({e.id for e in ERRATA}) == len(ERRATA)
    for e in ERRATA:
        assert all(text.strip() for text in (e.fragment, e.place, e.notes, e.right, e.why)), e.id
        assert e.line >= 1


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the seed notes are not here ({SEEDS})")
@pytest.mark.parametrize("erratum", ERRATA, ids=lambda e: e.id)
def test_the_quoted_words_stand_on_the_named_line_of_the_seed(erratum):
    lines = (SEEDS / erratum.seed).read_text(encoding="utf-8").splitlines()
    assert erratum.fragment in lines[erratum.line - 1], (
        f"{erratum.seed}:{erratum.line} reads {lines[erratum.line - 1]!r}")
    assert len(erratum.fragment.split()) <= 6, "a few words to find the place, not a quote"


@pytest.mark.parametrize("erratum", ERRATA, ids=lambda e: e.id)
def test_every_erratum_belongs_to_a_page_or_a_planned_lesson(erratum):
    assert erratum.lesson in PAGES or erratum.lesson in PLANNED.values()
    assert set(erratum.also) <= PAGES, "'also' names pages that exist today"
    assert set(erratum.exercises) <= set(EXERCISES)
    assert bool(erratum.exercises) == ("exercises" in erratum.also)


def test_planned_urls_are_the_lessons_still_to_come():
    built = numbered()
    for number, url in PLANNED.items():
        assert 13 <= number <= 19
        page = next((p for p in available() if p.url == url), None)
        assert page is None or built.get(number) == page, f"{url} is built under another number"


def test_the_errata_found_in_the_notes_are_all_there():
    """The list of issue #13, each checked against the seeds before it was written down."""
    assert {e.id for e in ERRATA} == {
        "scale-d-over-n", "scale-before-softmax", "layernorm-epsilon", "sparse-mask-zero",
        "sinusoid-indices", "thinking-machines-score", "thinking-machines-dk",
        "thinking-machines-softmax", "complexity-per-layer", "beam-ground-truth",
        "cross-attention-weights", "head-matrix-shape", "layernorm-unit-mean",
        "causal-not-bidirectional-lm", "learned-positions-shape"}


def test_errata_for_a_page_and_an_exercise():
    assert [e.id for e in errata_for("scaling")] == ["scale-before-softmax", "scale-d-over-n"]
    assert [e.id for e in errata_for("masking")] == ["causal-not-bidirectional-lm",
                                                     "sparse-mask-zero"]
    assert [e.id for e in errata_for("exercises", exercise="thinking-machines")] == [
        "thinking-machines-score", "thinking-machines-dk", "thinking-machines-softmax"]
    assert errata_for("exercises", exercise="flying-arrows") == []
    assert errata_for("feed-forward") == []
    assert [e.id for e in errata_for("decoding")] == ["beam-ground-truth"]


def test_the_callout_text_carries_each_entry():
    errata = errata_for("layernorm")
    text = callout_text(errata)
    assert text.startswith("**In the notes.**")
    assert text.count("\n- ") == len(errata) == 2
    for e in errata:
        assert e.notes in text and e.right in text and e.why in text
    assert "*The lecture slides, lecture 22, layer normalization:*" in text
