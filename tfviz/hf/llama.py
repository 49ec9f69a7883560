"""Llama, Mistral, Qwen2 (and 2.5) and Qwen3 in tfviz's own terms: one decoder shape, four
``model_type``\\ s, their config.json as a ModelConfig and their tensors as our state dict.

All four are the modern decoder block our model can be with its switches on
(:class:`tfviz.config.ModelConfig`):

- pre-norm blocks with RMSNorm (``norm_type="rmsnorm"``) and a final RMSNorm;
- a gated feed-forward block, SwiGLU (``gate_proj``, ``up_proj``, ``down_proj``: our W_gate,
  W_in, W_out);
- RoPE in the "rotate_half" layout (``rope_pairs="halves"``), with its base (``rope_theta``)
  and, for Llama 3.1 and some fine-tunes, its ``linear`` or ``llama3`` scaling;
- grouped-query attention (``num_key_value_heads``), a head size of its own (``head_dim``);
- no biases, except Qwen2's on q, k and v (``qkv_bias``); Qwen3 adds an RMSNorm over each head's
  q and k before RoPE (``qk_norm``);
- an unembedding of its own (``lm_head``) or the token embedding's (``tie_word_embeddings``).

Their linear layers are ``nn.Linear`` like ours, so the conversion is a renaming. What our
model cannot do is refused by name (:func:`llama_config`): a sliding window that hides tokens
(Mistral 7B v0.1, Qwen with ``use_sliding_window``), another RoPE (yarn, dynamic, longrope),
RoPE on part of a head, another activation, or biases on some projections and not others.

>>> cfg = llama_config({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
...     "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 128,
...     "max_position_embeddings": 256, "vocab_size": 300, "rope_theta": 1000000.0}, "tiny")
>>> cfg.d_head, cfg.kv_heads, cfg.norm_type, cfg.activation, cfg.rope_pairs, cfg.has_qkv_bias, cfg.bias
(16, 2, 'rmsnorm', 'swiglu', 'halves', True, False)
>>> stored_name("model.layers.0.self_attn.q_proj.weight", cfg, ())
'layers.0.self_attn.q_proj.weight'
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models as tokenizer_models
from tokenizers import processors

from tfviz.config import ModelConfig, RopeScaling
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:  # torch is imported when a folder is opened, not when one is listed
    from torch import Tensor

#: model_type -> the family's name, as people write it, and its usual architecture.
NAMES = {"llama": ("Llama", "LlamaForCausalLM"), "mistral": ("Mistral", "MistralForCausalLM"),
         "qwen2": ("Qwen2", "Qwen2ForCausalLM"), "qwen3": ("Qwen3", "Qwen3ForCausalLM")}
# transformers' hidden_act -> our gated activation ("gelu" is the exact GELU in transformers).
ACTIVATIONS = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu"}
# Tensors our model does not read: RoPE's frequencies, which old checkpoints saved as a buffer.
IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


def llama_config(hf: Mapping, name: str) -> ModelConfig:
    """Our ModelConfig for a Llama, Mistral, Qwen2 or Qwen3 ``config.json`` (already parsed).
    Raises ValueError with the reason when the checkpoint asks for what our model does not do."""
    kind = hf["model_type"]
    family, usual = NAMES[kind]
    arch = architecture(hf, family, usual)
    d, heads = int(hf["hidden_size"]), int(hf["num_attention_heads"])
    max_len = int(hf["max_position_embeddings"])
    head_dim = hf.get("head_dim") or (128 if kind == "qwen3" else d // heads)  # transformers' defaults
    bias, qkv_bias = _biases(hf, kind, family)
    base, scaling = rope_settings(hf, family, max_len)
    refuse_sliding_window(hf, kind, family, max_len)
    return ModelConfig(
        name=name, arch="decoder", vocab_size=int(hf["vocab_size"]), d_model=d, n_heads=heads,
        head_dim=int(head_dim), n_kv_heads=int(hf.get("num_key_value_heads") or heads),
        n_layers=int(hf["num_hidden_layers"]), d_ff=int(hf["intermediate_size"]), max_seq_len=max_len,
        positional="rope", pos_base=base, rope_pairs="halves", rope_scaling=scaling,
        norm="pre", norm_type="rmsnorm", final_norm=True, ln_eps=float(hf.get("rms_norm_eps", 1e-6)),
        activation=gated_activation(hf, family), bias=bias, qkv_bias=qkv_bias, qk_norm=kind == "qwen3",
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)), lm_head=arch.endswith("ForCausalLM"),
        pad_id=first_id(hf.get("pad_token_id")) or first_id(hf.get("eos_token_id")) or 0)


def architecture(hf: Mapping, family: str, usual: str) -> str:
    """config.json's architecture: the causal LM (``usual``) or the bare model; a task head is refused."""
    arch = (hf.get("architectures") or [usual])[0]
    if not (arch.endswith("ForCausalLM") or arch.endswith("Model")):
        raise ValueError(f"its architecture is {arch}; tfviz opens a {family} as {usual} (with its "
                         f"language-model head) or {usual.removesuffix('ForCausalLM')}Model, not with a "
                         "task head")
    return arch


def gated_activation(hf: Mapping, family: str) -> str:
    """Our gated activation for ``hidden_act``: swiglu for SiLU, geglu for the exact GELU."""
    act = hf.get("hidden_act", "silu")
    if act not in ACTIVATIONS:
        raise ValueError(f"hidden_act is {act!r}; tfviz builds a {family}'s gated feed-forward with "
                         "'silu' (SwiGLU) or the exact 'gelu' (GeGLU) only")
    return ACTIVATIONS[act]


def _biases(hf: Mapping, kind: str, family: str) -> tuple[bool, bool | None]:
    """(bias, qkv_bias) for our config: which linear layers carry a bias.

    Llama: ``attention_bias`` on q, k, v and o, ``mlp_bias`` on the feed-forward; Qwen3:
    ``attention_bias`` on q, k, v and o; Qwen2: always on q, k and v, nowhere else; Mistral:
    none. Our model has biases everywhere, nowhere, or on q, k and v only."""
    if kind == "qwen2":
        return False, True
    if kind == "mistral":
        return False, None
    attention = bool(hf.get("attention_bias", False))
    if kind == "qwen3":
        if attention:  # its feed-forward never has one
            raise ValueError("attention_bias = true puts biases on q, k, v and o and none on the "
                             "feed-forward; tfviz builds biases on every linear layer, on none, or "
                             "on q, k and v only (Qwen2), not this mixture")
        return False, None
    mlp = bool(hf.get("mlp_bias", False))
    if attention != mlp:
        raise ValueError(f"attention_bias = {str(attention).lower()} and mlp_bias = "
                         f"{str(mlp).lower()}; tfviz builds biases on every linear layer, on none, "
                         "or on q, k and v only (Qwen2), not this mixture")
    return attention, None


def rope_settings(hf: Mapping, family: str, max_len: int,
                  default_base: float = 10000.0) -> tuple[float, RopeScaling | None]:
    """RoPE's base and scaling. transformers 5 writes them as ``rope_parameters``; earlier
    versions as ``rope_theta`` beside ``rope_scaling`` (whose kind was once called ``type``).
    ``default_base``: the family's own when config.json names none (Mixtral's is 1e6)."""
    rope = dict(hf.get("rope_parameters") or hf.get("rope_scaling") or {})
    if rope and all(isinstance(v, dict) for v in rope.values()):  # one set per kind of layer
        if set(rope) != {"full_attention"}:
            raise ValueError(f"its RoPE differs between kinds of layer ({', '.join(rope)}); tfviz "
                             "builds one RoPE for every layer")
        rope = dict(rope["full_attention"])
    base = float(rope.get("rope_theta", hf.get("rope_theta", default_base)))
    partial = float(rope.get("partial_rotary_factor", hf.get("partial_rotary_factor", 1.0)))
    if partial != 1.0:
        raise ValueError(f"partial_rotary_factor is {partial:g}; a {family} turns every dimension of "
                         "a head with RoPE, and so does transformers' own code for it")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind == "default":
        return base, None
    if kind == "linear":
        return base, RopeScaling("linear", float(rope["factor"]))
    if kind == "llama3":
        return base, RopeScaling(
            "llama3", float(rope["factor"]), float(rope["low_freq_factor"]),
            float(rope["high_freq_factor"]), int(rope.get("original_max_position_embeddings") or max_len))
    raise ValueError(f"its RoPE is rope_type {kind!r}; tfviz builds plain RoPE and its 'linear' and "
                     f"'llama3' scalings, not {kind} (transformers' dynamic, yarn and longrope change "
                     "the frequencies, or the scores, in ways our model does not)")


def refuse_sliding_window(hf: Mapping, kind: str, family: str, max_len: int) -> None:
    """Raise if some layer attends through a sliding window that can hide a token: one of
    ``sliding_window`` tokens, shorter than the longest text the model reads. transformers
    gives a Mistral the window config.json names (4096 when it names none), a Mixtral the one
    it names (none when it names none); a Qwen2 or Qwen3 only with ``use_sliding_window``, and
    then in the layers from ``max_window_layers`` on (or the ones ``layer_types`` marks)."""
    if kind in ("llama", "granitemoe"):
        return
    if kind in ("mistral", "mixtral"):
        window = hf.get("sliding_window", 4096 if kind == "mistral" else None)
        slides = window is not None
    else:
        window = hf.get("sliding_window", 4096) if hf.get("use_sliding_window", False) else None
        n, first = int(hf["num_hidden_layers"]), int(hf.get("max_window_layers", 28))
        types = hf.get("layer_types") or ["sliding_attention" if window is not None and i >= first
                                          else "full_attention" for i in range(n)]
        slides = window is not None and "sliding_attention" in types
    if slides and int(window) < max_len:
        raise ValueError(
            f"its layers attend through a sliding window of {int(window):,} tokens (sliding_window"
            f"{'' if kind in ('mistral', 'mixtral') else ' with use_sliding_window'}), shorter than the "
            f"{max_len:,} it reads (max_position_embeddings); tfviz builds full causal attention "
            "only, which would let every token see further back than this model was trained to")


def first_id(value) -> int | None:
    """An id from config.json, where a list (Llama 3.1's several end tokens) gives its first."""
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) else None


def renames(cfg: ModelConfig) -> dict[str, str]:
    """Stored name (without ``model.``) -> our parameter name, for every tensor of ``cfg``."""
    out = {"embed_tokens.weight": "embed.weight", "norm.weight": "ln_final.weight"}
    if cfg.lm_head and not cfg.tie_embeddings:
        out["lm_head.weight"] = "unembed.weight"
    for i in range(cfg.n_layers):
        h, b = f"layers.{i}.", f"blocks.{i}."
        out.update({h + "input_layernorm.weight": b + "ln1.weight",
                    h + "post_attention_layernorm.weight": b + "ln2.weight"})
        for part in "qkvo":
            out[h + f"self_attn.{part}_proj.weight"] = b + f"attn.W_{part}.weight"
            if (cfg.has_qkv_bias if part != "o" else cfg.bias):
                out[h + f"self_attn.{part}_proj.bias"] = b + f"attn.W_{part}.bias"
        if cfg.qk_norm:
            for part in "qk":
                out[h + f"self_attn.{part}_norm.weight"] = b + f"attn.{part}_norm.weight"
        for theirs, ours in (("gate_proj", "W_gate"), ("up_proj", "W_in"), ("down_proj", "W_out")):
            out[h + f"mlp.{theirs}.weight"] = b + f"mlp.{ours}.weight"
            if cfg.bias:
                out[h + f"mlp.{theirs}.bias"] = b + f"mlp.{ours}.bias"
    return out


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a checkpoint of this config stores (names without ``model.``), with its
    shape as stored: nn.Linear's (out, in)."""
    d, f, V, dh = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.d_head
    q, kv = cfg.n_heads * dh, cfg.kv_heads * dh
    out_size = {"q": q, "k": kv, "v": kv, "o": d}
    shapes = {}
    for name in renames(cfg):
        part = name.rsplit(".", 2)[-2]  # "q_proj", "gate_proj", "input_layernorm", "embed_tokens"…
        if name in ("embed_tokens.weight", "lm_head.weight"):
            shapes[name] = (V, d)
        elif part.endswith("_norm"):
            shapes[name] = (dh,)  # QK-norm: one gamma per head dimension
        elif "layernorm" in part or name == "norm.weight":
            shapes[name] = (d,)
        elif part in ("q_proj", "k_proj", "v_proj", "o_proj"):
            rows, cols = out_size[part[0]], (q if part == "o_proj" else d)
            shapes[name] = (rows, cols) if name.endswith("weight") else (rows,)
        else:  # the feed-forward's three matrices
            rows, cols = (d, f) if part == "down_proj" else (f, d)
            shapes[name] = (rows, cols) if name.endswith("weight") else (rows,)
    return shapes


def stored_name(key: str, cfg: ModelConfig, present: Collection[str]) -> str | None:
    """A tensor's name without the ``model.`` prefix ``*ForCausalLM`` saves (a bare ``*Model``
    saves none); None for what our model does not read (an old RoPE buffer, and the copy of the
    token embedding some versions write as ``lm_head.weight`` when the two are tied)."""
    name = key.removeprefix("model.")
    if name.endswith(IGNORED_SUFFIXES):
        return None
    if name == "lm_head.weight" and (cfg.tie_embeddings or not cfg.lm_head):
        return None
    return name


def config_sizes(cfg: ModelConfig) -> str:
    """config.json's size fields as these families name them, for a message about a shape."""
    return (f"hidden_size={cfg.d_model}, num_attention_heads={cfg.n_heads}, "
            f"num_key_value_heads={cfg.kv_heads}, head_dim={cfg.d_head}, "
            f"intermediate_size={cfg.d_ff}, vocab_size={cfg.vocab_size}")


def llama_state_dict(tensors: Mapping[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Our Transformer's state dict from the checkpoint's tensors (names as :func:`stored_name`
    gives, shapes already checked), as float32: a bfloat16 file is widened, as transformers
    widens it when asked for float32."""
    rename = renames(cfg)
    return {rename[name]: t.float().contiguous() for name, t in tensors.items() if name in rename}


# ----- the tokenizer -------------------------------------------------------------------------

def llama_tokenizer(hf: HFTokenizer, data: Mapping, folder: Path, n_ids: int,
                    family: str | None = None) -> CheckpointTokenizer:
    """The checkpoint's BPE as saved in tokenizer.json: byte-level (Llama 3, SmolLM2, Qwen) or
    SentencePiece-style with "▁" for a space and byte fallback (Llama 2, Mistral, TinyLlama).

    Its beginning-of-text token is added as transformers adds it: when tokenizer_config.json
    says ``add_bos_token`` (or ``add_eos_token``), as it says; otherwise as the file's own
    post-processor does (Llama 3's adds <|begin_of_text|>; Qwen's adds nothing). The end token
    is generation_config.json's ``eos_token_id`` (what ``generate`` stops at), else
    config.json's; of a list, the first. ``family``: its name in messages (Mixtral and
    GraniteMoe read their tokenizers here too); by default the Llama family's.
    """
    family = family or NAMES[data["model_type"]][0]
    if not isinstance(hf.model, tokenizer_models.BPE):
        raise ValueError(f"its tokenizer.json holds a {type(hf.model).__name__} model; tfviz reads a "
                         f"{family}'s text with BPE, byte-level or SentencePiece-style")
    seen = repr(hf.pre_tokenizer) + repr(hf.decoder)
    if "ByteLevel" in seen:
        pieces = "byte_level"
    elif "Metaspace" in seen or "▁" in seen + repr(hf.normalizer) or hf.model.byte_fallback:
        pieces = "metaspace"
    else:
        raise ValueError("its tokenizer.json's BPE is neither byte-level nor SentencePiece-style "
                         "(no ByteLevel, Metaspace or '▁' in its pre-tokenizer, normaliser or "
                         "decoder), so tfviz cannot tell how it marks spaces")
    settings = read_json(folder, "tokenizer_config.json")
    generation = read_json(folder, "generation_config.json")

    def named(key: str, id_key: str, *sources: Mapping) -> str | None:
        """A special token: its id in the first source that has one, else tokenizer_config's text."""
        for source in sources:
            token_id = first_id(source.get(id_key))
            if token_id is not None and hf.id_to_token(token_id) is not None:
                return hf.id_to_token(token_id)
        return token_text(settings, key)

    bos = named("bos_token", "bos_token_id", data)
    eos = named("eos_token", "eos_token_id", generation, data)
    ends = end_tokens(hf, generation, data)
    pad = named("pad_token", "pad_token_id", data)
    if "add_bos_token" in settings or "add_eos_token" in settings:
        hf.post_processor = _template(
            hf, token_text(settings, "bos_token") or bos, token_text(settings, "eos_token") or eos,
            bool(settings.get("add_bos_token")), bool(settings.get("add_eos_token")))
    return CheckpointTokenizer(hf, eos, bos_token=bos, pad_token=pad, add_special_tokens=True,
                               pieces=pieces, n_ids=n_ids, end_tokens=ends)


def _template(hf: HFTokenizer, bos: str | None, eos: str | None, add_bos: bool,
              add_eos: bool) -> processors.TemplateProcessing:
    """transformers' own post-processor for ``add_bos_token`` / ``add_eos_token``: the text
    between the tokens asked for (a token the tokenizer lacks is not added)."""
    add_bos = add_bos and bos is not None and hf.token_to_id(bos) is not None
    add_eos = add_eos and eos is not None and hf.token_to_id(eos) is not None
    single = f"{f'{bos}:0 ' if add_bos else ''}$A:0{f' {eos}:0' if add_eos else ''}"
    pair = f"{single}{f' {bos}:1' if add_bos else ''} $B:1{f' {eos}:1' if add_eos else ''}"
    special = [(t, hf.token_to_id(t)) for t, on in ((bos, add_bos), (eos, add_eos)) if on]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=special)


def read_json(folder: Path, name: str) -> dict:
    """A settings file of the folder (tokenizer_config.json, generation_config.json), or none
    when it is missing or unreadable: transformers' defaults then apply, as they do there."""
    try:
        data = json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def token_text(settings: Mapping, key: str) -> str | None:
    """A special token's text from tokenizer_config.json: a string, or an AddedToken's dict."""
    value = settings.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def end_tokens(hf: HFTokenizer, *sources: Mapping) -> list[str]:
    """Every token that ends a generated text: the ``eos_token_id`` of the first source that
    names one (generation_config.json, then config.json), all of a list, as transformers'
    ``generate`` stops at any of them (Llama 3.1 Instruct's [128001, 128008, 128009]:
    <|end_of_text|>, <|eom_id|>, <|eot_id|>). Ids the tokenizer lacks are passed over."""
    for source in sources:
        value = source.get("eos_token_id")
        ids = value if isinstance(value, list) else [value]
        ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
        if ids:
            return [t for t in map(hf.id_to_token, ids) if t is not None]
    return []
