"""The tour's numbers: the shape of each stage, the model's top guesses, RNN vs transformer.

Everything here reads a finished :class:`~tfviz.trace.Trace` (or plain numbers); no streamlit.

>>> probabilities(np.array([0.0, 0.0])).tolist()
[0.5, 0.5]
>>> [round(p, 3) for _, _, p in top_predictions(np.log(np.array([0.1, 0.6, 0.3])), 2)]
[0.6, 0.3]
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.analysis.masking import special_ids
from tfviz.reference import softmax as probabilities  # softmax over the vocabulary
from tfviz.tokenizer.base import Tokenizer

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace

STEPS = "sequential steps"
PATH = "longest path between two tokens"


@dataclass(frozen=True)
class Stage:
    """One stop on the way from text to a prediction, with the array it produces."""

    key: str  # "tokens", "embed", "pos", "blocks", "attn", "ffn", "logits", "next"
    title: str
    shape: tuple[int, ...]
    note: str


def _shape(trace: Trace, name) -> tuple[int, ...] | None:
    return tuple(trace[name].shape) if name in trace else None


def pipeline_stages(trace: Trace) -> list[Stage]:
    """The stages of one forward pass with the shapes this trace really produced.

    For "the cat" on a byte-level gpt-tiny: tokens (7,), embed (7, 64), attention (4, 7, 7), ...
    """
    cfg = trace.config
    T = len(trace.tokens) if trace.tokens else trace[("resid_pre", 0)].shape[0]
    d, last = cfg.d_model, cfg.n_layers - 1
    stages = [
        Stage("tokens", "Tokens", (T,), f"{T} token ids, one per piece of text"),
        Stage("embed", "Token embeddings", _shape(trace, "hook_embed") or (T, d),
              f"each id picks one row of the {cfg.vocab_size} × {d} table E"),
    ]
    pos = _shape(trace, "hook_pos_embed")
    if pos is not None:
        kind = "sine/cosine table" if cfg.positional == "sinusoidal" else "learned table"
        extra = ((", with the segment row" if cfg.n_token_types else "")
                 + (", then a LayerNorm" if cfg.embed_norm else ""))  # a BERT checkpoint's
        stages.append(Stage("pos", "+ positions", pos, f"one vector per position ({kind}), added{extra}"))
    else:
        where = {"rope": "rotates queries and keys inside attention (RoPE)",
                 "alibi": "adds a distance penalty to attention scores (ALiBi)",
                 "relative": "adds a learned vector per distance to keys and values inside "
                             "attention (Shaw et al.)",
                 "t5_bias": "adds a learned number per head and distance bucket to attention "
                            "scores (T5)",
                 "none": "this model gets no position information at all"}
        stages.append(Stage("pos", "+ positions", (T, d), where.get(cfg.positional, "")))
    stages.append(Stage("blocks", f"{cfg.n_layers} blocks", _shape(trace, ("resid_post", last)),
                        "each block keeps the shape: one vector per token"))
    stages.append(Stage("attn", "Attention (per block)", _shape(trace, ("pattern", 0)),
                        f"{cfg.n_heads} heads, each a {T} × {T} table of weights"))
    if cfg.is_moe:
        stages.append(Stage("ffn", "Mixture of experts (per block)",
                            _shape(trace, ("router_logits", 0)),
                            f"a router scores {cfg.n_experts} experts for every token"))
    else:
        stages.append(Stage("ffn", "Feed-forward (per block)", _shape(trace, ("mlp.pre", 0)),
                            f"each token widened to {cfg.d_ff} numbers, then back to {d}"))
    if not cfg.lm_head:  # an encoder saved without a head (BertModel): it ends at its last block
        stages.append(Stage("logits", "No LM head", _shape(trace, ("resid_post", last)),
                            "this model was saved without a language-model head: it gives one "
                            "vector per token and predicts no token"))
        return stages
    V = trace.logits.shape[-1]
    stages.append(Stage("logits", "Logits", tuple(trace.logits.shape),
                        f"one score for each of the {V} vocabulary entries, at every position"))
    stages.append(Stage("next", "Prediction", (V,), "softmax turns one row of scores into "
                        "probabilities"))
    return stages


def top_predictions(logits_row: np.ndarray, k: int = 5,
                    id_to_token: Callable[[int], str] | None = None) -> list[tuple[int, str, float]]:
    """The k most likely ids of one logits row: [(id, token string, probability), ...]."""
    p = probabilities(logits_row)
    order = np.argsort(-p, kind="stable")[:k]
    out = []
    for i in order:
        token = str(int(i))
        if id_to_token is not None:
            try:
                token = id_to_token(int(i))
            except (IndexError, KeyError, ValueError):
                token = f"#{int(i)}"
        out.append((int(i), token, float(p[i])))
    return out


def mask_token_id(tokenizer: Tokenizer) -> int | None:
    """The id of "[MASK]", or None if the vocabulary has none (the letters-only task tokenizer)."""
    return tokenizer.mask_id


def first_ordinary_position(ids, tokenizer: Tokenizer) -> int:
    """The first position that holds no special token: the one the tour hides first. On a
    BERT checkpoint's text that is the word after [CLS] (hiding [CLS] asks nothing about the
    sentence); on our tokenizers' text, which holds no special token, position 0.

    >>> from tfviz.tokenizer.byte import ByteTokenizer
    >>> first_ordinary_position([5, 111, 112, 6], ByteTokenizer())   # [CLS] h i [SEP]
    1
    """
    taken = special_ids(tokenizer)
    return next((i for i, t in enumerate(ids) if int(t) not in taken), 0)


def vector_lengths(vectors: np.ndarray) -> np.ndarray:
    """(T,) the Euclidean length of each token's vector in ``vectors`` (T, d): what a model
    without a head still shows of its last block, one number per token.

    >>> vector_lengths(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [5.0, 0.0]
    """
    return np.sqrt((np.asarray(vectors, dtype=np.float64) ** 2).sum(axis=-1))


def vector_length_rows(tokens, vectors: np.ndarray) -> list[dict]:
    """The tour's table for a model without a head: each token's position, the token and the
    length of its vector (:func:`vector_lengths`) to 3 decimals.

    >>> vector_length_rows(["a", "b"], np.array([[3.0, 4.0], [0.1, 0.0]]))
    [{'position': 0, 'token': 'a', 'length of its last vector': 5.0}, {'position': 1, 'token': 'b', 'length of its last vector': 0.1}]
    """
    return [{"position": i, "token": t, "length of its last vector": round(float(v), 3)}
            for i, (t, v) in enumerate(zip(tokens, vector_lengths(vectors)))]


def rnn_vs_transformer(lengths) -> list[dict]:
    """Rows for a chart: sequential steps and longest path between two tokens, per length n.

    An RNN reads token t only after token t-1, so one layer takes n steps in a row, and news
    from the first token reaches the last after n - 1 hops. Self-attention handles all n
    tokens at once (1 step per layer) and links every pair directly (path length 1).

    >>> [(r["model"], r["value"]) for r in rnn_vs_transformer([4]) if r["measure"] == STEPS]
    [('RNN', 4), ('Transformer', 1)]
    """
    rows = []
    for n in lengths:
        n = int(n)
        rows.append({"n": n, "measure": STEPS, "model": "RNN", "value": n})
        rows.append({"n": n, "measure": STEPS, "model": "Transformer", "value": 1})
        rows.append({"n": n, "measure": PATH, "model": "RNN",
                     "value": max(n - 1, 0)})
        rows.append({"n": n, "measure": PATH,
                     "model": "Transformer", "value": 1 if n > 1 else 0})
    return rows
