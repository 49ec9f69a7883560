"""GPT-2 in tfviz's own terms: its config.json as a ModelConfig, its tensors as our state dict.

GPT-2 (``GPT2LMHeadModel``) is a decoder our model can already be: learned positions, pre-LN
blocks, a final LayerNorm, biases everywhere, GELU in its tanh form (``gelu_new``) and logits
read through the token embedding itself (tied unembedding). Two things differ in storage:

- GPT-2's linear layers are ``Conv1D`` modules, whose weight is stored (in, out), the transpose
  of ``nn.Linear``'s (out, in);
- queries, keys and values come from one (d, 3d) matrix ``c_attn``, cut into three (d, d).

>>> cfg = gpt2_config({"n_embd": 32, "n_head": 2, "n_layer": 2, "n_positions": 64,
...                    "vocab_size": 300}, "tiny")
>>> cfg.d_head, cfg.d_ff, cfg.norm, cfg.activation, cfg.positional
(16, 128, 'pre', 'gelu_tanh', 'learned')
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer as HFTokenizer

from tfviz.config import ModelConfig
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:  # torch is imported when a folder is opened, not when one is listed
    from torch import Tensor

# transformers' names for the activation -> ours. "gelu_new" and "gelu_pytorch_tanh" are the
# same tanh formula (GPT-2's); "gelu" is the exact one.
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
               "gelu": "gelu", "relu": "relu"}

# Old checkpoints also store the causal mask as a buffer; our model builds its own.
IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias")


def gpt2_config(hf: Mapping, name: str) -> ModelConfig:
    """Our ModelConfig for a GPT-2 ``config.json`` (already parsed). Raises ValueError with
    the reason when the checkpoint asks for something our model does not do."""
    act = hf.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise ValueError(f"activation_function {act!r} is not one tfviz knows ({', '.join(ACTIVATIONS)})")
    for key, plain in (("scale_attn_by_inverse_layer_idx", False), ("add_cross_attention", False),
                       ("scale_attn_weights", True)):
        if bool(hf.get(key, plain)) != plain:
            raise ValueError(f"{key} = {hf[key]!r} is not supported (tfviz runs plain GPT-2 attention)")
    d = int(hf["n_embd"])
    return ModelConfig(
        name=name, arch="decoder", vocab_size=int(hf["vocab_size"]), d_model=d,
        n_heads=int(hf["n_head"]), n_layers=int(hf["n_layer"]),
        d_ff=int(hf.get("n_inner") or 4 * d),  # n_inner null means 4 x n_embd
        max_seq_len=int(hf["n_positions"]), positional="learned", norm="pre", final_norm=True,
        ln_eps=float(hf.get("layer_norm_epsilon", 1e-5)), activation=ACTIVATIONS[act], bias=True,
        tie_embeddings=bool(hf.get("tie_word_embeddings", True)),
        pad_id=int(hf.get("eos_token_id") or 0))


Turn = Callable[["Tensor"], "Tensor"]


def _layout(cfg: ModelConfig) -> dict[str, tuple[tuple[int, ...], tuple[tuple[str, Turn], ...]]]:
    """GPT-2 tensor name (as :func:`stored_name` gives it) -> (its shape as stored, and each
    parameter of ours it becomes with how to turn the stored tensor into it). One stored
    tensor may become several of ours: ``c_attn`` holds the queries', keys' and values'."""
    d, f, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    same = lambda t: t  # noqa: E731
    conv = lambda t: t.T  # noqa: E731  Conv1D (in, out) -> Linear (out, in)

    def conv1d(stored: str, ours: str, n_in: int, n_out: int) -> dict:  # stored (in, out)
        return {f"{stored}.weight": ((n_in, n_out), ((f"{ours}.weight", conv),)),
                f"{stored}.bias": ((n_out,), ((f"{ours}.bias", same),))}

    def norm(stored: str, ours: str) -> dict:
        return {f"{stored}.weight": ((d,), ((f"{ours}.weight", same),)),
                f"{stored}.bias": ((d,), ((f"{ours}.bias", same),))}

    def qkv(b: str) -> dict:  # (d, 3d): q's columns, then k's, then v's
        cuts = [(part, slice(j * d, (j + 1) * d)) for j, part in enumerate("qkv")]
        return {"weight": ((d, 3 * d), tuple((f"{b}attn.W_{part}.weight",
                                              lambda t, cut=cut: t[:, cut].T)  # (d, d)
                                             for part, cut in cuts)),
                "bias": ((3 * d,), tuple((f"{b}attn.W_{part}.bias", lambda t, cut=cut: t[cut])
                                         for part, cut in cuts))}

    out = {"wte.weight": ((V, d), (("embed.weight", same),)),
           "wpe.weight": ((cfg.max_seq_len, d), (("pos_embed.weight", same),)),
           **norm("ln_f", "ln_final")}
    if not cfg.tie_embeddings:  # (vocab, d), already Linear's layout
        out["lm_head.weight"] = ((V, d), (("unembed.weight", same),))
    for i in range(cfg.n_layers):
        h, b = f"h.{i}.", f"blocks.{i}."
        out.update({f"{h}attn.c_attn.{kind}": entry for kind, entry in qkv(b).items()})
        out.update({**conv1d(h + "attn.c_proj", b + "attn.W_o", d, d),
                    **conv1d(h + "mlp.c_fc", b + "mlp.W_in", d, f),
                    **conv1d(h + "mlp.c_proj", b + "mlp.W_out", f, d),
                    **norm(h + "ln_1", b + "ln1"), **norm(h + "ln_2", b + "ln2")})
    return out


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a GPT-2 checkpoint of this config stores, with its shape as stored."""
    return {name: shape for name, (shape, _) in _layout(cfg).items()}


def stored_name(key: str, tied: bool = True) -> str | None:
    """A tensor's GPT-2 name without the ``transformer.`` prefix GPT2LMHeadModel saves (a bare
    GPT2Model saves none); None for what our model does not read (the old mask buffers, and,
    when ``tied``, the copy of ``wte`` some versions write as ``lm_head.weight``)."""
    name = key.removeprefix("transformer.")
    if name.endswith(IGNORED_SUFFIXES) or (tied and name == "lm_head.weight"):
        return None
    return name


def config_sizes(cfg: ModelConfig) -> str:
    """config.json's size fields as GPT-2 names them, for a message about a shape."""
    return (f"n_embd={cfg.d_model}, n_inner={cfg.d_ff}, vocab_size={cfg.vocab_size}, "
            f"n_positions={cfg.max_seq_len}")


def gpt2_state_dict(tensors: Mapping[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Our Transformer's state dict from GPT-2's tensors (names as :func:`stored_name` gives,
    shapes already checked against :func:`expected_shapes`), as float32."""
    layout = _layout(cfg)
    return {ours: turn(t).float().contiguous()
            for name, t in tensors.items() if name in layout
            for ours, turn in layout[name][1]}


def gpt2_tokenizer(hf: HFTokenizer, data: Mapping, folder: Path, n_ids: int) -> CheckpointTokenizer:
    """The checkpoint's byte-level BPE, used as saved (no prefix space, no special tokens added);
    its end-of-text token is the one config.json's ``eos_token_id`` names."""
    eos = data.get("eos_token_id")
    return CheckpointTokenizer(hf, hf.id_to_token(eos) if isinstance(eos, int) else None, n_ids=n_ids)
