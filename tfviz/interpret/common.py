"""What the interpretability functions share: reading a model's weights, its unembedding, its
final norm in numpy, and a text as ids.

The functions of :mod:`tfviz.interpret` take the weights as ``bundle.weights()`` gives them
(read-only numpy, TransformerLens-shaped: :mod:`tfviz.weights`), or the bundle itself. They
compute in float64 from the float32 activations and weights, so a sum of many parts loses
nothing to rounding of its own.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tfviz.trace import Trace

Weights = Mapping[str, np.ndarray]


def weights_of(source) -> Weights:
    """The weights mapping of a bundle (``source.weights()``) or the mapping itself."""
    if isinstance(source, Mapping):
        return source
    read = getattr(source, "weights", None)
    if callable(read):
        return read()
    raise TypeError("pass the bundle, or its weights (bundle.weights())")


def require_lm(trace: Trace, what: str) -> None:
    """Refuse, in words, a trace that has no language-model logits or holds a batch."""
    cfg = trace.config
    if getattr(cfg, "arch", None) not in ("decoder", "encoder", "encoder-decoder"):
        raise ValueError(f"{what} reads a text model's residual stream; {cfg.name} is not one")
    if not getattr(cfg, "lm_head", True) or "logits" not in trace.activations:
        raise ValueError(f"{what} needs the model's logits, and {cfg.name} has no language-model "
                         "head (an encoder saved without one)")
    if cfg.mlm_transform:
        raise ValueError(f"{cfg.name} passes its last layer's output through a masked-LM transform "
                         "(a dense layer, an activation and a LayerNorm) before the unembedding; "
                         f"{what} here reads only models whose unembedding follows the final norm")
    if trace.logits.ndim != 2:
        raise ValueError(f"{what} reads one sentence's trace; this one holds a batch")


def unembedding(weights: Weights) -> np.ndarray:
    """W_U (d, vocab) in float64: the untied head's own, or the token embeddings transposed."""
    W = weights["W_U"] if "W_U" in weights else weights["W_E"].T  # (d, vocab)
    return np.asarray(W, dtype=np.float64)


def final_norm(trace: Trace, weights: Weights, x: np.ndarray) -> np.ndarray:
    """The model's final norm of each row of ``x`` (..., d), recomputed in float64 with its own
    statistics (the identity for a model without one)."""
    cfg = trace.config
    x = np.asarray(x, dtype=np.float64)
    if not cfg.final_norm:
        return x
    gamma = np.asarray(weights["ln_final.w"], dtype=np.float64)
    if cfg.norm_type == "rmsnorm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.ln_eps) * gamma
    centred = x - x.mean(-1, keepdims=True)
    scale = np.sqrt((centred * centred).mean(-1, keepdims=True) + cfg.ln_eps)
    return centred / scale * gamma + np.asarray(weights["ln_final.b"], dtype=np.float64)


def to_logits(trace: Trace, weights: Weights, normed: np.ndarray) -> np.ndarray:
    """(..., d) vectors after the final norm -> (..., vocab) logits: W_U, b_U, then Granite's
    division by ``logits_scaling``."""
    logits = normed @ unembedding(weights)  # (..., vocab)
    if "b_U" in weights:
        logits = logits + np.asarray(weights["b_U"], dtype=np.float64)
    return logits / trace.config.logits_scaling


def text_ids(bundle, text) -> list[int]:
    """A text (read as the model reads it, cut to its context), a ``Reading``, or ids."""
    if isinstance(text, str):
        return list(bundle.read(text).ids)
    ids = getattr(text, "ids", text)
    return [int(i) for i in ids]


def token_label(bundle, token_id: int) -> str:
    tok = getattr(bundle, "tokenizer", None)
    return tok.id_to_token(int(token_id)) if tok is not None else str(int(token_id))


def special_ids(tokenizer) -> set[int]:
    """Every special token's id a tokenizer names: pad, bos, eos, mask and its listed ones."""
    found = {getattr(tokenizer, n, None) for n in ("pad_id", "bos_id", "eos_id", "mask_id")}
    named = getattr(tokenizer, "special_ids", None)
    if isinstance(named, Mapping):
        found |= set(named.values())
    else:  # our own tokenizers give the specials the first ids
        found |= set(range(len(getattr(tokenizer, "specials", ()))))
    return {int(i) for i in found if i is not None}


def as_sequence(ids: Sequence[int] | np.ndarray) -> list[int]:
    return [int(i) for i in np.asarray(ids).reshape(-1)]
