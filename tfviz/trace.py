"""Record every intermediate of one forward pass, as numpy, under TransformerLens-style names.

>>> from tfviz.config import preset
>>> from tfviz.model import Transformer
>>> model = Transformer(preset("gpt-tiny"))
>>> tr = run_with_trace(model, [5, 6, 7])
>>> tr["pattern", 0].shape          # (heads, query, key) of layer 0
(4, 3, 3)
>>> tr["blocks.0.attn.hook_pattern"].sum(-1).round(5).tolist()[0]   # 1 within float32's ~1e-7
[1.0, 1.0, 1.0]

Names come from the module tree: ``hook_embed``, ``hook_pos_embed``,
``blocks.{i}.hook_resid_pre|mid|post``, ``blocks.{i}.attn.hook_q|k|v|scores_raw|
attn_scores_unmasked|attn_scores|pattern|z``, ``blocks.{i}.hook_attn_out``,
``blocks.{i}.attn.hook_rot_q|rot_k`` (RoPE), ``blocks.{i}.attn.hook_rel_k|rel_v|rel_scores|rel_z``
(Shaw et al.'s relative positions), ``blocks.{i}.attn.hook_rel_pos_bias`` (T5's bias, (H, Tq, Tk)),
``blocks.{i}.attn.q_norm|k_norm.hook_scale|normalized``
(QK-norm), ``blocks.{i}.ln1.hook_mean|scale|normalized`` (an RMSNorm has no ``hook_mean``),
``blocks.{i}.mlp.hook_pre|post`` (dense; a gated one also ``hook_pre_linear``) or
``blocks.{i}.mlp.hook_router_logits|gate_probs|expert_indices|expert_weights|dropped|
expert_counts`` (MoE), ``blocks.{i}.cross_attn.*`` and ``enc_blocks.{i}.*`` for
encoder-decoder models, ``hook_token_type_embed``, ``ln_embed.*``, ``mlm_head.hook_pre|post``
and ``mlm_head.ln.*`` for a BERT checkpoint (:mod:`tfviz.hf.bert`), and ``logits``. As in
TransformerLens, ``attn_scores`` are the scores after the scale and the mask (−∞ where a key is
hidden), the softmax's input; ``scores_raw`` (q·k) and ``attn_scores_unmasked`` (scaled, before
the mask) are the steps before it.

A single sequence (1-D ids) is stored without the batch axis; a batch (2-D ids) keeps it.
Recording is switched on for this one call, in this thread only, and switched off in
``finally`` even if the forward fails (see :func:`tfviz.model.hooks.recording`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from tfviz.config import ModelConfig, RunOptions
from tfviz.model.hooks import recording
from tfviz.model.vit import VisionTransformer, patch_labels

NamesFilter = Iterable[str] | Callable[[str], bool] | None


@dataclass(frozen=True)
class Trace:
    activations: dict[str, np.ndarray]
    config: ModelConfig
    tokens: tuple[str, ...] = ()
    ids: np.ndarray | None = None
    enc_tokens: tuple[str, ...] = ()
    enc_ids: np.ndarray | None = None
    options: RunOptions = field(default_factory=RunOptions)

    @property
    def logits(self) -> np.ndarray:
        if "logits" not in self.activations and not getattr(self.config, "lm_head", True):
            raise KeyError(f"{self.config.name} has no language-model head (an encoder saved without "
                           f"one, such as BertModel), so it computes no logits; its last activation "
                           f"is blocks.{self.config.n_layers - 1}.hook_resid_post")
        return self.activations["logits"]

    def names(self) -> list[str]:
        return list(self.activations)

    def __contains__(self, key) -> bool:
        try:
            self.resolve(key)
        except KeyError:
            return False
        return True

    def __getitem__(self, key) -> np.ndarray:
        return self.activations[self.resolve(key)]

    def resolve(self, key) -> str:
        """Full activation name for a full name, or for a short ``(name, layer[, stack])`` key.

        ``("pattern", 0)`` -> ``blocks.0.attn.hook_pattern``; ``("scale", 1)`` is ambiguous
        (ln1 or ln2), so write ``("ln1.scale", 1)``; ``("pattern", 0, "enc")`` looks in the
        encoder of an encoder-decoder model; ``("cross_attn.pattern", 0)`` in cross-attention.
        """
        if isinstance(key, str):
            if key in self.activations:
                return key
            key = (key,)
        short, *rest = key
        parts = short.split(".")
        if not parts[-1].startswith("hook_"):
            parts[-1] = "hook_" + parts[-1]
        suffix = ".".join(parts)
        if not rest:
            prefixes = [""]
        else:
            stack = "enc_blocks" if len(rest) > 1 and rest[1] == "enc" else "blocks"
            layer = int(rest[0])
            if layer < 0:
                layer += self.config.enc_layers if stack == "enc_blocks" else self.config.n_layers
            base = f"{stack}.{layer}."
            prefixes = [base, base + "attn.", base + "mlp."]
        for prefix in prefixes:
            if prefix + suffix in self.activations:
                return prefix + suffix
        found = [n for n in self.activations
                 if n.startswith(prefixes[0]) and n.endswith("." + suffix)]
        if len(found) == 1:
            return found[0]
        hint = f"; did you mean one of {found}" if found else ""
        raise KeyError(f"no activation {key!r} in this trace{hint}")

    def stack(self, name: str, *, enc: bool = False, axis: int = 0) -> np.ndarray:
        """One activation of every layer, stacked on a new ``layer`` axis (the first by default).

        ``name`` is a short name, as ``trace[name, layer]`` reads it (``"pattern"``,
        ``"ln1.scale"``, ``"cross_attn.pattern"``); ``enc=True`` reads the encoder's layers of an
        encoder-decoder model. A batched trace keeps its batch axis first with ``axis=1``.

        >>> from tfviz.config import preset
        >>> from tfviz.model import Transformer
        >>> tr = run_with_trace(Transformer(preset("gpt-tiny")), [5, 6, 7])
        >>> tr.stack("pattern").shape       # (layers, heads, query, key)
        (3, 4, 3, 3)
        """
        n = self.config.enc_layers if enc else self.config.n_layers
        where = ("enc",) if enc else ()
        return np.stack([self[(name, layer, *where)] for layer in range(n)], axis=axis)


def _wanted(names: NamesFilter) -> Callable[[str], bool]:
    if names is None:
        return lambda name: True
    if callable(names):
        return names
    chosen = set(names)
    return chosen.__contains__


def _as_batch(x, dtype=torch.long) -> tuple[torch.Tensor | None, bool]:
    if x is None:
        return None, False
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=dtype)
    return (t[None], True) if t.dim() == (1 if dtype == torch.long else 2) else (t, False)


def run_with_trace(model: nn.Module, ids=None, *, tokens: Sequence[str] = (), enc_ids=None,
                   enc_tokens: Sequence[str] = (), inputs_embeds=None, attention_mask=None,
                   enc_attention_mask=None, options: RunOptions | None = None,
                   names: NamesFilter = None) -> Trace:
    """One forward pass of ``model`` that records the activations chosen by ``names``.

    ids: (T,) or (B, T) token ids; or inputs_embeds: (T, d) or (B, T, d) vectors fed in place
    of token embeddings (used by the hand-calculation exercises). ``names`` is an iterable of
    full names or a predicate; "logits" is always recorded (by a model with an LM head).
    """
    wanted = _wanted(names)
    ids_t, single = _as_batch(ids)
    emb_t, single_e = _as_batch(inputs_embeds, torch.float32)
    enc_t, _ = _as_batch(enc_ids)
    mask_t, _ = _as_batch(attention_mask)
    enc_mask_t, _ = _as_batch(enc_attention_mask)
    single = single or single_e
    with recording(wanted) as store, torch.no_grad():
        logits = model(ids_t, enc_ids=enc_t, attention_mask=mask_t,
                       enc_attention_mask=enc_mask_t, inputs_embeds=emb_t, options=options)
    if logits is not None:  # None: a model without an LM head (a BERT saved as BertModel)
        store["logits"] = logits
    acts = {name: (t[0] if single else t).numpy() for name, t in store.items()}
    return Trace(
        activations=acts,
        config=model.cfg,
        tokens=tuple(tokens),
        ids=None if ids_t is None else (ids_t[0] if single else ids_t).numpy(),
        enc_tokens=tuple(enc_tokens),
        enc_ids=None if enc_t is None else (enc_t[0] if single else enc_t).numpy(),
        options=options or RunOptions(),
    )


def trace_image(model: VisionTransformer, image, names: NamesFilter = None) -> Trace:
    """One forward pass on one (H, W, C) image, recording the activations ``names`` accepts
    (every one by default) without the batch axis, as :func:`run_with_trace`
    does for text. ``trace.logits`` is (classes,)."""
    x = torch.as_tensor(np.asarray(image, dtype=np.float32))[None]  # (1, H, W, C)
    with recording(_wanted(names)) as store, torch.no_grad():
        logits = model(x)  # (1, classes)
    if logits is not None:  # None: a model without an LM head (a BERT saved as BertModel)
        store["logits"] = logits
    acts = {name: t[0].numpy() for name, t in store.items()}
    return Trace(activations=acts, config=model.cfg, tokens=patch_labels(model.cfg))
