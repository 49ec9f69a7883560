"""The quiz bank (tfviz.exercises.quiz): every answer, recomputed.

Numeric answers are recomputed here independently of the bank: with torch's own layers and
functions where one exists (LayerNorm, softmax, unfold, TransformerEncoderLayer parameter
counts), otherwise with small plain-python re-implementations (BPE pair counts, beam search,
the sinusoid table), never by copying the bank's constants.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tfviz.config import ModelConfig, preset
from tfviz.exercises.params import GPT2_SMALL, count_parameters
from tfviz.model import Transformer
from tfviz.exercises.quiz import (answer_text, grade_choice, grade_numeric, make_quiz,
                                   question_by_id)
from quiz_parts import CHOICE, NUMERIC, ids


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


def _option(q, text):
    return q.options.index(text)


def test_strided_pattern_positions():
    allowed = [j for j in range(13, -1, -1) if (13 - j) % 4 == 0]
    q = question_by_id("strided-pattern")
    assert q.options[q.answer] == ", ".join(map(str, allowed))
    # the option 13, 12, 11, 10 is the sliding window of the last 4 positions, and says so
    window = [j for j in range(13, -1, -1) if 0 <= 13 - j < 4]
    text = ", ".join(map(str, window))
    assert "sliding window" in grade_choice(q, _option(q, text)).diagnosis
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
