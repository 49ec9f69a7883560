"""Lesson 13's numbers: which cross-attention head reads the source backwards, what shape each
tensor of a decoding step has, and which mask each kind of stack uses. Pure numpy.

reverse-encdec writes the source backwards, so decoder step t (reading <bos> y_1 … y_t, and
writing y_{t+1} = x_{n-t}) needs source position n − 1 − t: a head that does the job puts its
weight on the anti-diagonal of the (steps × source) cross-attention map.

>>> cross = np.zeros((1, 2, 3, 3)); cross[0, 1] = np.eye(3)[::-1]   # head 1 reads backwards
>>> anti_diagonal_scores(cross).tolist()
[[0.0, 1.0]]
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.config import ModelConfig
from tfviz.reference import causal_mask


def anti_diagonal_scores(cross: np.ndarray) -> np.ndarray:
    """(layers, heads): each head's mean cross-attention weight on the mirrored source position,
    over the steps that write a letter. ``cross`` is (layers, heads, steps, n); step t reads
    source position n − 1 − t, for t < min(steps, n) (the last step writes <eos>)."""
    L, H, T, n = cross.shape
    t = np.arange(min(T, n))
    return cross[:, :, t, n - 1 - t].mean(-1)  # (L, H)


def score_rows(scores: np.ndarray) -> list[dict]:
    """:func:`anti_diagonal_scores` as the lesson's table: a row a layer, a column a head, each
    score to 4 decimals.

    >>> score_rows(np.array([[0.123456, 0.5]]))
    [{'layer': 0, 'head 0': 0.1235, 'head 1': 0.5}]
    """
    return [{"layer": layer, **{f"head {h}": round(float(s), 4) for h, s in enumerate(row)}}
            for layer, row in enumerate(scores)]


@dataclass(frozen=True)
class HeadScore:
    layer: int
    head: int
    score: float


def anti_diagonal_head(cross: np.ndarray) -> HeadScore:
    """The head with the highest :func:`anti_diagonal_scores` (ties: the first in layer order)."""
    scores = anti_diagonal_scores(cross)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return HeadScore(int(layer), int(head), float(scores[layer, head]))


def step_shapes(cfg: ModelConfig, step: int, n: int) -> list[str]:
    """The shapes of decoding step ``step`` (counted from 1: the decoder has read ``step``
    tokens) for a source of ``n`` tokens, one line per stage, as the page prints them. A step
    feeds only the newest token: its query is one row, and each attention map gains one row.

    >>> from tfviz.config import preset
    >>> step_shapes(preset("reverse-encdec"), 3, 5)[1]
    'Cross-attention: the new query 1 × d = 1 × 64 against keys and values n × d = 5 × 64 from the memory, computed once; per head 1 × 16 against 5 × 16, weights 1 × 5: the newest row of the cross-attention map'
    """
    d, dh, H, V = cfg.d_model, cfg.d_head, cfg.n_heads, cfg.vocab_size
    t = step
    kept = (f" ({t - 1} of them kept from the earlier steps, only the new token's computed now)"
            if t > 1 else "")
    return [
        f"Self-attention (causal): the new token's query 1 × d = 1 × {d} reads the {t} decoder "
        f"token{'s' if t > 1 else ''} so far: keys and values t × d = {t} × {d}{kept}, weights "
        f"1 × {t}: the newest row of the {t} × {t} map. Tokens after it are not written yet, so "
        "this row has nothing to mask",
        f"Cross-attention: the new query 1 × d = 1 × {d} against keys and values n × d = {n} × {d} "
        f"from the memory, computed once; per head 1 × {dh} against {n} × {dh}, weights 1 × {n}: "
        "the newest row of the cross-attention map",
        f"LM head: the new row 1 × {d} times Eᵀ ({d} × {V}) gives 1 × {V} logits; the most "
        f"probable token is written ({H} heads in every attention layer)",
    ]


def step_notes(cfg: ModelConfig, read: Sequence[str], written: Sequence[str],
               probs: Sequence[float], n: int) -> list[list[str]]:
    """Each decoding step's lines for the page: what the decoder has read and what it writes,
    then :func:`step_shapes`. ``read`` are the tokens read (<bos> first), ``written`` the
    token each step wrote and ``probs`` its probability.

    >>> from tfviz.config import preset
    >>> step_notes(preset("reverse-encdec"), ["<bos>", "b"], ["b", "a"], [0.99, 0.98], 2)[1][0]
    'Step 2: the decoder has read <bos> b and writes a (probability 0.9800).'
    """
    return [[f"Step {s + 1}: the decoder has read {' '.join(read[:s + 1])} and writes "
             f"{written[s]} (probability {probs[s]:.4f}).", *step_shapes(cfg, s + 1, n)]
            for s in range(len(written))]


@dataclass(frozen=True)
class RowPeak:
    layer: int
    head: int
    query: int
    key: int
    weight: float  # the largest weight this row puts on one key


def row_peaks(patterns: np.ndarray) -> tuple[RowPeak, RowPeak]:
    """Of every row of every (layers, heads, n, n) encoder map, the most concentrated one (the
    largest weight on a single key) and the most even one (whose largest weight is smallest).
    Nothing masks an encoder row, but whether it spreads or picks one key is learned.

    >>> p = np.full((1, 2, 2, 2), 0.5); p[0, 1, 0] = [0.9, 0.1]
    >>> sharp, even = row_peaks(p)
    >>> (sharp.head, sharp.query, sharp.key, sharp.weight), (even.head, even.query, even.weight)
    ((1, 0, 0, 0.9), (0, 0, 0.5))
    """
    tops = patterns.max(-1)  # (L, H, n): each row's largest weight

    def peak(flat: int) -> RowPeak:
        layer, head, query = np.unravel_index(flat, tops.shape)
        key = int(patterns[layer, head, query].argmax())
        return RowPeak(int(layer), int(head), int(query), key, float(tops[layer, head, query]))

    return peak(int(tops.argmax())), peak(int(tops.argmin()))


@dataclass(frozen=True)
class Architecture:
    """One kind of transformer stack: what its blocks hold and the masks they use."""

    name: str
    blocks: str  # what one block does, in order
    examples: str
    ours: str  # the model of this app built this way
    masks: tuple[tuple[str, np.ndarray], ...]  # (which attention, allowed (queries, keys)) pairs


def attention_masks(cfg: ModelConfig, n: int, t: int) -> tuple[tuple[str, np.ndarray], ...]:
    """The masks a model of ``cfg`` uses, as True = may attend, for n source and t target
    tokens: an encoder's self-attention sees everything, a decoder's only the past (causal),
    and cross-attention every source token.

    >>> from tfviz.config import preset
    >>> [(name, m.astype(int).tolist()) for name, m in attention_masks(preset("gpt-tiny"), 2, 2)]
    [('self-attention (causal)', [[1, 0], [1, 1]])]
    """
    if cfg.arch == "encoder":
        return (("self-attention (bidirectional)", np.ones((n, n), dtype=bool)),)
    if cfg.arch == "decoder":
        return (("self-attention (causal)", causal_mask(n)),)
    return (("encoder self-attention (bidirectional)", np.ones((n, n), dtype=bool)),
            ("decoder self-attention (causal)", causal_mask(t)),
            ("cross-attention (decoder reads encoder)", np.ones((t, n), dtype=bool)))


def architectures(models: dict[str, ModelConfig], n: int = 4, t: int = 4) -> list[Architecture]:
    """Encoder-only, decoder-only and encoder-decoder, each with the masks its model in
    ``models`` (one config per arch: bert-tiny, gpt-tiny, reverse-encdec) uses."""
    by_arch = {cfg.arch: (name, cfg) for name, cfg in models.items()}
    rows = [
        ("encoder", "Encoder-only", "self-attention over every token → feed-forward",
         "BERT, RoBERTa (a masked-word guesser, a classifier)"),
        ("decoder", "Decoder-only", "masked self-attention over earlier tokens → feed-forward",
         "GPT-2, GPT-3, Llama (writing text)"),
        ("encoder-decoder", "Encoder-decoder",
         "encoder: self-attention → feed-forward; decoder: masked self-attention → "
         "cross-attention to the encoder's output → feed-forward",
         "the original Transformer, T5, BART (translation, summaries)"),
    ]
    out = []
    for arch, title, blocks, examples in rows:
        name, cfg = by_arch[arch]
        out.append(Architecture(title, blocks, examples, name, attention_masks(cfg, n, t)))
    return out
