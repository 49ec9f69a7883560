"""The quiz bank: choice answers that follow from a computation, and every option and
numeric answer graded (the numeric answers themselves are recomputed in test_quiz_answers.py)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tfviz.config import ModelConfig, preset
from tfviz.params import GPT2_SMALL, count_parameters
from tfviz.model import Transformer
from tfviz.exercises.quiz import (answer_text, grade_choice, grade_numeric, make_quiz,
                                   question_by_id)
from quiz_parts import CHOICE, NUMERIC, ids


# ---------------------------------------- choice answers that follow from a computation


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


def _option(q, text):
    return q.options.index(text)


def test_strided_pattern_positions():
    allowed = [j for j in range(13, -1, -1) if (13 - j) % 4 == 0]
    q = question_by_id("strided-pattern")
    assert q.options[q.answer] == ", ".join(map(str, allowed))
    # the option 13, 12, 11, 10 is a local window of the last 4 positions, and says so
    window = [j for j in range(13, -1, -1) if 0 <= 13 - j < 4]
    text = ", ".join(map(str, window))
    assert "a local window" in grade_choice(q, _option(q, text)).diagnosis
    assert "block" not in grade_choice(q, _option(q, text)).diagnosis
    # the explanation's claim: window then stride reaches every earlier token in two layers
    reach = {j for k in window for j in range(k + 1) if (k - j) % 4 == 0}
    assert reach == set(range(14)) and "two layers" in q.explanation


def test_kv_cache_score_shape_states_its_convention():
    t, d_k = 7, 4  # rows are queries, columns keys: the new query against all t keys
    q_new, keys = torch.empty(1, d_k, device="meta"), torch.empty(t, d_k, device="meta")
    rows, cols = (q_new @ keys.T).shape
    q = question_by_id("kv-cache-score-shape")
    assert "one row per query and one column per key" in q.prompt
    assert q.options[q.answer] == f"{rows} × {'t' if cols == t else cols}"
    assert "t × 1" not in q.options  # the same scores written as a column: not a wrong answer


def test_pre_ln_feedback_matches_the_parameter_counter():
    pre = count_parameters(GPT2_SMALL, norm_place="pre").total
    post = count_parameters(GPT2_SMALL, norm_place="post").total
    assert pre - post == 2 * GPT2_SMALL.d_model  # one more LayerNorm (γ and β), after the stack
    q = question_by_id("why-pre-ln")
    why = grade_choice(q, _option(q, "Pre-LN has fewer parameters")).diagnosis
    assert "one more" in why and "exactly the same" not in why


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_pipeline_order_allows_positions_inside_attention(positional):
    """With RoPE or ALiBi nothing is added to the vectors before the first block, so the
    feedback must not claim that positions have to be there already."""
    model = Transformer(ModelConfig(arch="decoder", n_layers=1, positional=positional))
    assert not hasattr(model, "pos_embed") and not hasattr(model, "pos_table")
    q = question_by_id("pipeline-order")
    texts = [q.explanation, *q.distractors.values()]
    assert not any("must already be in the vectors" in t for t in texts)
    late = grade_choice(q, _option(q, "text → tokens → stack of blocks → add positions → logits"))
    assert {"RoPE", "ALiBi"} <= set(late.diagnosis.replace(",", " ").split())


def test_each_decoder_layer_projects_the_encoder_output_itself():
    """encoder-runs-once: one encoder run, but each decoder layer has its own W^K and W^V."""
    model = Transformer(preset("reverse-encdec"))
    keys = [b.cross_attn.W_k.weight for b in model.blocks]
    values = [b.cross_attn.W_v.weight for b in model.blocks]
    assert len(keys) >= 2 and not torch.equal(keys[0], keys[1])
    assert not torch.equal(values[0], values[1])
    q = question_by_id("encoder-runs-once")
    assert "its own W^K and W^V" in q.explanation
    assert "same top encoder output" not in " ".join(q.distractors.values())


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


def test_rope_scores_depend_on_the_distance_only():
    """Our model's RoPE, on random vectors: the right option scores exactly as (7, 4) does,
    and every wrong option scores otherwise."""
    from tfviz.model.positional import apply_rope, rope_angles

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, generator=g)

    def score(m: int, n: int) -> float:
        def turn(v, p):
            cos, sin = rope_angles(torch.tensor([p]), 8, base=100.0)
            return apply_rope(v[None, None, None], cos, sin)[0, 0, 0]
        return float(turn(q, m) @ turn(k, n))

    question = question_by_id("rope-relative-pair")
    positions = {"Query at 10, key at 7": (10, 7), "Query at 4, key at 7": (4, 7),
                 "Query at 14, key at 8": (14, 8), "Query at 7, key at 7": (7, 7)}
    assert set(positions) == set(question.options)
    for option, (m, n) in positions.items():
        same = abs(score(m, n) - score(7, 4)) < 1e-4  # float32 angles up to 14 radians
        assert same == (option == question.options[question.answer]), option


def test_rmsnorm_leaves_out_the_mean_and_beta():
    from tfviz.model.norm import LayerNorm, RMSNorm

    rms, ln = RMSNorm(6), LayerNorm(6)
    assert [n for n, _ in rms.named_parameters()] == ["weight"]  # γ only
    assert sorted(n for n, _ in ln.named_parameters()) == ["bias", "weight"]
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 9.0]])
    assert not torch.allclose(rms(x), ln(x), atol=1e-3)  # the mean matters ...
    centred = x - x.mean()
    assert torch.allclose(rms(centred), ln(centred), atol=1e-4)  # ... and is all that differs
    q = question_by_id("rmsnorm-vs-layernorm")
    assert "mean" in q.options[q.answer] and "β" in q.options[q.answer]


def test_swiglu_has_three_matrices_and_bends_the_gate():
    from tfviz.model.ffn import MLP

    mlp = MLP(ModelConfig(d_model=4, n_heads=1, d_ff=6, activation="swiglu", bias=False))
    assert sorted(n for n, _ in mlp.named_parameters()) == [
        "W_gate.weight", "W_in.weight", "W_out.weight"]
    x = torch.randn(1, 1, 4, generator=torch.Generator().manual_seed(1))
    gate, up = mlp.W_gate(x), mlp.W_in(x)
    assert torch.allclose(mlp(x), mlp.W_out(torch.nn.functional.silu(gate) * up))
    q = question_by_id("swiglu-matrices")
    assert q.options[q.answer].startswith("Three") and "SiLU bends x W_gate" in q.options[q.answer]


def test_a_gqa_cache_does_not_grow_with_the_query_heads():
    """Two models that differ only in their query heads keep caches of the same size; more
    K/V heads, or more layers, make it larger."""
    from tfviz.experiments.gqa_decode import cache_of_text

    def held(**sizes) -> int:
        cfg = preset("llama-tiny").replace(name="cache", head_dim=8, d_ff=16, vocab_size=40,
                                            **sizes)
        torch.manual_seed(0)
        return cache_of_text(Transformer(cfg).eval(), [1, 2, 3])[0]

    base = held(n_layers=2, n_heads=4, n_kv_heads=2, d_model=32)
    assert held(n_layers=2, n_heads=8, n_kv_heads=2, d_model=32) == base
    assert held(n_layers=2, n_heads=4, n_kv_heads=4, d_model=32) == 2 * base
    assert held(n_layers=4, n_heads=4, n_kv_heads=2, d_model=32) == 2 * base
    q = question_by_id("gqa-cache-depends")
    assert q.options[q.answer] == "The number of query heads"


# ----------------------------------------------------------- grading every bank question


@pytest.mark.parametrize("q", CHOICE, ids=ids(CHOICE))
def test_grade_every_option(q):
    """Every wrong option gets its own feedback, different from every other option's."""
    seen = {q.explanation}
    for i in range(len(q.options)):
        f = grade_choice(q, i)
        assert f.valid and f.correct == (i == q.answer)
        assert q.explanation in f.message
        if i == q.answer:
            assert f.diagnosis is None
            continue
        assert f.diagnosis == q.distractors[i] and f.diagnosis in f.message
        assert f.diagnosis not in seen, (q.id, q.options[i])
        seen.add(f.diagnosis)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffled_options_keep_their_own_feedback(seed):
    """However the options are drawn, picking one shows the feedback written beside it."""
    bank = {q.id: q for q in CHOICE}
    for q in make_quiz(seed):
        if q.id not in bank:
            continue
        written = {o: bank[q.id].distractors.get(i) for i, o in enumerate(bank[q.id].options)}
        for i, option in enumerate(q.options):
            assert grade_choice(q, i).diagnosis == written[option], (q.id, option)


# (question, option, words only the feedback written for that option contains)
OWN_FEEDBACK = [
    ("soft-lookup", "The key that best matches the query", "Keys only decide"),
    ("soft-lookup", "The sum of all values with equal weight", "Equal weights"),
    ("it-coreference", "it", "looks mostly at 'it'"),
    ("it-coreference", "wide", "'wide' is the clue"),
]


@pytest.mark.parametrize("qid, option, words", OWN_FEEDBACK)
def test_feedback_is_about_the_option_picked(qid, option, words):
    q = question_by_id(qid)
    f = grade_choice(q, _option(q, option))
    assert not f.correct and words in f.diagnosis
    others = [grade_choice(q, i).diagnosis for i in range(len(q.options)) if q.options[i] != option]
    assert not any(words in (d or "") for d in others)


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
