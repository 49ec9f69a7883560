"""Every parameter of a model as read-only numpy arrays, in TransformerLens's shapes.

``Bundle.weights()`` calls :func:`export_weights` once per bundle; analysis reads weights only
from it, never from torch modules. Per-layer arrays are stacked along a first ``layer`` axis and
per-head ones along a second ``head`` axis, so ``W["W_Q"][l, h]`` is one head's (d_model, d_head)
matrix and ``Q_h = x W_Q[l, h] + b_Q[l, h]``:

    W_E (vocab, d)   W_pos (max_len, d), learned positions only   W_U (d, vocab), untied only
    W_Q, W_K, W_V (L, heads, d, d_head)   b_Q, b_K, b_V (L, heads, d_head)
    W_O (L, heads, d_head, d)             b_O (L, d)
    ln1.w, ln1.b, ln2.w, ln2.b (L, d)     ln_final.w, ln_final.b (d,), when the model has one
                                          (an RMSNorm has a .w and no .b)
    W_in (L, d, d_ff)  b_in (L, d_ff)  W_out (L, d_ff, d)  b_out (L, d)          dense FFN
    W_gate (L, d, d_ff)  b_gate (L, d_ff)                 a gated FFN's gate (SwiGLU, GeGLU)
    q_norm.w, k_norm.w (L, d_head)                        QK-norm's gammas (Qwen3)
    rel_K, rel_V (L, 2k + 1, d_head)    Shaw et al.'s a^K and a^V, row clip(j − i, −k, k) + k
    rel_pos_bias (buckets, heads)       T5's bias table, one per stack (its first layer holds it)
    W_gate (L, d, E)   experts.W_in (L, E, d, d_ff)  experts.b_in (L, E, d_ff)
                       experts.W_out (L, E, d_ff, d) experts.b_out (L, E, d)      mixture of experts
    cross.W_Q … cross.b_O, ln_cross.w, ln_cross.b      decoder cross-attention (encoder-decoder)
    enc.W_Q … enc.ln_final.b                           the encoder stack (encoder-decoder)
    W_token_type (types, d)  ln_embed.w, ln_embed.b (d,)  mlm_head.W (d, d)  mlm_head.b (d,)
    mlm_head.ln.w, mlm_head.ln.b (d,)  b_U (vocab,)    a BERT checkpoint's extras (tfviz.hf.bert)

W_K and W_V have one head per key/value head (fewer than W_Q's under grouped-query attention).
Each parameter appears exactly once and nothing is invented: a model without biases has no
``b_*`` entries, and a tied model has no W_U (its logits use W_E transposed). So the sizes add up
to the model's parameter count. Arrays are float32 copies, like the model, and cannot be
written to; the mapping cannot be changed either: every learner on a server shares it.

>>> from tfviz.config import preset
>>> from tfviz.model import Transformer
>>> W = export_weights(Transformer(preset("gpt-tiny")))
>>> W["W_Q"].shape, W["W_O"].shape, W["ln1.w"].shape
((3, 4, 64, 16), (3, 4, 16, 64), (3, 64))
>>> W["W_Q"].flags.writeable
False
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
from torch import nn


def _np(param) -> np.ndarray:
    """A float32 numpy copy of a parameter (never a view of the model's memory)."""
    return np.array(param.detach().cpu().numpy(), dtype=np.float32, copy=True)


def _heads_in(linear: nn.Linear, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A projection into n heads: W (n, d, d_head) with x W[h] = head h's slice, and b (n, d_head)."""
    w = _np(linear.weight)  # (n·d_head, d): torch stores (out, in)
    W = w.reshape(n, -1, w.shape[1]).transpose(0, 2, 1)  # (n, d_head, d) -> (n, d, d_head)
    b = None if linear.bias is None else _np(linear.bias).reshape(n, -1)  # (n, d_head)
    return W, b


def _attention(attn) -> dict[str, np.ndarray]:
    out = {}
    for name, linear, n in (("Q", attn.W_q, attn.n_heads), ("K", attn.W_k, attn.n_kv),
                            ("V", attn.W_v, attn.n_kv)):
        out[f"W_{name}"], b = _heads_in(linear, n)
        if b is not None:
            out[f"b_{name}"] = b
    if attn.rel_k is not None:  # Shaw et al.: one row per clipped distance, shared by the heads
        out["rel_K"], out["rel_V"] = _np(attn.rel_k.weight), _np(attn.rel_v.weight)  # (2k+1, d_head)
    w_o = _np(attn.W_o.weight)  # (d, heads·d_head)
    out["W_O"] = w_o.T.reshape(attn.n_heads, attn.d_head, -1)  # (heads, d_head, d)
    if attn.W_o.bias is not None:
        out["b_O"] = _np(attn.W_o.bias)  # (d,)
    return out


def _mlp(mlp, prefix: str = "") -> dict[str, np.ndarray]:
    out = {f"{prefix}W_in": _np(mlp.W_in.weight).T, f"{prefix}W_out": _np(mlp.W_out.weight).T}
    if mlp.W_in.bias is not None:
        out[f"{prefix}b_in"], out[f"{prefix}b_out"] = _np(mlp.W_in.bias), _np(mlp.W_out.bias)
    gate = getattr(mlp, "W_gate", None)  # a gated block's third matrix (experts have none)
    if gate is not None:
        out[f"{prefix}W_gate"] = _np(gate.weight).T  # (d, d_ff)
        if gate.bias is not None:
            out[f"{prefix}b_gate"] = _np(gate.bias)
    return out  # W_in (d, d_ff), W_out (d_ff, d)


def _ln(ln, name: str) -> dict[str, np.ndarray]:
    """A norm's gamma, and its beta when it has one (LayerNorm does, RMSNorm does not)."""
    out = {f"{name}.w": _np(ln.weight)}
    if getattr(ln, "bias", None) is not None:
        out[f"{name}.b"] = _np(ln.bias)
    return out


def _block(block, cross: bool, moe: bool) -> dict[str, np.ndarray]:
    """One block's arrays under their TransformerLens names (no layer axis yet)."""
    out = {**_attention(block.attn), **_ln(block.ln1, "ln1")}
    if block.ln2 is not None:  # an attention-only block (ffn=False) has no second norm
        out.update(_ln(block.ln2, "ln2"))
    if block.attn.q_norm is not None:  # QK-norm: (d_head,) each
        out.update({**_ln(block.attn.q_norm, "q_norm"), **_ln(block.attn.k_norm, "k_norm")})
    if cross:
        out.update({f"cross.{k}": v for k, v in _attention(block.cross_attn).items()})
        out.update(_ln(block.ln_cross, "ln_cross"))
    if block.mlp is None:  # attention only: no feed-forward weights
        pass
    elif moe:
        out["W_gate"] = _np(block.mlp.router.weight).T  # (d, E)
        experts = [_mlp(e, "experts.") for e in block.mlp.experts]
        out.update({k: np.stack([e[k] for e in experts]) for k in experts[0]})  # (E, …)
    else:
        out.update(_mlp(block.mlp))
    return out


def _stack(blocks, prefix: str = "", cross: bool = False, moe: bool = False) -> dict[str, np.ndarray]:
    """Each block's arrays along a first layer axis, written into the stacked arrays one block
    at a time: holding every block's copies and then stacking them held the block weights
    twice (a SmolLM2-135M-shaped model's export peaked 425 MB above what it keeps)."""
    out: dict[str, np.ndarray] = {}
    for i, block in enumerate(blocks):
        for k, v in _block(block, cross, moe).items():
            if k not in out:
                out[k] = np.empty((len(blocks), *v.shape), dtype=np.float32)  # (L, …)
            out[k][i] = v
    return {prefix + k: v for k, v in out.items()}


def _read_only(out: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    """Contiguous arrays nobody can write to, in a mapping nobody can change (learners share it)."""
    for name, array in out.items():
        out[name] = np.ascontiguousarray(array)
        out[name].setflags(write=False)
    return MappingProxyType(out)


def export_weights(model) -> Mapping[str, np.ndarray]:
    """Read-only numpy copies of every parameter of a tfviz Transformer (see the module docstring)."""
    cfg = model.cfg
    seq2seq = cfg.arch == "encoder-decoder"
    out = {"W_E": _np(model.embed.weight)}  # (vocab, d)
    if cfg.positional == "learned":
        out["W_pos"] = _np(model.pos_embed.weight)  # (max_len, d)
    if cfg.n_token_types:
        out["W_token_type"] = _np(model.token_type_embed.weight)  # (types, d)
    if cfg.embed_norm:
        out.update(_ln(model.ln_embed, "ln_embed"))
    if cfg.positional == "t5_bias":  # one table per stack, held by its first layer (as T5 does)
        out["rel_pos_bias"] = _np(model.blocks[0].attn.rel_pos_bias.weight)  # (buckets, heads)
        if seq2seq:
            out["enc.rel_pos_bias"] = _np(model.enc_blocks[0].attn.rel_pos_bias.weight)
    if seq2seq:
        out.update(_stack(model.enc_blocks, "enc.", moe=cfg.is_moe))
        if cfg.final_norm:
            out.update(_ln(model.enc_ln_final, "enc.ln_final"))
    out.update(_stack(model.blocks, cross=seq2seq, moe=cfg.is_moe))
    if cfg.final_norm:
        out.update(_ln(model.ln_final, "ln_final"))
    if cfg.mlm_transform:
        out["mlm_head.W"] = _np(model.mlm_head.dense.weight).T  # (d, d): h = x W + b
        out["mlm_head.b"] = _np(model.mlm_head.dense.bias)
        out.update(_ln(model.mlm_head.ln, "mlm_head.ln"))
    if model.unembed is not None:
        out["W_U"] = _np(model.unembed.weight).T  # (d, vocab)
    if cfg.unembed_bias:
        out["b_U"] = _np(model.unembed_bias)  # (vocab,)
    return _read_only(out)


def export_vit_weights(model) -> Mapping[str, np.ndarray]:
    """Read-only numpy copies of every parameter of a VisionTransformer
    (its names: :mod:`tfviz.vision_bundle`), with the blocks under the text models' names."""
    out = {"E": _np(model.patch_embed.weight).T,  # torch stores (D, P²·C); E is (P²·C, D)
           "b_E": _np(model.patch_embed.bias), "class_token": _np(model.cls_token),
           "E_pos": _np(model.pos_embed), **_stack(model.blocks)}
    if model.ln_final is not None:
        out.update(_ln(model.ln_final, "ln_final"))
    out["W_head"], out["b_head"] = _np(model.head.weight).T, _np(model.head.bias)  # (D, classes)
    return _read_only(out)
