"""The quiz bank (tfviz.exercises.quiz): structure, facts, shuffling, grading, scoring.

Numeric answers are recomputed here independently of the bank: with torch's own layers and
functions where one exists (LayerNorm, softmax, unfold, TransformerEncoderLayer parameter
counts), otherwise with small plain-python re-implementations (BPE pair counts, beam search,
the sinusoid table), never by copying the bank's constants.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tfviz.exercises.quiz import (
    LESSONS,
    QUESTIONS,
    SECTIONS,
    ChoiceQuestion,
    Feedback,
    KnownMistake,
    NumericQuestion,
    answer_text,
    format_value,
    grade,
    grade_choice,
    grade_numeric,
    make_quiz,
    question_by_id,
    resolve_sections,
    score,
    shuffle_options,
    summary_message,
)

REPO = Path(__file__).resolve().parents[1]
CHOICE = [q for q in QUESTIONS if isinstance(q, ChoiceQuestion)]
NUMERIC = [q for q in QUESTIONS if isinstance(q, NumericQuestion)]
REQUIRED_SECTIONS = ("Foundations", "Attention", "The block", "Architectures and outputs",
                     "Efficiency and beyond")


def ids(questions):
    return [q.id for q in questions]


# ----------------------------------------------------------------------------- the bank


def test_bank_size():
    assert len(QUESTIONS) >= 36


@pytest.mark.parametrize("section", REQUIRED_SECTIONS)
def test_every_section_has_at_least_two_questions(section):
    assert sum(q.section == section for q in QUESTIONS) >= 2


def test_sections_are_the_curriculum_ones():
    assert set(REQUIRED_SECTIONS) <= set(SECTIONS)
    assert {q.section for q in QUESTIONS} <= set(SECTIONS)


def test_ids_unique_and_slug_shaped():
    counts = Counter(ids(QUESTIONS))
    assert [i for i, n in counts.items() if n > 1] == []
    for qid in counts:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", qid), qid


@pytest.mark.parametrize("q", QUESTIONS, ids=ids(QUESTIONS))
def test_question_basics(q):
    assert q.lesson in LESSONS
    assert q.section == LESSONS[q.lesson][0]
    assert q.prompt.strip() and q.explanation.strip()


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_choice_question_shape(q):
    assert 3 <= len(q.options) <= 5
    assert len(set(q.options)) == len(q.options)
    assert 0 <= q.answer < len(q.options)
    assert q.distractors, "at least one wrong option must be explained"
    for i, text in q.distractors.items():
        assert 0 <= i < len(q.options) and i != q.answer and text.strip()


@pytest.mark.parametrize("q", NUMERIC, ids=ids(NUMERIC))
def test_numeric_question_shape(q):
    assert math.isfinite(q.answer) and q.tolerance > 0 and q.unit.strip()
    values = [q.answer] + [m.value for m in q.mistakes]
    for i, a in enumerate(values):
        for b in values[i + 1:]:  # a learner's number can match at most one of them
            assert abs(a - b) >= 2 * q.tolerance, (q.id, a, b)
    for m in q.mistakes:
        assert m.explanation.strip()


# The brief's list of topics, each of which must appear somewhere in the bank's text.
TOPICS = ["RNN", "BPE", "embedding", "sin(", "RoPE", "ALiBi", "hash table", "√d_k", "heads",
          "causal", "padding", "residual", "LayerNorm", "pre-LN", "post-LN", "FFN", "router",
          "capacity", "load-balancing", "cross", "weight tying", "greedy", "temperature",
          "top-p", "beam", "[MASK]", "[CLS]", "[SEP]", "low-rank", "prompt tuning", "KV cache",
          "sliding", "dilat", "global", "BigBird", "strided", "receptive field", "Linformer",
          "multi-query", "grouped-query", "patch", "class token", "110 million"]


@pytest.mark.parametrize("topic", TOPICS)
def test_topic_is_covered(topic):
    def text(q):
        parts = [q.prompt, q.explanation]
        if isinstance(q, ChoiceQuestion):
            parts += [*q.options, *q.distractors.values()]
        return " ".join(parts).casefold()

    assert any(topic.casefold() in text(q) for q in QUESTIONS), topic


def test_questions_are_frozen_and_read_only():
    q = CHOICE[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.answer = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        q.distractors[0] = "x"  # type: ignore[index]
    assert isinstance(hash(q), int) and isinstance(hash(NUMERIC[0]), int)


@pytest.mark.parametrize("bad", [
    dict(answer=3),                             # index out of range
    dict(options=("a", "b")),                   # too few options
    dict(options=("a", "a", "b")),              # duplicates
    dict(distractors={}),                       # no distractor explained
    dict(distractors={0: "the right one"}),     # distractor on the answer
    dict(section="Attention"),                  # lesson 1 is Foundations
    dict(lesson=99),
])
def test_choice_question_checks_itself(bad):
    args = dict(id="x", lesson=1, prompt="p?", options=("a", "b", "c"), answer=0,
                explanation="e", distractors={1: "no"})
    with pytest.raises(ValueError):
        ChoiceQuestion(**(args | bad))


@pytest.mark.parametrize("bad", [
    dict(tolerance=0),
    dict(answer=math.inf),
    dict(mistakes=(KnownMistake(1.05, "too close to the answer"),)),
    dict(explanation=" "),
])
def test_numeric_question_checks_itself(bad):
    args = dict(id="x", lesson=19, prompt="p?", answer=1.0, tolerance=0.1, unit="u",
                explanation="e")
    with pytest.raises(ValueError):
        NumericQuestion(**(args | bad))


# ------------------------------------------------- numeric answers, recomputed independently


def bpe_pair_counts(corpus: dict[str, int], end="</w>") -> Counter:
    counts: Counter = Counter()
    for word, freq in corpus.items():
        symbols = list(word) + [end]
        for a, b in zip(symbols, symbols[1:]):
            counts[(a, b)] += freq
    return counts


BPE_CORPUS = {"tea": 6, "ten": 4, "tent": 3, "eat": 5}


def sinusoid(k: int, column: int, d: int = 4, n: int = 100) -> float:
    i = column // 2
    angle = k / n ** (2 * i / d)
    return math.sin(angle) if column % 2 == 0 else math.cos(angle)


BEAM_FIRST = {"A": 0.5, "B": 0.4, "C": 0.1}
BEAM_NEXT = {"A": {"x": 0.4, "y": 0.35, "z": 0.25}, "B": {"x": 0.9, "y": 0.05, "z": 0.05},
             "C": {"x": 1.0}}


def beam_search(beam: int) -> float:
    prefixes = sorted(BEAM_FIRST.items(), key=lambda kv: -kv[1])[:beam]
    finals = [(p + t, pp * pt) for p, pp in prefixes for t, pt in BEAM_NEXT[p].items()]
    return max(prob for _, prob in finals)


def attention(q, k, v, mask=None, scale=True):
    scores = q @ k.T
    if scale:
        scores = scores / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def flying_arrows() -> float:
    x = torch.tensor([[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]], dtype=torch.float64)
    out = attention(x[:, 0:2], x[:, 2:4], x[:, 4:6])
    return out[0, 0].item()


HOW_ARE_YOU = torch.tensor([[-1, -1, 1, 1], [1, 1, -1, -1], [-1, 2, 1, -2]], dtype=torch.float64)


def how_are_you(causal=True, scale=True) -> float:
    x = HOW_ARE_YOU
    q, k = x[:, [0, 2]], x[:, [1, 3]]
    n = len(x)
    mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None
    head1 = attention(q, k, x[:, 0:2], mask, scale)
    head2 = attention(q, k, x[:, 2:4], mask, scale)
    return torch.cat([head1, head2], dim=-1)[1, 0].item()  # row of 'are', first component


def encoder_layer_weights() -> int:
    layer = nn.TransformerEncoderLayer(512, 8, 2048, device="meta")
    return sum(p.numel() for p in layer.parameters() if p.dim() == 2)  # matrices, no biases/LN


def kv_cache_mib() -> float:
    cache = torch.empty(2, 12, 1024, 768, dtype=torch.float16, device="meta")  # K/V, L, T, d
    return cache.numel() * cache.element_size() / 2 ** 20


def linformer_entries() -> int:
    q = torch.empty(4096, 64, device="meta")
    k = torch.empty(4096, 64, device="meta")
    e = torch.empty(256, 4096, device="meta")
    return (q @ (e @ k).T).numel()


def vit_patches() -> torch.Size:
    return F.unfold(torch.zeros(1, 3, 224, 224), kernel_size=16, stride=16).shape


RECOMPUTE = {
    "bpe-pair-count": lambda: bpe_pair_counts(BPE_CORPUS)[("e", "a")],
    "sinusoid-cos-entry": lambda: sinusoid(2, 1),
    "sinusoid-sin-entry": lambda: sinusoid(3, 2),
    "thinking-machines-weight":
        lambda: torch.softmax(torch.tensor([112.0, 96.0]) / math.sqrt(64), 0)[0].item(),
    "scaled-score": lambda: 112 / math.isqrt(64),
    "dot-product-variance": lambda: 256,  # checked by simulation below
    "output-projection-size":
        lambda: nn.MultiheadAttention(512, 8, bias=False, device="meta").out_proj.weight.numel(),
    "causal-mask-count": lambda: int(torch.ones(5, 5).triu(diagonal=1).sum()),
    "layernorm-value":
        lambda: F.layer_norm(torch.tensor([2.0, 4, 6, 8]), (4,), eps=0.0)[0].item(),
    "ffn-forward": lambda: (torch.relu(torch.tensor([1.5, -2, 0.5])) @ torch.tensor([2.0, 3, -4])
                            + 0.5).item(),
    "moe-gate-value": lambda: torch.softmax(torch.tensor([2.0, 1, 0, 0]), 0).max().item(),
    "moe-dropped-tokens": lambda: max(0, 14 - int(1.25 * 64 / 8)),
    "encoder-layer-weights": encoder_layer_weights,
    "temperature-softmax": lambda: torch.softmax(torch.tensor([2.0, 1, 0]) / 0.5, 0)[0].item(),
    "beam-search-result": lambda: beam_search(beam=2),
    "bert-mask-count": lambda: 1000 * 15 // 100 * 80 // 100,
    "bert-mask-share": lambda: 100 * (15 / 100) * (10 / 100),
    "lora-params": lambda: torch.empty(1024, 8).numel() + torch.empty(8, 1024).numel(),
    "kv-cache-memory": kv_cache_mib,
    "dilated-receptive-field": lambda: sum(2 * 512 for _layer in range(12)),
    "linformer-scores": linformer_entries,
    "gqa-kv-heads": lambda: len({head // (32 // 8) for head in range(32)}),
    "vit-patch-count": lambda: vit_patches()[-1],
    "vit-patch-vector": lambda: vit_patches()[1],
    "flying-arrows-output": flying_arrows,
    "how-are-you-output": how_are_you,
}


def test_every_numeric_question_is_recomputed():
    assert set(RECOMPUTE) == set(ids(NUMERIC))


@pytest.mark.parametrize("qid", sorted(RECOMPUTE))
def test_numeric_answer_recomputed(qid):
    q = question_by_id(qid)
    assert q.answer == pytest.approx(float(RECOMPUTE[qid]()), abs=1e-6)


@pytest.mark.parametrize("qid, slip", [
    ("thinking-machines-weight", lambda: torch.softmax(torch.tensor([112.0, 96.0]), 0)[0].item()),
    ("how-are-you-output", lambda: how_are_you(causal=False)),
    ("how-are-you-output", lambda: how_are_you(scale=False)),
    ("sinusoid-cos-entry", lambda: math.cos(math.radians(2))),
    ("layernorm-value", lambda: ((2 - 5) / torch.tensor([2.0, 4, 6, 8]).std()).item()),  # n-1
    ("vit-patch-count", lambda: vit_patches()[-1] + 1),
    ("beam-search-result", lambda: beam_search(beam=1)),  # greedy
    ("encoder-layer-weights", lambda: encoder_layer_weights() - 512 * 512),
])
def test_known_mistake_recomputed(qid, slip):
    q = question_by_id(qid)
    wrong = float(slip())
    assert any(abs(m.value - wrong) <= q.tolerance / 10 for m in q.mistakes), (qid, wrong)
    assert grade_numeric(q, repr(wrong)).diagnosis is not None


def test_dot_product_variance_by_simulation():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 20000, 256, generator=g, dtype=torch.float64)
    dots = (q * k).sum(-1)
    assert dots.var().item() == pytest.approx(question_by_id("dot-product-variance").answer,
                                              rel=0.05)
    assert (dots / math.sqrt(256)).var().item() == pytest.approx(1.0, rel=0.05)


def test_thinking_machines_matches_source_numbers():
    # The source rounds softmax(14, 12) to 0.88 and 0.12.
    w = torch.softmax(torch.tensor([14.0, 12.0]), 0)
    assert [round(v, 2) for v in w.tolist()] == [0.88, 0.12]
    assert answer_text(question_by_id("thinking-machines-weight")) == "0.88"


# ---------------------------------------- choice answers that follow from a computation


def test_bpe_first_merge_is_most_frequent_pair():
    (a, b), _ = bpe_pair_counts(BPE_CORPUS).most_common(1)[0]
    q = question_by_id("bpe-first-merge")
    assert q.options[q.answer] == f"({a}, {b})"


def test_top_p_nucleus():
    probs = {"A": 0.5, "B": 0.3, "C": 0.15, "D": 0.05}
    kept, total = [], 0.0
    for token, p in sorted(probs.items(), key=lambda kv: -kv[1]):
        if total >= 0.75:
            break
        kept.append(token)
        total += p
    q = question_by_id("top-p-set")
    assert q.options[q.answer] == " and ".join(kept)


def test_strided_pattern_positions():
    allowed = [j for j in range(13, -1, -1) if (13 - j) % 4 == 0]
    q = question_by_id("strided-pattern")
    assert q.options[q.answer] == ", ".join(map(str, allowed))


def test_score_matrix_shape():
    x = torch.empty(10, 512, device="meta")
    w = torch.empty(512, 64, device="meta")
    shape = ((x @ w) @ (x @ w).T).shape
    q = question_by_id("score-matrix-shape")
    assert q.options[q.answer] == f"{shape[0]} × {shape[1]}"


def bert_params(layers: int, d: int, vocab: int = 30522, positions: int = 512) -> int:
    def count(module):
        return sum(p.numel() for p in module.parameters())

    embeddings = count(nn.Embedding(vocab, d, device="meta")) + positions * d + 2 * d + 2 * d
    layer = count(nn.TransformerEncoderLayer(d, d // 64, 4 * d, device="meta"))
    pooler = count(nn.Linear(d, d, device="meta"))
    return embeddings + layers * layer + pooler


def test_bert_sizes():
    base, large = bert_params(12, 768), bert_params(24, 1024)
    assert round(base / 1e6, -1) == 110 and round(large / 1e6, -1) == 340
    q = question_by_id("bert-base-size")
    assert "110" in q.options[q.answer]
    assert any("340" in q.options[i] for i in q.distractors)


# ----------------------------------------------------------- grading every bank question


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_grade_every_option(q):
    for i in range(len(q.options)):
        f = grade_choice(q, i)
        assert f.valid and f.correct == (i == q.answer)
        assert q.explanation in f.message
        if i in q.distractors:
            assert f.diagnosis == q.distractors[i] and f.diagnosis in f.message


@pytest.mark.parametrize("q", NUMERIC, ids=ids(NUMERIC))
def test_grade_every_numeric_answer_and_mistake(q):
    shown = answer_text(q)
    assert grade_numeric(q, shown).correct, shown  # the displayed answer itself counts
    assert grade_numeric(q, repr(q.answer)).correct
    assert grade_numeric(q, q.answer).correct  # a number widget's float
    for m in q.mistakes:
        f = grade_numeric(q, repr(m.value))
        assert f.valid and not f.correct and f.diagnosis == m.explanation
        assert m.explanation in f.message and shown in f.message


# ------------------------------------------------------------------- shuffling and drawing


@pytest.mark.parametrize("seed", [0, 1, 42, 2**40])
def test_make_quiz_is_deterministic(seed):
    a, b = make_quiz(seed), make_quiz(seed)
    assert a == b
    assert sorted(ids(a)) == sorted(ids(QUESTIONS))  # a permutation of the whole bank


def test_different_seeds_give_different_orders():
    orders = {tuple(ids(make_quiz(seed))) for seed in range(5)}
    assert len(orders) == 5


@pytest.mark.parametrize("seed", [0, 3, 99])
def test_option_shuffle_remaps_answer_and_distractors(seed):
    originals = {q.id: q for q in QUESTIONS}
    moved = 0
    for q in make_quiz(seed):
        o = originals[q.id]
        if not isinstance(q, ChoiceQuestion):
            assert q == o
            continue
        assert sorted(q.options) == sorted(o.options)
        assert q.options[q.answer] == o.options[o.answer]
        assert {q.options[i]: t for i, t in q.distractors.items()} == \
               {o.options[i]: t for i, t in o.distractors.items()}
        assert grade_choice(q, q.answer).correct
        assert grade_choice(q, o.answer).correct == (q.options[o.answer] == o.options[o.answer])
        if not o.shuffle:
            assert q.options == o.options
        moved += q.options != o.options
    assert moved > len(CHOICE) // 2  # options really are shuffled


def test_option_order_does_not_depend_on_the_draw():
    for q in make_quiz(5, n=10, sections=["Attention"]):
        assert q == shuffle_options(question_by_id(q.id), 5)
        assert q in make_quiz(5)


def test_shuffle_off_keeps_bank_options():
    for q in make_quiz(8, shuffle=False):
        assert q == question_by_id(q.id)


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 1), (10, 10), (10_000, len(QUESTIONS))])
def test_make_quiz_n(n, expected):
    quiz = make_quiz(3, n=n)
    assert len(quiz) == expected
    assert ids(quiz) == ids(make_quiz(3))[:expected]  # a prefix of the full order


@pytest.mark.parametrize("names, expected", [
    (["Attention"], {"Attention"}),
    (["the block", "PRACTICE"], {"The block", "Practice"}),
    (["block", " the  BLOCK "], {"The block"}),
    (["Architectures", "Efficiency"], {"Architectures and outputs", "Efficiency and beyond"}),
    ("Foundations", {"Foundations"}),
])
def test_make_quiz_sections(names, expected):
    quiz = make_quiz(11, sections=names)
    assert {q.section for q in quiz} == expected
    assert len(quiz) == sum(q.section in expected for q in QUESTIONS)


@pytest.mark.parametrize("bad", [["Nonsense"], ["the"], [""], ["Attention", "Poetry"]])
def test_unknown_section_is_refused(bad):
    with pytest.raises(ValueError, match="unknown section"):
        make_quiz(0, sections=bad)


def test_bad_draw_arguments():
    with pytest.raises(ValueError):
        make_quiz(0, n=-1)
    with pytest.raises(TypeError):
        make_quiz("seed")  # type: ignore[arg-type]
    assert resolve_sections(["attention", "Attention"]) == ("Attention",)


def test_draw_is_identical_in_another_process():
    """String seeds go through SHA-512, so a different PYTHONHASHSEED changes nothing."""
    def fingerprint(quiz):
        return repr([(q.id, getattr(q, "options", None)) for q in quiz])

    code = ("from tfviz.exercises.quiz import make_quiz; "
            "print(repr([(q.id, getattr(q, 'options', None)) for q in make_quiz(1234, n=15)]))")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    assert run.stdout.strip() == fingerprint(make_quiz(1234, n=15))


def test_quiz_code_never_imports_streamlit():
    sources = list((REPO / "tfviz" / "exercises" / "quiz").rglob("*.py"))
    assert sources
    for path in sources:
        assert not re.search(r"^\s*(import|from)\s+streamlit", path.read_text(), re.M), path


# --------------------------------------------------------------------- grading learner input

TM = "thinking-machines-weight"  # answer softmax(14, 12)[0] ≈ 0.8808, tolerance 0.005


@pytest.mark.parametrize("text", ["0.88", " 0.88 ", "0.881", "88%", "88 %", "22/25", ".88",
                                  "+0.88", "8.8e-1", "０.８８", "\t0.88\n"])
def test_numeric_right_answers(text):
    f = grade_numeric(question_by_id(TM), text)
    assert f.correct and f.valid and f.message.startswith("Correct")


@pytest.mark.parametrize("text, hint", [
    ("1", "forgot the scale"),
    ("0.5622", "instead of √d_k"),
    ("88", "percentage"),
    ("-0.88", "sign"),
    ("0.9", "Close"),
    ("0.1", None),
])
def test_numeric_wrong_answers_say_what_went_wrong(text, hint):
    f = grade_numeric(question_by_id(TM), text)
    assert f.valid and not f.correct
    assert "0.88" in f.message  # the right answer is shown
    if hint is None:
        assert f.diagnosis is None
    else:
        assert hint in f.diagnosis and hint in f.message


GARBAGE = ["", "   ", "abc", "🙂", "😀 0.88", "<b>0.88</b>", "<script>alert(1)</script>",
           "x" * 100_000, "9" * 100_000, "0.8\x008", "\x00", "0.88 0.12", "0.88, 0.12",
           "0,88", "1/0", "3/5/7", "inf", "-∞", "nan", "1e999", "0x10", "2**3", "__import__('os')",
           "sqrt(2)", "--1", None, [], {}, object(), b"0.88", True]


@pytest.mark.parametrize("text", GARBAGE, ids=lambda t: repr(t)[:20])
def test_numeric_garbage_is_refused_kindly(text):
    f = grade_numeric(question_by_id(TM), text)
    assert isinstance(f, Feedback)
    assert not f.correct and not f.valid
    assert isinstance(f.message, str) and 0 < len(f.message) < 400
    assert "\x00" not in f.message
    assert "probability" in f.message  # the format hint is repeated


@pytest.mark.parametrize("text, correct", [
    ("1.5", True), ("1.5%", True), ("1.5 %", True), ("3/2", True), ("0.015", False),
    ("12", False),
])
def test_percent_question(text, correct):
    q = question_by_id("bert-mask-share")
    f = grade_numeric(q, text)
    assert f.valid and f.correct == correct
    if text == "0.015":
        assert "percentage" in f.diagnosis
    if text == "12":
        assert f.diagnosis == "12% is the share replaced by [MASK] (80% of 15%)."


@pytest.mark.parametrize("text, correct", [
    ("3,145,728", True), ("3145728", True), ("+3,145,728", True), ("3145728.0", True),
    ("3,145,729", False),
])
def test_thousands_separators(text, correct):
    f = grade_numeric(question_by_id("encoder-layer-weights"), text)
    assert f.valid and f.correct == correct


def test_decimal_comma_gets_a_specific_hint():
    f = grade_numeric(question_by_id(TM), "0,88")
    assert not f.valid and "dot" in f.message


@pytest.mark.parametrize("choice", [None, True, False, -1, 4, 5, 99, "0", 0.0, 1.5, [], "a"],
                         ids=repr)
def test_choice_garbage_is_refused_kindly(choice):
    q = question_by_id("soft-lookup")
    f = grade_choice(q, choice)
    assert not f.correct and not f.valid and f.message


def test_choice_accepts_numpy_integers():
    q = question_by_id("soft-lookup")
    assert grade_choice(q, np.int64(q.answer)).correct


def test_wrong_kind_of_answer_does_not_raise():
    assert not grade_choice(NUMERIC[0], 0).valid
    assert not grade_numeric(CHOICE[0], "1").valid
    assert grade(CHOICE[0], CHOICE[0].answer).correct
    assert grade(NUMERIC[0], answer_text(NUMERIC[0])).correct


def test_feedback_is_frozen():
    f = grade(CHOICE[0], 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.correct = True  # type: ignore[misc]


@pytest.mark.parametrize("value, tol, text", [
    (0.8807970779778823, 0.005, "0.88"), (196.0, 0.5, "196"), (3145728.0, 0.5, "3,145,728"),
    (-0.4161468365471424, 0.005, "-0.42"), (-0.4161468365471424, 0.001, "-0.416"),
    (1.5, 0.05, "1.5"), (-0.0001, 0.01, "0"),
])
def test_format_value(value, tol, text):
    assert format_value(value, tol) == text


# ------------------------------------------------------------------------- score, summary


@pytest.mark.parametrize("results, expected", [
    ([], (0, 0, 0.0)),
    ([True], (1, 1, 100.0)),
    ([False, False], (0, 2, 0.0)),
    ([True, False, True, True], (3, 4, 75.0)),
])
def test_score(results, expected):
    assert score(results) == expected


def test_score_accepts_feedback():
    q = question_by_id("soft-lookup")
    results = [grade_choice(q, q.answer), grade_choice(q, (q.answer + 1) % 4)]
    assert score(results) == (1, 2, 50.0)


@pytest.mark.parametrize("results, phrase", [
    ([], "No answers yet"),
    ([True, True], "perfect"),
    ([True] * 4 + [False], "Great work"),
    ([True, False], "Good progress"),
    ([False, False, True], "Keep going"),
])
def test_summary_message(results, phrase):
    assert phrase in summary_message(results)


def test_summary_names_lessons_to_revisit():
    qs = [question_by_id("thinking-machines-weight"), question_by_id("vit-patch-count"),
          question_by_id("kv-cache-contents")]
    text = summary_message([False, True, False], qs)
    assert "1 of 3" in text
    assert "5 (Self-attention step by step)" in text and "16 (KV cache)" in text
    assert "19" not in text
