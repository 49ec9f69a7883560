"""The quiz bank (tfviz.exercises.quiz): every answer, recomputed.

Numeric answers are recomputed here independently of the bank: with torch's own layers and
functions where one exists (LayerNorm, softmax, unfold, TransformerEncoderLayer parameter
counts), otherwise with small plain-python re-implementations (BPE pair counts, beam search,
the sinusoid table), never by copying the bank's constants.
"""


import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tfviz.exercises.quiz import (answer_text, grade_choice, grade_numeric, make_quiz,
                                   question_by_id)
from quiz_parts import NUMERIC, ids


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


def rope_turn(pair, angle: float) -> torch.Tensor:
    """A pair (a, c) turned by ``angle`` as a complex number: (a + ic) · e^(i·angle)."""
    z = torch.complex(torch.tensor(pair[0], dtype=torch.float64),
                      torch.tensor(pair[1], dtype=torch.float64))
    return torch.view_as_real(z * torch.polar(torch.tensor(1.0, dtype=torch.float64),
                                              torch.tensor(angle, dtype=torch.float64)))


def rms_last(x, center: bool = False) -> float:
    t = torch.tensor(x, dtype=torch.float64)
    out = F.layer_norm(t, t.shape, eps=0.0) if center else F.rms_norm(t, t.shape, eps=0.0)
    return out[-1].item()


def gqa_cache_kib(layers=16, kv_heads=8, d_head=64, dtype=torch.bfloat16, kinds=2) -> float:
    one = torch.empty(1, kv_heads, 1, d_head, dtype=dtype, device="meta")  # one token's K (or V)
    return layers * kinds * one.numel() * one.element_size() / 1024


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
    "rope-turned-coordinate": lambda: rope_turn((1.0, 2.0), 3 * 1.0)[0].item(),
    "rope-angle-slow-pair": lambda: 50 * 10000 ** (-2 * 2 / 8),
    "rmsnorm-value": lambda: rms_last([1.0, -1.0, 1.0, 3.0]),
    "swiglu-unit": lambda: (F.silu(torch.tensor(2.0, dtype=torch.float64)) * -1).item(),
    "gqa-cache-per-token": gqa_cache_kib,
    # looking inside (slips and the claims on models: tests/test_quiz_looking_inside.py)
    "dla-share": lambda: ((lambda p: (p - p.mean()) / 4 @ torch.tensor([1.0, 2, 0, -1]))(
        torch.tensor([2.0, 0, -1, 3]))).item(),
    "patching-fraction": lambda: (3.2 - -1) / (5 - -1),
    "induction-score-mean": lambda: torch.tensor([0.9, 0.8, 0.7, 0.6], dtype=torch.float64).mean().item(),
}


def test_every_numeric_question_is_recomputed():
    assert set(RECOMPUTE) == set(ids(NUMERIC))


@pytest.mark.parametrize("qid", sorted(RECOMPUTE))
def test_numeric_answer_recomputed(qid):
    q = question_by_id(qid)
    # float64 answers; a few recomputations are float32 ops on 2-4 numbers, an ulp or two off
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
    ("rope-turned-coordinate", lambda: rope_turn((1.0, 2.0), -3.0)[0].item()),  # sin's sign
    ("rope-turned-coordinate", lambda: rope_turn((1.0, 2.0), math.radians(3))[0].item()),
    ("rope-turned-coordinate", lambda: rope_turn((1.0, 2.0), 1.0)[0].item()),  # no position
    ("rope-angle-slow-pair", lambda: 50 * 10000 ** (-2 / 8)),  # i/d
    ("rope-angle-slow-pair", lambda: 50 * 10000 ** (-2 * 4 / 8)),  # i = 4, the dimension
    ("rope-angle-slow-pair", lambda: 10000 ** (-2 * 2 / 8)),  # no position
    ("rope-angle-slow-pair", lambda: 50 * 10000 ** (2 * 2 / 8)),  # + exponent
    ("rmsnorm-value", lambda: rms_last([1.0, -1.0, 1.0, 3.0], center=True)),  # LayerNorm
    ("rmsnorm-value", lambda: 3 / torch.tensor([1.0, 1, 1, 9]).sum().sqrt().item()),  # sum
    ("rmsnorm-value", lambda: 3 / torch.tensor([1.0, 1, 1, 9]).mean().item()),  # no root
    ("swiglu-unit", lambda: -torch.sigmoid(torch.tensor(2.0)).item()),
    ("swiglu-unit", lambda: 2 * F.silu(torch.tensor(-1.0)).item()),  # SiLU on the up value
    ("swiglu-unit", lambda: F.silu(torch.tensor(-2.0)).item()),  # SiLU after the product
    ("swiglu-unit", lambda: -2.0),  # no SiLU
    ("gqa-cache-per-token", lambda: gqa_cache_kib(kv_heads=32)),  # query heads
    ("gqa-cache-per-token", lambda: gqa_cache_kib(kinds=1)),  # K only
    ("gqa-cache-per-token", lambda: gqa_cache_kib(layers=1)),
    ("gqa-cache-per-token", lambda: gqa_cache_kib() * 8),  # bits for bytes
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


def test_bpe_first_merge_is_most_frequent_pair():
    (a, b), _ = bpe_pair_counts(BPE_CORPUS).most_common(1)[0]
    q = question_by_id("bpe-first-merge")
    assert q.options[q.answer] == f"({a}, {b})"
