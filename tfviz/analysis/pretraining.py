"""How BERT and T5 turn plain text into a training task, in numbers (lesson 15). Pure numpy.

- ``running_shares``: masking drawn again and again settles on BERT's 15 / 80 / 10 / 10;
- ``sentence_pair``: the ``[CLS] A [SEP] B [SEP]`` input with its segment ids;
- ``pretraining_parts``: which of BERT's pretraining pieces a model actually has;
- ``span_corruption``: T5's objective, spans of the text replaced by sentinels.

>>> pair = sentence_pair(["␣the", "␣cat"], ["␣it", "␣slept"])
>>> pair.tokens
('[CLS]', '␣the', '␣cat', '[SEP]', '␣it', '␣slept', '[SEP]')
>>> pair.segments
(0, 0, 0, 0, 1, 1, 1)
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

SHARES = ("chosen", "[MASK]", "random token", "unchanged")
TARGETS = (0.15, 0.8, 0.1, 0.1)  # BERT: 15% of positions chosen; of those 80 / 10 / 10


def share_rows(shares: np.ndarray) -> list[dict]:
    """The lesson's table of :func:`running_shares`: each share after all draws, to 4 decimals,
    beside its target.

    >>> share_rows(np.array([[0.1, 0.2, 0.3, 0.4], [0.15, 0.81234, 0.1, 0.09]]))[:2]
    [{'share': 'chosen', 'after all draws': 0.15, 'target': 0.15}, {'share': '[MASK]', 'after all draws': 0.8123, 'target': 0.8}]
    """
    return [{"share": name, "after all draws": round(float(v), 4), "target": t}
            for name, v, t in zip(SHARES, shares[-1], TARGETS)]


def running_shares(tally: np.ndarray, n_tokens: int) -> np.ndarray:
    """(draws, 4): after each draw, the share of all positions drawn so far that were chosen,
    and of the chosen ones the shares that became [MASK], a random token, or stayed.

    ``tally`` is (draws, 4) counts per draw (chosen, masked, random, kept), as
    ``tfviz.experiments.mlm.masking_tally`` makes them.

    >>> running_shares(np.array([[2, 2, 0, 0], [2, 1, 1, 0]]), 10).tolist()
    [[0.2, 1.0, 0.0, 0.0], [0.2, 0.75, 0.25, 0.0]]
    """
    total = np.cumsum(np.asarray(tally, dtype=float), axis=0)  # (draws, 4)
    draws = np.arange(1, len(total) + 1)
    chosen = total[:, :1]
    return np.hstack([chosen / (draws[:, None] * n_tokens), total[:, 1:] / np.maximum(chosen, 1)])


def chosen_per_sentence(n_tokens: int) -> int:
    """How many positions BERT's rule chooses in a sentence of ``n_tokens``: 15%, rounded to
    a whole number of tokens, at least one (as bert-tiny's training does; Google's BERT code
    counts [CLS] and [SEP] in ``n_tokens`` too, though it never chooses them).

    >>> [chosen_per_sentence(n) for n in (1, 7, 12, 20)]
    [1, 1, 2, 3]
    """
    return max(1, int(np.round(0.15 * n_tokens)))


# --- [CLS] and [SEP]: the sentence-pair input ---------------------------------------------


class PairInput(NamedTuple):
    tokens: tuple[str, ...]
    segments: tuple[int, ...]  # 0 for [CLS], sentence A and its [SEP]; 1 for sentence B and its [SEP]


def sentence_pair(a: Sequence[str], b: Sequence[str]) -> PairInput:
    """BERT's input for two sentences: ``[CLS] a [SEP] b [SEP]``, with segment ids."""
    tokens = ("[CLS]", *a, "[SEP]", *b, "[SEP]")
    return PairInput(tokens, (0,) * (len(a) + 2) + (1,) * (len(b) + 1))


def reads_masked_lm(config, tokenizer) -> bool:
    """Whether a model can play BERT's masked-LM game: an encoder with its head (a BERT folder
    saved as ``BertForMaskedLM``, not a bare ``BertModel``) and a [MASK] in its vocabulary."""
    return config.arch == "encoder" and config.lm_head and tokenizer.mask_id is not None


def reads_wordpiece(tokenizer) -> bool:
    """Whether the tokenizer is a BERT checkpoint's WordPiece, whose tokens are shown as stored
    ("##imal" continues a word, a word's first piece has no space marker); ours and GPT-2's mark
    the space before a word ("␣the")."""
    return getattr(tokenizer, "pieces", None) == "stored"  # CheckpointTokenizer's WordPiece


def ordinary_count(ids: Sequence[int], specials: Iterable[int]) -> int:
    """How many of ``ids`` are not special tokens: the positions BERT's masking may choose
    (a checkpoint's text is [CLS] ... [SEP]; ours holds no special token).

    >>> ordinary_count([101, 7592, 2088, 102], {0, 100, 101, 102, 103})
    2
    """
    taken = set(specials)
    return sum(int(i) not in taken for i in ids)


def cls_sep_ids(tokenizer) -> tuple[int, int]:
    """The ids of [CLS] and [SEP]: our tokenizers name them (cls_id, sep_id); a BERT
    checkpoint's starts every text with its [CLS] (bos_id) and ends it with its [SEP] (eos_id)."""
    cls = getattr(tokenizer, "cls_id", None)
    sep = getattr(tokenizer, "sep_id", None)
    return (tokenizer.bos_id if cls is None else cls, tokenizer.eos_id if sep is None else sep)


def sentence_ids(tokenizer, text: str) -> list[int]:
    """The ids of one sentence of ``text``, without the [CLS] ... [SEP] a checkpoint's
    tokenizer puts around every text it reads (ours put none), so that two of them can be
    joined into one pair input."""
    ids = list(tokenizer.encode(text))
    if getattr(tokenizer, "add_special_tokens", False):  # a checkpoint's: [CLS] is its bos_id
        if ids and ids[0] == tokenizer.bos_id:
            ids = ids[1:]
        if ids and ids[-1] == tokenizer.eos_id:
            ids = ids[:-1]
    return ids


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def two_sentences(text: str) -> tuple[str, str | None]:
    """The first sentence of ``text`` and the one after it (None if there is only one).

    >>> two_sentences("The cat sat. It slept! Then it woke.")
    ('The cat sat.', 'It slept!')
    >>> two_sentences("no full stop here")
    ('no full stop here', None)
    """
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p]
    if not parts:
        return "", None
    return parts[0], (parts[1] if len(parts) > 1 else None)


class Part(NamedTuple):
    name: str
    present: bool
    detail: str


_NSP_NAMES = ("nsp", "seq_relationship", "next_sentence", "classifier")


def pretraining_parts(param_names: Iterable[str], tied: bool) -> list[Part]:
    """BERT's pretraining pieces and whether a model has each, read from its parameter names.

    BERT-base has a segment (token type) table, a pooler on [CLS] and a two-way
    next-sentence classifier on top of it, plus the masked-LM output layer.

    >>> [p.present for p in pretraining_parts(["embed.weight", "blocks.0.attn.W_Q"], tied=True)]
    [False, False, False, True]
    """
    names = [n.lower() for n in param_names]

    def has(*words: str) -> bool:
        return any(w in n for n in names for w in words)

    return [
        Part("segment (token type) embedding", has("segment", "token_type"),
             "a learned vector for sentence A and one for B, added to every token"),
        Part("pooler on [CLS]", has("pooler"), "a d×d layer with tanh on the [CLS] vector"),
        Part("next-sentence classifier", has(*_NSP_NAMES),
             "two logits from the pooled [CLS]: B follows A, or B is random"),
        Part("masked-LM output", True, "the token embedding, transposed (tied weights)" if tied
             else "a separate output matrix"),
    ]


# --- span corruption (T5) -----------------------------------------------------------------

SENTINELS = "XYZABCDEFGHIJKLMNOPQRSTUVW"


def sentinel(i: int) -> str:
    """The i-th sentinel, named as in the T5 paper's figure: <X>, <Y>, <Z>, then <A>, <B>, …

    >>> [sentinel(i) for i in (0, 1, 2, 3)], sentinel(26)
    (['<X>', '<Y>', '<Z>', '<A>'], '<S26>')
    """
    return f"<{SENTINELS[i]}>" if i < len(SENTINELS) else f"<S{i}>"


class SpanCorruption(NamedTuple):
    noise: tuple[bool, ...]  # per token: hidden (part of a span) or kept
    inputs: tuple[str, ...]  # what the encoder reads: kept tokens, one sentinel per span
    targets: tuple[str, ...]  # what the decoder writes: each sentinel, then its span; a last sentinel


def corrupt(tokens: Sequence[str], noise: Sequence[bool]) -> SpanCorruption:
    """Inputs and targets for a given noise mask: each run of hidden tokens becomes one sentinel.

    >>> c = corrupt(list("abcdefg"), [0, 1, 1, 0, 0, 1, 0])
    >>> " ".join(c.inputs), " ".join(c.targets)
    ('a <X> d e <Y> g', '<X> b c <Y> f <Z>')
    """
    noise = tuple(bool(x) for x in noise)
    if len(noise) != len(tokens):
        raise ValueError("one noise flag per token")
    inputs, targets, spans = [], [], 0
    for i, (tok, hidden) in enumerate(zip(tokens, noise)):
        if hidden and (i == 0 or not noise[i - 1]):  # a span starts
            inputs.append(sentinel(spans))
            targets.append(sentinel(spans))
            spans += 1
        (targets if hidden else inputs).append(tok)
    targets.append(sentinel(spans))
    return SpanCorruption(noise, tuple(inputs), tuple(targets))


def _segment(rng: np.random.Generator, items: int, segments: int) -> np.ndarray:
    """Cut ``items`` in a row into ``segments`` non-empty pieces at random; their lengths."""
    starts = np.zeros(items, dtype=bool)
    starts[rng.choice(np.arange(1, items), segments - 1, replace=False)] = True
    return np.bincount(np.cumsum(starts), minlength=segments)


def noise_mask(n: int, seed: int, density: float = 0.15, mean_span: float = 3.0) -> tuple[bool, ...]:
    """T5's random spans: round(density·n) hidden tokens (at least 1, at most n − 1) in
    round(hidden / mean_span) spans (at least 1), each span after a run of kept tokens,
    lengths drawn at random. Same seed, same mask.

    >>> m = noise_mask(20, seed=0)
    >>> sum(m), m == noise_mask(20, seed=0)
    (3, True)
    """
    if n < 2:
        raise ValueError("span corruption needs at least two tokens")
    hidden = min(max(int(np.round(n * density)), 1), n - 1)
    spans = min(max(int(np.round(hidden / mean_span)), 1), n - hidden)
    rng = np.random.default_rng(seed)
    noise_lengths = _segment(rng, hidden, spans)
    kept_lengths = _segment(rng, n - hidden, spans)
    mask: list[bool] = []
    for kept, span in zip(kept_lengths, noise_lengths):  # kept first, as T5 interleaves them
        mask += [False] * int(kept) + [True] * int(span)
    return tuple(mask)


def span_corruption(tokens: Sequence[str], seed: int, density: float = 0.15,
                    mean_span: float = 3.0) -> SpanCorruption:
    """T5's span corruption of ``tokens`` with the random spans of ``noise_mask``."""
    return corrupt(tokens, noise_mask(len(tokens), seed, density, mean_span))
