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
        "causal-not-bidirectional-lm", "learned-positions-shape",
        # issue 28: four more, each checked against the seeds before it was written down
        "decoder-only-embeddings", "target-typo", "bert-512-tokens", "linformer-projection-shape"}


def test_the_right_answers_of_issue_28_hold():
    """Each "right" of the four added entries, checked where a number or a shape decides it."""
    from tfviz import load
    from tfviz.config import preset
    from tfviz.params import BERT_BASE

    by_id = {e.id: e for e in ERRATA}
    # the targets of [34, 23, 9, 0] are the tokens themselves, one per position
    label = [34, 23, 9, 0]
    right = ", ".join(f"P(o{'₁₂₃₄'[i]}={t})=1" for i, t in enumerate(label))
    assert right in by_id["target-typo"].right
    # BERT's limit is its position table: 512 rows, one per token
    assert BERT_BASE.max_positions == 512 and "512 tokens" in by_id["bert-512-tokens"].right
    # a decoder-only model has an embedding table (gpt-tiny's, reused by its LM head) and no
    # cross-attention
    gpt = load("gpt-tiny")
    assert preset("gpt-tiny").arch == "decoder" and gpt.model.embed.weight.shape[0] == gpt.config.vocab_size
    assert not any("cross" in name for name, _ in gpt.model.named_modules())
    # Linformer: the slides' own formula, a few lines after the sentence, labels F V W^V k × d
    lin = by_id["linformer-projection-shape"]
    assert "k × d" in lin.right
    if SEEDS.is_dir():
        lines = (SEEDS / lin.seed).read_text(encoding="utf-8").splitlines()
        formula = next(line for line in lines[lin.line:lin.line + 10] if "F_iVW_i^V" in line)
        assert "F_iVW_i^V}_{k \\times d}" in formula


def test_errata_for_a_page_and_an_exercise():
    assert [e.id for e in errata_for("scaling")] == ["scale-before-softmax", "scale-d-over-n"]
    assert [e.id for e in errata_for("masking")] == ["causal-not-bidirectional-lm",
                                                     "sparse-mask-zero"]
    assert [e.id for e in errata_for("exercises", exercise="thinking-machines")] == [
        "thinking-machines-score", "thinking-machines-dk", "thinking-machines-softmax"]
    assert errata_for("exercises", exercise="flying-arrows") == []
    assert errata_for("feed-forward") == []
    assert [e.id for e in errata_for("decoding")] == ["beam-ground-truth", "target-typo"]
    assert [e.id for e in errata_for("bert")] == ["causal-not-bidirectional-lm", "bert-512-tokens"]
    assert [e.id for e in errata_for("encoder-decoder")] == ["cross-attention-weights",
                                                            "decoder-only-embeddings"]
    assert [e.id for e in errata_for("long-sequences")] == ["sparse-mask-zero",
                                                           "linformer-projection-shape"]


def test_the_callout_text_carries_each_entry():
    errata = errata_for("layernorm")
    text = callout_text(errata)
    assert text.startswith("For readers of the course notes")  # what the box is for
    assert len(text.split("\n\n", 1)[0]) < 200  # said in a sentence or two
    assert text.count("\n- ") == len(errata) == 2
    for e in errata:
        assert e.notes in text and e.right in text and e.why in text
    assert "*The lecture slides, lecture 22, layer normalization:*" in text


def test_an_entry_that_states_answers_names_real_boxes_of_its_exercises():
    from tfviz.exercises import make_instance

    assert [e.id for e in ERRATA if e.gives_away] == ["thinking-machines-softmax"]
    for e in ERRATA:
        for exercise in e.exercises if e.gives_away else ():
            names = {f.name for f in make_instance(exercise).answer_fields}
            assert set(e.gives_away) <= names, (e.id, exercise)
