"""Mixtral and GraniteMoe in tfviz's own terms: the Llama-shaped decoder whose feed-forward block
is a mixture of SwiGLU experts, its config.json as a ModelConfig and its tensors as our state dict.

Both keep the rest of a Llama block (:mod:`tfviz.hf.llama`): RMSNorm before each sublayer and
after the last, RoPE in rotate_half pairs, grouped-query attention, no biases. In place of the
feed-forward block a router scores ``num_local_experts`` experts and each token goes to its
``num_experts_per_tok`` best (:class:`tfviz.model.moe.MoE`, with no capacity: nothing is
dropped). They differ in how the router weighs the chosen experts, and in how they save them:

- **Mixtral**: softmax over every expert, the top k, their weights renormalised to add up to 1
  (``moe_router="softmax_topk"``, ``moe_renormalize``). Each expert is three matrices,
  ``block_sparse_moe.experts.{e}.w1`` (gate), ``w3`` (up) and ``w2`` (down): our W_gate, W_in and
  W_out; the router is ``block_sparse_moe.gate``.
- **GraniteMoe** (IBM's granite-3.x MoE models): the top k of the router's logits, then a
  softmax over those k (``moe_router="topk_softmax"``). Its experts are saved fused: one
  ``block_sparse_moe.input_linear`` of shape (E, 2 d_ff, d), each expert's gate rows then its up
  rows, and one ``output_linear`` (E, d, d_ff); the router is ``block_sparse_moe.router.layer``.
  It also multiplies: the embeddings by ``embedding_multiplier``, the scores q . k by
  ``attention_multiplier`` (in place of 1/sqrt(d_head): transformers uses it whatever its value),
  each sublayer's output by ``residual_multiplier`` before the residual add; and divides the
  logits by ``logits_scaling``.

What our model cannot do is refused by name (:func:`moe_config`): a sliding window that hides
tokens, Granite's ``attention_bias`` (biases on attention and none on the experts), another
RoPE or activation. Mixtral's ``router_jitter_noise`` multiplies the router's input by random
noise while training only; a forward pass never has it, so it is read and noted in the manifest
(:func:`notes`). Granite with shared experts (GraniteMoeShared, ``granitemoeshared``) or Mamba
layers (GraniteMoeHybrid) is another ``model_type``, refused by :mod:`tfviz.hf.folder`.

>>> cfg = moe_config({"model_type": "granitemoe", "hidden_size": 64, "num_attention_heads": 4,
...     "num_key_value_heads": 1, "num_hidden_layers": 2, "intermediate_size": 32,
...     "max_position_embeddings": 256, "vocab_size": 300, "num_local_experts": 8,
...     "num_experts_per_tok": 2, "attention_multiplier": 0.015625, "embedding_multiplier": 12.0,
...     "residual_multiplier": 0.22, "logits_scaling": 6.0}, "tiny")
>>> cfg.n_experts, cfg.moe_top_k, cfg.moe_router, cfg.activation, cfg.kv_heads
(8, 2, 'topk_softmax', 'swiglu', 1)
>>> cfg.score_scale, cfg.embedding_multiplier, cfg.residual_multiplier, cfg.logits_scaling
(0.015625, 12.0, 0.22, 6.0)
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer as HFTokenizer

from tfviz.config import ModelConfig
from tfviz.hf import llama
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:  # torch is imported when a folder is opened, not when one is listed
    from torch import Tensor

#: model_type -> the family's name, as people write it, and its usual architecture.
NAMES = {"mixtral": ("Mixtral", "MixtralForCausalLM"), "granitemoe": ("GraniteMoe", "GraniteMoeForCausalLM")}
#: transformers' defaults where config.json may leave a field out: (experts, per token, RMSNorm ε,
#: RoPE base)
DEFAULTS = {"mixtral": (8, 2, 1e-5, 1e6), "granitemoe": (8, 2, 1e-6, 10000.0)}


def moe_config(hf: Mapping, name: str) -> ModelConfig:
    """Our ModelConfig for a Mixtral or GraniteMoe ``config.json`` (already parsed). Raises
    ValueError with the reason when the checkpoint asks for what our model does not do."""
    kind = hf["model_type"]
    family, usual = NAMES[kind]
    n_experts, top_k, eps, base = DEFAULTS[kind]
    arch = llama.architecture(hf, family, usual)
    d, heads = int(hf["hidden_size"]), int(hf["num_attention_heads"])
    max_len = int(hf["max_position_embeddings"])
    base, scaling = llama.rope_settings(hf, family, max_len, default_base=base)
    llama.refuse_sliding_window(hf, kind, family, max_len)
    n_experts = int(hf.get("num_local_experts") or n_experts)
    top_k = int(hf.get("num_experts_per_tok") or top_k)
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"num_experts_per_tok is {top_k} of {n_experts} experts (num_local_experts)")
    granite = kind == "granitemoe"
    if granite and hf.get("attention_bias", False):
        raise ValueError("attention_bias = true puts biases on q, k, v and o and none on the experts; "
                         "tfviz builds biases on every linear layer, on none, or on q, k and v only "
                         "(Qwen2), not this mixture")
    multipliers = {}
    if granite:
        multipliers = dict(  # transformers' defaults are 1.0, the attention's too (not 1/sqrt(d_head))
            embedding_multiplier=float(hf.get("embedding_multiplier", 1.0)),
            attention_multiplier=float(hf.get("attention_multiplier", 1.0)),
            residual_multiplier=float(hf.get("residual_multiplier", 1.0)),
            logits_scaling=float(hf.get("logits_scaling", 1.0)))
    return ModelConfig(
        name=name, arch="decoder", vocab_size=int(hf["vocab_size"]), d_model=d, n_heads=heads,
        head_dim=int(hf.get("head_dim") or d // heads), n_kv_heads=int(hf.get("num_key_value_heads") or heads),
        n_layers=int(hf["num_hidden_layers"]), d_ff=int(hf["intermediate_size"]), max_seq_len=max_len,
        positional="rope", pos_base=base, rope_pairs="halves", rope_scaling=scaling,
        norm="pre", norm_type="rmsnorm", final_norm=True, ln_eps=float(hf.get("rms_norm_eps", eps)),
        activation=llama.gated_activation(hf, family), bias=False,
        n_experts=n_experts, moe_top_k=top_k, moe_renormalize=True, moe_capacity_factor=None,
        moe_router="topk_softmax" if granite else "softmax_topk", **multipliers,
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)), lm_head=arch.endswith("ForCausalLM"),
        pad_id=llama.first_id(hf.get("pad_token_id")) or llama.first_id(hf.get("eos_token_id")) or 0)


def notes(hf: Mapping) -> list[str]:
    """What the checkpoint's config.json says that a forward pass does not use, in words."""
    jitter = float(hf.get("router_jitter_noise") or 0.0)
    if jitter:
        return [f"router_jitter_noise = {jitter:g}: in training, transformers multiplies each token's "
                f"router input by noise between {1 - jitter:g} and {1 + jitter:g}; a forward pass, as "
                "here, has none, so the routing is the checkpoint's own."]
    return []


def _experts(cfg: ModelConfig, kind: str, layer: int) -> dict[str, tuple[int, ...]]:
    """One layer's router and expert tensors as the family stores them (names without
    ``model.``), with their stored shapes (nn.Linear's (out, in); Granite's fused (E, …))."""
    d, f, E, h = cfg.d_model, cfg.d_ff, cfg.n_experts, f"layers.{layer}.block_sparse_moe."
    if kind == "granitemoe":
        return {h + "router.layer.weight": (E, d), h + "input_linear.weight": (E, 2 * f, d),
                h + "output_linear.weight": (E, d, f)}
    out = {h + "gate.weight": (E, d)}
    for e in range(E):
        out.update({h + f"experts.{e}.w1.weight": (f, d), h + f"experts.{e}.w3.weight": (f, d),
                    h + f"experts.{e}.w2.weight": (d, f)})
    return out


def _shared(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """The tensors a Llama of this config has outside its feed-forward blocks, with shapes."""
    return {k: v for k, v in llama.expected_shapes(cfg).items() if ".mlp." not in k}


def expected_shapes(cfg: ModelConfig, kind: str) -> dict[str, tuple[int, ...]]:
    """Every tensor a ``kind`` checkpoint of this config stores (names without ``model.``),
    with its shape as stored."""
    shapes = _shared(cfg)
    for i in range(cfg.n_layers):
        shapes.update(_experts(cfg, kind, i))
    return shapes


def moe_state_dict(tensors: Mapping[str, Tensor], cfg: ModelConfig, kind: str) -> dict[str, Tensor]:
    """Our Transformer's state dict from the checkpoint's tensors (names as
    :func:`tfviz.hf.llama.stored_name` gives, shapes already checked), as float32. Granite's
    fused expert tensors are cut into each expert's three matrices: input_linear[e] is
    (2 d_ff, d), its first d_ff rows the gate (W_gate), the rest the up projection (W_in)."""
    rename = {k: v for k, v in llama.renames(cfg).items() if ".mlp." not in k}
    out = {rename[name]: t.float().contiguous() for name, t in tensors.items() if name in rename}
    f = cfg.d_ff
    for i in range(cfg.n_layers):
        h, b = f"layers.{i}.block_sparse_moe.", f"blocks.{i}.mlp."
        if kind == "granitemoe":
            out[b + "router.weight"] = tensors[h + "router.layer.weight"].float().contiguous()
            fused_in, fused_out = tensors[h + "input_linear.weight"], tensors[h + "output_linear.weight"]
            for e in range(cfg.n_experts):
                out[b + f"experts.{e}.W_gate.weight"] = fused_in[e, :f].float().contiguous()  # (f, d)
                out[b + f"experts.{e}.W_in.weight"] = fused_in[e, f:].float().contiguous()  # (f, d)
                out[b + f"experts.{e}.W_out.weight"] = fused_out[e].float().contiguous()  # (d, f)
            continue
        out[b + "router.weight"] = tensors[h + "gate.weight"].float().contiguous()
        for e in range(cfg.n_experts):
            for theirs, ours in (("w1", "W_gate"), ("w3", "W_in"), ("w2", "W_out")):
                stored = tensors[h + f"experts.{e}.{theirs}.weight"]  # (f, d); w2: (d, f)
                out[b + f"experts.{e}.{ours}.weight"] = stored.float().contiguous()
    return out


def config_sizes(cfg: ModelConfig) -> str:
    """config.json's size fields as these families name them, for a message about a shape."""
    return (f"{llama.config_sizes(cfg)}, num_local_experts={cfg.n_experts}, "
            f"num_experts_per_tok={cfg.moe_top_k}")


def moe_tokenizer(hf: HFTokenizer, data: Mapping, folder: Path, n_ids: int) -> CheckpointTokenizer:
    """The checkpoint's tokenizer, read as a Llama's is (:func:`tfviz.hf.llama.llama_tokenizer`):
    Mixtral's is SentencePiece-style BPE with byte fallback and <s> added, Granite's byte-level
    BPE that adds nothing."""
    return llama.llama_tokenizer(hf, data, folder, n_ids, family=NAMES[data["model_type"]][0])
