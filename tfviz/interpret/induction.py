"""Induction heads: on a sequence seen before, look at what came after the earlier copy.

Take n random tokens and repeat them: t_0 … t_{n−1} t_0 … t_{n−1}. In the first half nothing
can be predicted; in the second half a model that can copy knows every next token: at the
second t_i, find the earlier t_i, look at the token that followed it (t_{i+1}) and predict
that. A head that does the looking is an induction head. Its score is the mean attention from
each second-half token to the token after its earlier copy: for query position n + i (i = 0 …
n − 1) the key at position i + 1. It leans on a previous-token head in an earlier layer (each
token attends to the one before it, so a token's vector carries what preceded it), whose score
is the mean attention from each position to the one just before it.

>>> pattern = np.zeros((1, 6, 6))      # one head, n = 3: t0 t1 t2 t0 t1 t2
>>> pattern[0, 3, 1] = pattern[0, 4, 2] = pattern[0, 5, 3] = 1.0
>>> induction_score(pattern, 3).tolist()
[1.0]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfviz.interpret.common import special_ids, token_label
from tfviz.trace import run_with_trace


def induction_score(pattern: np.ndarray, n: int, offset: int = 0) -> np.ndarray:
    """Mean attention from each second-half query to the token after its earlier copy.

    pattern: (..., T, T) attention (rows are queries), on ``offset`` leading tokens (a
    beginning-of-text token) and then a sequence of ``n`` tokens repeated twice. -> (...)
    """
    pattern = np.asarray(pattern, dtype=np.float64)
    queries = offset + n + np.arange(n)  # second-half positions
    return pattern[..., queries, queries - n + 1].mean(-1)


def previous_token_score(pattern: np.ndarray, start: int = 1) -> np.ndarray:
    """Mean attention from each query i >= ``start`` (at least 1) to key i − 1. -> (...)"""
    pattern = np.asarray(pattern, dtype=np.float64)
    queries = np.arange(max(1, start), pattern.shape[-1])
    return pattern[..., queries, queries - 1].mean(-1)


@dataclass(frozen=True)
class Induction:
    """One run on a repeated random sequence.

    ids: the whole input (a leading beginning-of-text token when the model's tokenizer adds
    one, ``offset`` of them), then the ``n`` first-half ids twice; tokens: their strings.
    scores, previous: (layers, heads) induction and previous-token scores. losses: the
    cross-entropy (nats) of predicting each token from those before it, (len(ids) − 1,),
    losses[j] for token j + 1; loss_first, loss_second: its mean over the first half's tokens
    after the first (nothing could predict t_0) and over the second half's after its first
    (t_0 again, which followed a random token). notice: what was changed in the request, or None.
    """

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    n: int
    offset: int
    scores: np.ndarray
    previous: np.ndarray
    losses: np.ndarray
    loss_first: float
    loss_second: float
    notice: str | None = None


def repeated_ids(bundle, tokens=None, length: int = 50, seed: int = 0) -> tuple[list[int], int, str | None]:
    """The first half's ids (given, or ``length`` drawn with ``seed`` from the vocabulary
    without special tokens), repeated twice after a beginning-of-text token when the model's
    tokenizer adds one. -> (ids, offset, notice about a shortened request or None)."""
    cfg, tok = bundle.config, bundle.tokenizer
    offset = 1 if getattr(getattr(bundle, "facts", None), "adds_bos", False) else 0
    room = (cfg.max_seq_len - offset) // 2
    notice = None
    if tokens is None:
        if length < 2:
            raise ValueError("the repeated sequence needs at least 2 tokens in each half")
        if length > room:
            notice = (f"{cfg.name} reads at most {cfg.max_seq_len} tokens, so each half is "
                      f"{room} tokens long, not {length}.")
            length = room
        vocab = min(cfg.vocab_size, tok.vocab_size)
        allowed = np.setdiff1d(np.arange(vocab), sorted(special_ids(tok)))
        first = np.random.default_rng(seed).choice(allowed, size=length, replace=True).tolist()
    else:
        first = [int(i) for i in np.asarray(tokens).reshape(-1)]
        if len(first) < 2:
            raise ValueError("the repeated sequence needs at least 2 tokens in each half")
        if len(first) > room:
            raise ValueError(f"{len(first)} tokens twice is more than {cfg.name} reads "
                             f"({cfg.max_seq_len} tokens): give at most {room}")
        if any(not 0 <= i < cfg.vocab_size for i in first):
            raise ValueError(f"token ids go from 0 to {cfg.vocab_size - 1} in {cfg.name}")
    return [tok.bos_id] * offset + first + first, offset, notice


def token_losses(logits: np.ndarray, ids) -> np.ndarray:
    """(T − 1,) cross-entropy of each token j + 1 under the logits at position j, in float64."""
    x = np.asarray(logits, dtype=np.float64)[:-1]  # (T - 1, vocab)
    x = x - x.max(-1, keepdims=True)
    log_probs = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return -log_probs[np.arange(len(x)), np.asarray(ids)[1:]]


def induction_report(bundle, tokens=None, length: int = 50, seed: int = 0) -> Induction:
    """Run the model on a repeated random sequence: every head's induction and previous-token
    scores, and the loss on each half. A model that reads both ways (an encoder) can see the
    later copy itself, so it is refused in words, as an encoder-decoder is."""
    cfg = bundle.config
    if cfg.arch != "decoder":
        raise ValueError(f"{cfg.name} is not a decoder: induction heads are a decoder's way of "
                         "copying from the past, and a model that reads both ways sees the later "
                         "copy directly.")
    ids, offset, notice = repeated_ids(bundle, tokens, length, seed)
    n = (len(ids) - offset) // 2
    patterns = [f"blocks.{i}.attn.hook_pattern" for i in range(cfg.n_layers)]
    tr = run_with_trace(bundle.model, ids, names=patterns)
    pattern = tr.stack("pattern")  # (layers, heads, T, T)
    losses = token_losses(tr.logits, ids)
    first = losses[offset: offset + n - 1]  # tokens offset+1 .. offset+n-1
    second = losses[offset + n: offset + 2 * n - 1]  # tokens offset+n+1 .. offset+2n-1
    return Induction(ids=tuple(ids), tokens=tuple(token_label(bundle, i) for i in ids), n=n,
                     offset=offset, scores=induction_score(pattern, n, offset),
                     previous=previous_token_score(pattern, offset + 1), losses=losses,
                     loss_first=float(first.mean()), loss_second=float(second.mean()),
                     notice=notice)


def induction_scores(bundle, tokens=None, length: int = 50, seed: int = 0) -> np.ndarray:
    """(layers, heads): each head's induction score on ``tokens`` (the first half's ids; drawn
    at random with ``seed`` when not given, ``length`` of them) repeated twice."""
    return induction_report(bundle, tokens, length, seed).scores
