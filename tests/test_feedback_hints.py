"""The words around right answers: hints, wordings and numbers the quiz and the exercises show
beside a learner's answer, each checked against what it claims (a count, a mask, a tokenizer,
a beam search), not only against its own text."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from tfviz.config import preset
from tfviz.exercises import ex_beam, ex_flying, ex_thinking
from tfviz.exercises.answers import parse_number, parse_numbers
from tfviz.exercises.core import Instance, answer_field
from tfviz.exercises.quiz import NumericQuestion, QUESTIONS, grade_choice, grade_numeric
from tfviz.exercises.quiz import question_by_id
from tfviz.model import Transformer
from tfviz.model.hooks import recording
from tfviz.model.masks import causal_pattern, sparse_pattern
from tfviz.tokenizer.served import train_served_tokenizer
from tfviz.tokenizer.teaching_bpe import train_bpe
from tfviz.tokenizer.teaching_encode import TeachingTokenizer

NUMERIC = [q for q in QUESTIONS if isinstance(q, NumericQuestion)]


def _near_misses(q: NumericQuestion) -> list[float]:
    """Values within 10 tolerances of the answer that no listed mistake explains."""
    step = q.tolerance * 3
    return [v for v in (q.answer + step, q.answer - step)
            if all(abs(v - m.value) > q.tolerance for m in q.mistakes)]


# ------------------------------------------------------------------- near misses and counts


@pytest.mark.parametrize("qid, typed", [("gqa-kv-heads", "6"), ("vit-patch-count", "195")])
def test_a_near_miss_on_a_count_says_check_your_count(qid, typed):
    f = grade_numeric(question_by_id(qid), typed)
    assert f.valid and not f.correct
    assert "check your count" in f.diagnosis and "decimal" not in f.message


@pytest.mark.parametrize("q", NUMERIC, ids=lambda q: q.id)
def test_decimals_are_advised_only_where_the_answer_has_them(q):
    """A whole-number answer within ±0.5 cannot be missed by rounding: no hint may say so."""
    whole = float(q.answer).is_integer() and q.tolerance < 1 and not q.percent
    for value in _near_misses(q):
        f = grade_numeric(q, repr(value))
        assert not f.correct
        assert ("decimals" in (f.diagnosis or "")) == (not whole)


@pytest.mark.parametrize("q", NUMERIC, ids=lambda q: q.id)
def test_the_percentage_hint_only_for_answers_between_0_and_1(q):
    """'19600' for 196 patches is no percentage; '88' for a probability of 0.88 is."""
    if q.percent:
        return
    f = grade_numeric(q, repr(q.answer * 100))
    assert ("percentage" in (f.diagnosis or "")) == (0 < q.answer < 1)


def test_the_count_example_from_the_report():
    f = grade_numeric(question_by_id("vit-patch-count"), "19600")
    assert not f.correct and "percentage" not in f.message


# ------------------------------------------------------------------------ a decimal comma


def test_an_ambiguous_comma_is_asked_about_in_the_quiz():
    q = question_by_id("layernorm-value")  # −1.342 (to ±0.01)
    f = grade_numeric(q, "-1,342")
    assert not f.valid and not f.correct
    assert "-1.342" in f.message and "-1342" in f.message and "decimal comma" in f.message
    assert grade_numeric(q, "-1.342").correct
    assert grade_numeric(q, "−1,342").valid is False  # the unicode minus too


def test_a_comma_in_a_whole_number_answer_is_a_thousands_separator():
    assert grade_numeric(question_by_id("lora-params"), "16,384").correct  # 16.384 is no count
    assert grade_numeric(question_by_id("encoder-layer-weights"), "3,145,728").correct


def _box(expected) -> Instance:
    return Instance("demo", "Demo", "", {}, (answer_field("x", "x", expected),), ())


def test_an_ambiguous_comma_is_asked_about_in_exercise_boxes():
    f = _box(-1.342).check("x", "-1,342")
    assert not f.valid and "-1.342" in f.message and "-1342" in f.message
    assert _box(-1.342).check("x", "-1.342").correct
    assert _box(1342).check("x", "1,342").correct  # a whole-number box: only 1342 fits
    assert parse_number("-1,342").value is None and parse_number("-1,342", whole=True).value == -1342
    f = _box(0.88).check("x", "0,88")
    assert not f.valid and "0.88" in f.message and "dot" in f.message


def test_decimal_commas_in_a_box_of_several_numbers_are_named():
    error = parse_numbers("0,5 0,5", expected_count=2).error
    assert "found 4" in error and "dot" in error
    assert parse_numbers("0.5,0.5", expected_count=2).values == (0.5, 0.5)  # still a separator
    assert "dot" not in parse_numbers("1 2 3", expected_count=2).error


# ------------------------------------------------------------------------ choice wordings


def test_kv_cache_score_shape_names_the_newest_input():
    """Feed t - 1 tokens, then token t alone with the cache: the recorded scores of the new
    step are one row (the newest input's query) against t keys, the answer 1 × t."""
    model = Transformer(preset("gpt-tiny")).eval()
    t = 6
    with torch.no_grad():
        _, cache = model.step(torch.tensor([[5, 9, 2, 7, 3]]))
        with recording(lambda n: n == "blocks.0.attn.hook_attn_scores") as store:
            model.step(torch.tensor([[11]]), cache)
    heads = model.cfg.n_heads
    assert tuple(store["blocks.0.attn.hook_attn_scores"].shape) == (1, heads, 1, t)
    q = question_by_id("kv-cache-score-shape")
    assert "while processing token t (the newest input" in q.prompt
    assert q.options[q.answer] == "1 × t"


def test_bigbird_feedback_names_both_missing_parts():
    """What BigBird has beyond sliding and dilated windows: a global row and column, and
    random keys; the feedback for that option must name both."""
    n = 32
    local = sparse_pattern("sliding", n) | sparse_pattern("dilated", n)
    extra = sparse_pattern("bigbird", n) & ~local
    far = 7  # beyond both windows (|i - j| <= 3, and <= 6 in steps of 2)
    assert extra[0, far:].all()  # the global token sees everyone ...
    assert extra[far:, 0].all()  # ... and is seen by everyone
    assert extra[1:, 1:].any()  # random keys away from the global token
    q = question_by_id("bigbird-components")
    why = grade_choice(q, q.options.index("Sliding window + dilated window only")).diagnosis
    assert "global" in why and "random" in why


def test_strided_local_rule_says_local_window_and_matches_the_notes_blocks():
    q = question_by_id("strided-pattern")
    assert "a local window" in q.explanation
    # the notes' local heads: j in the same block of 4 as i, ⌊j/4⌋ = ⌊i/4⌋ (and j ≤ i here)
    block = [j for j in range(14) if j // 4 == 13 // 4]
    assert "⌊j/4⌋ = ⌊i/4⌋" in q.explanation
    assert f"reads only {block[0]} and {block[1]}" in q.explanation and block == [12, 13]
    # the sliding window of 4 with the stride reaches every earlier token in two layers
    m = causal_pattern("strided", 14, stride=4).astype(int)
    assert ((m @ m)[13] > 0).all() and not m[13].all()


def test_bpe_unknown_word_only_byte_level_never_meets_the_unknown():
    q = question_by_id("bpe-unknown-word")
    chars = TeachingTokenizer(train_bpe("low low lower newest widest", num_merges=5))
    assert chars.encode("lowж").unknown == (False, True, False)  # a character never seen
    served = train_served_tokenizer(["low low lower newest widest"] * 3, vocab_size=270)
    ids = served.encode("transformerify ж 🙂")
    assert served.unk_id not in ids and served.decode(ids) == "transformerify ж 🙂"
    assert "Byte-level" in q.explanation and "character never seen" in q.explanation
    assert not q.explanation.endswith("Nothing is ever unknown.")


# ------------------------------------------------------------------------- the exercises


@pytest.mark.parametrize("seed", [None, *range(40)])
def test_beam_exercise_shows_each_probability_one_way(seed):
    """Seed 7's BBB is .95 · .55 · .7 = .36575: it must not read 0.3657 in one line and
    0.3658 in the next."""
    inst = ex_beam.SPEC.make(seed)
    text = " ".join(step.explanation for step in inst.steps)
    shown: dict[str, set[str]] = {}
    for seq, prob in re.findall(r"\b([AB]{2,3}) \(?(\d\.\d+)\)?", text):
        shown.setdefault(seq, set()).add(prob)
    assert shown and all(len(v) == 1 for v in shown.values()), shown
    for seq, (prob,) in shown.items():  # and it is the product along the path
        p = np.prod([inst.data["tree"][seq[:i]][seq[i]] for i in range(len(seq))])
        assert abs(float(prob) - p) <= 5e-5 + 1e-12


@pytest.mark.parametrize("spec", [ex_thinking.SPEC, ex_flying.SPEC], ids=lambda s: s.id)
def test_no_scale_in_the_scaled_box_speaks_of_no_softmax(spec):
    """Typing the raw dot products where the scaled scores go is the no-scale slip, caught
    before any softmax: its message must not say the learner took one."""
    inst = spec.make(None)
    if spec is ex_thinking.SPEC:
        raw = ex_thinking.SOURCE_SCORES  # q1·k1 = 112, q1·k2 = 96
    else:
        raw = inst.field("scores").expected  # the dot products, the box before
    f = inst.check("scaled", ", ".join(repr(float(x)) for x in np.ravel(raw)))
    assert f.mistake == "no_scale"
    assert "softmax" not in f.diagnosis and "√" in f.diagnosis
    weights = inst.field("weights")
    after = next(m for m in weights.mistakes if m.name == "no_scale")
    assert "softmax" in after.message  # there the learner did take one
