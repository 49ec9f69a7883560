"""BERT in tfviz's own terms: its config.json as a ModelConfig, its tensors as our state dict.

BERT (``BertForMaskedLM``, or ``BertModel`` without a head) is an encoder our model can be with
four switches on (see :class:`tfviz.config.ModelConfig`):

- the embeddings add a token-type ("segment") row to word and learned position, then a
  LayerNorm (``n_token_types``, ``embed_norm``); one sentence is segment A, row 0, for every token;
- the blocks are post-LN, bidirectional, GELU in its exact erf form;
- the masked-LM head is a transform (dense d -> d, GELU, LayerNorm; ``mlm_transform``) and
  then the word embeddings as the unembedding (tied), plus a bias per word (``unembed_bias``);
- a ``BertModel`` has no head: the model ends at its last block (``lm_head=False``).

Its linear layers are ``nn.Linear`` like ours, so no weight is transposed: the conversion is a
renaming. Old checkpoints (bert-base-uncased's own) call LayerNorm's weight and bias ``gamma``
and ``beta``; both spellings are read. The pooler (``BertModel``'s tanh layer on [CLS]) and the
next-sentence head of ``BertForPreTraining`` serve no lesson, and are not read.

>>> cfg = bert_config({"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
...                    "intermediate_size": 64, "max_position_embeddings": 40, "vocab_size": 120,
...                    "architectures": ["BertForMaskedLM"]}, "tiny")
>>> cfg.arch, cfg.norm, cfg.activation, cfg.n_token_types, cfg.embed_norm, cfg.ln_eps
('encoder', 'post', 'gelu', 2, True, 1e-12)
>>> stored_name("bert.encoder.layer.0.attention.output.LayerNorm.gamma", cfg)
'encoder.layer.0.attention.output.LayerNorm.weight'
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, normalizers, pre_tokenizers, processors
from tokenizers import models as tokenizer_models

from tfviz.config import ModelConfig
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:  # torch is imported when a folder is opened, not when one is listed
    from torch import Tensor

WITH_HEAD = ("BertForMaskedLM", "BertForPreTraining")  # the masked-LM head is there
WITHOUT_HEAD = ("BertModel",)
# Tensors our model does not read: a buffer some versions save, the pooler, the NSP head.
IGNORED_PREFIXES = ("embeddings.position_ids", "pooler.", "cls.seq_relationship.")


def bert_config(hf: Mapping, name: str) -> ModelConfig:
    """Our ModelConfig for a BERT ``config.json`` (already parsed). Raises ValueError with the
    reason when the checkpoint asks for something our model does not do."""
    archs = list(hf.get("architectures") or ["BertForMaskedLM"])
    arch = archs[0]
    if arch not in WITH_HEAD + WITHOUT_HEAD:
        raise ValueError(f"its architecture is {arch}; tfviz opens BERT as "
                         f"{' or '.join(WITH_HEAD[:1] + WITHOUT_HEAD)} (the encoder with its masked-LM "
                         "head, or alone), not with a task head")
    act = hf.get("hidden_act", "gelu")
    if act != "gelu":
        raise ValueError(f"hidden_act is {act!r}; tfviz runs BERT with 'gelu' (the exact erf form "
                         "BERT was trained with) only")
    pos = hf.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise ValueError(f"position_embedding_type {pos!r} is not supported (tfviz runs BERT's "
                         "learned absolute positions)")
    for key in ("is_decoder", "add_cross_attention"):
        if hf.get(key):
            raise ValueError(f"{key} = true is not supported (tfviz runs BERT as a bidirectional encoder)")
    head = arch in WITH_HEAD
    return ModelConfig(
        name=name, arch="encoder", vocab_size=int(hf["vocab_size"]), d_model=int(hf["hidden_size"]),
        n_heads=int(hf["num_attention_heads"]), n_layers=int(hf["num_hidden_layers"]),
        d_ff=int(hf["intermediate_size"]), max_seq_len=int(hf["max_position_embeddings"]),
        positional="learned", norm="post", final_norm=False,
        ln_eps=float(hf.get("layer_norm_eps", 1e-12)), activation="gelu", bias=True,
        tie_embeddings=bool(hf.get("tie_word_embeddings", True)), pad_id=int(hf.get("pad_token_id") or 0),
        n_token_types=int(hf.get("type_vocab_size", 2)), embed_norm=True,
        mlm_transform=head, unembed_bias=head, lm_head=head)


def _layout(cfg: ModelConfig) -> dict[str, tuple[str, tuple[int, ...]]]:
    """BERT tensor name (as :func:`stored_name` gives it) -> (our parameter name, its shape)."""
    d, f, V = cfg.d_model, cfg.d_ff, cfg.vocab_size

    def linear(stored: str, ours: str, n_out: int, n_in: int) -> dict:  # nn.Linear: (out, in)
        return {f"{stored}.weight": (f"{ours}.weight", (n_out, n_in)),
                f"{stored}.bias": (f"{ours}.bias", (n_out,))}

    def norm(stored: str, ours: str) -> dict:
        return {f"{stored}.weight": (f"{ours}.weight", (d,)), f"{stored}.bias": (f"{ours}.bias", (d,))}

    out = {"embeddings.word_embeddings.weight": ("embed.weight", (V, d)),
           "embeddings.position_embeddings.weight": ("pos_embed.weight", (cfg.max_seq_len, d)),
           "embeddings.token_type_embeddings.weight": ("token_type_embed.weight", (cfg.n_token_types, d)),
           **norm("embeddings.LayerNorm", "ln_embed")}
    for i in range(cfg.n_layers):
        h, b = f"encoder.layer.{i}.", f"blocks.{i}."
        out.update({**linear(h + "attention.self.query", b + "attn.W_q", d, d),
                    **linear(h + "attention.self.key", b + "attn.W_k", d, d),
                    **linear(h + "attention.self.value", b + "attn.W_v", d, d),
                    **linear(h + "attention.output.dense", b + "attn.W_o", d, d),
                    **norm(h + "attention.output.LayerNorm", b + "ln1"),
                    **linear(h + "intermediate.dense", b + "mlp.W_in", f, d),
                    **linear(h + "output.dense", b + "mlp.W_out", d, f),
                    **norm(h + "output.LayerNorm", b + "ln2")})
    if cfg.mlm_transform:
        out.update({**linear("cls.predictions.transform.dense", "mlm_head.dense", d, d),
                    **norm("cls.predictions.transform.LayerNorm", "mlm_head.ln")})
    if cfg.unembed_bias:
        out["cls.predictions.bias"] = ("unembed_bias", (V,))
    if cfg.lm_head and not cfg.tie_embeddings:
        out["cls.predictions.decoder.weight"] = ("unembed.weight", (V, d))
    return out


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a BERT checkpoint of this config stores that our model reads, with its shape."""
    return {name: shape for name, (_, shape) in _layout(cfg).items()}


def stored_name(key: str, cfg: ModelConfig, present: Collection[str] = ()) -> str | None:
    """A tensor's BERT name without the ``bert.`` prefix BertForMaskedLM saves (BertModel saves
    none), with LayerNorm's old ``gamma``/``beta`` read as ``weight``/``bias``; None for what our
    model does not read (the pooler, the NSP head, a position-id buffer, the decoder's tied copy
    of the word embeddings, and any head of a model opened without one).

    The logits' bias: a tied decoder's bias is ``cls.predictions.bias`` (transformers ties
    ``decoder.bias`` to it). An untied decoder computes with its own ``decoder.bias`` when the
    file (``present``: every key in it) has one, as transformers does; older files keep only
    ``cls.predictions.bias``. Whichever is used is read under the name ``cls.predictions.bias``.
    """
    name = key.removeprefix("bert.")
    if name.endswith("LayerNorm.gamma") or name.endswith("LayerNorm.beta"):
        name = name.rsplit(".", 1)[0] + (".weight" if name.endswith("gamma") else ".bias")
    if name.startswith(IGNORED_PREFIXES) or (not cfg.lm_head and name.startswith("cls.")):
        return None
    if name in ("cls.predictions.bias", "cls.predictions.decoder.bias"):
        own = not cfg.tie_embeddings and any(k.removeprefix("bert.") == "cls.predictions.decoder.bias"
                                             for k in present)
        return "cls.predictions.bias" if (name == "cls.predictions.decoder.bias") == own else None
    if name == "cls.predictions.decoder.weight" and cfg.tie_embeddings:
        return None
    return name


def config_sizes(cfg: ModelConfig) -> str:
    """config.json's size fields as BERT names them, for a message about a shape."""
    return (f"hidden_size={cfg.d_model}, intermediate_size={cfg.d_ff}, vocab_size={cfg.vocab_size}, "
            f"max_position_embeddings={cfg.max_seq_len}, type_vocab_size={cfg.n_token_types}")


def bert_state_dict(tensors: Mapping[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Our Transformer's state dict from BERT's tensors (names as :func:`stored_name` gives,
    shapes already checked against :func:`expected_shapes`), as float32."""
    layout = _layout(cfg)
    return {layout[name][0]: t.float().contiguous() for name, t in tensors.items()}


def bert_tokenizer(hf: HFTokenizer, data: Mapping, folder: Path, n_ids: int) -> CheckpointTokenizer:
    """The checkpoint's WordPiece vocabulary, reading text as transformers' BertTokenizer reads
    one sentence: transformers keeps only the vocabulary (and added tokens) of tokenizer.json
    and rebuilds the rest from tokenizer_config.json, or its defaults when there is none:
    BERT's normaliser (lower case and accents stripped unless ``do_lower_case`` is false;
    Chinese characters split), BERT's pre-tokeniser, and [CLS] ... [SEP] around the sentence,
    every token of segment A. So do we, so that an uncased BERT reads "The Animal" as
    "the animal" and a cased one keeps the capitals. Tokens are shown as stored ("##ing"
    continues a word)."""
    if not isinstance(hf.model, tokenizer_models.WordPiece):
        raise ValueError(f"its tokenizer.json holds a {type(hf.model).__name__} model; a BERT reads "
                         "text with WordPiece")
    settings = _tokenizer_settings(folder)
    hf.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=bool(settings.get("tokenize_chinese_chars", True)),
        strip_accents=settings.get("strip_accents"), lowercase=bool(settings.get("do_lower_case", True)))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix="##")
    cls, sep = _token(settings, "cls_token", "[CLS]"), _token(settings, "sep_token", "[SEP]")
    ids = {t: hf.token_to_id(t) for t in (cls, sep)}
    if None in ids.values():
        missing = [t for t, i in ids.items() if i is None]
        raise ValueError(f"its tokenizer.json has no {' or '.join(missing)}, which BERT puts around "
                         "every sentence")
    hf.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=list(ids.items()))
    return CheckpointTokenizer(hf, sep, bos_token=cls, pad_token=_token(settings, "pad_token", "[PAD]"),
                               add_special_tokens=True, pieces="stored", n_ids=n_ids)


def _tokenizer_settings(folder: Path) -> dict:
    """tokenizer_config.json's settings, or none when it is missing or unreadable (transformers'
    defaults then apply, as they do in transformers)."""
    try:
        data = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _token(settings: Mapping, key: str, default: str) -> str:
    """A special token's text from tokenizer_config.json: a string, or an AddedToken's dict."""
    value = settings.get(key, default)
    if isinstance(value, dict):
        value = value.get("content", default)
    return value if isinstance(value, str) else default
