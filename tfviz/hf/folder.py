"""Open a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) as a Bundle.

The weights may also be split into shards (``model.safetensors.index.json`` naming
``model-00001-of-0000N.safetensors`` …), as larger checkpoints are saved; they are read as one.

Every way a folder can be wrong ends in one :class:`CheckpointError` that names the folder,
what is wrong and what to do, checked before the model is built:

- no config.json, or a ``model_type`` tfviz cannot build (it builds GPT-2, BERT, Llama,
  Mistral, Qwen2, Qwen3, Mixtral and GraniteMoe; a few near relatives it does not build are
  named with what they add, :data:`NOT_BUILT`), or a config.json asking for what our model does
  not do (another activation, a task head, a sliding window, another RoPE);
- weights only as ``pytorch_model.bin``: a pickle, which can run code when it is read, so it
  is refused, with the one line that converts it to safetensors;
- a truncated ``model.safetensors`` or shard (its header promises more bytes than the file
  has), or a shard the index names and the folder lacks;
- a tensor whose shape does not match config.json, or one missing;
- no ``tokenizer.json``, one with more tokens than the model has embeddings, or one of
  another kind than its family reads (a BERT reads WordPiece).

Nothing is downloaded and transformers is not needed: the config is plain JSON, the weights
are read with ``safetensors`` and the tokenizer with ``tokenizers``.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError, safe_open
from tokenizers import Tokenizer as HFTokenizer

from tfviz.config import ModelConfig
from tfviz.hf import bert, gpt2, llama, moe
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:  # torch is imported when a folder is opened, not when one is listed
    import torch

    from tfviz.bundle import Bundle



@dataclass(frozen=True)
class Family:
    """What tfviz needs to know to open one ``model_type``: how its config.json becomes a
    ModelConfig, which tensors (by stored name) and shapes that config needs, and how they
    become our Transformer's state dict."""

    name: str  # shown to people: "GPT-2"
    example: str  # a model_type with its usual architecture, for messages
    config: Callable[[Mapping, str], ModelConfig]
    # A stored key -> the family's name for it, given the config and every key in the file;
    # None: a tensor our model does not read.
    stored_name: Callable[[str, ModelConfig, Collection[str]], str | None]
    expected_shapes: Callable[[ModelConfig], dict[str, tuple[int, ...]]]
    state_dict: Callable[[Mapping, ModelConfig], dict[str, torch.Tensor]]
    sizes: Callable[[ModelConfig], str]  # config.json's size fields, for a shape message
    # tokenizer.json's tokenizer, config.json's data, the folder, the model's embedding rows ->
    # ours; ValueError: why not
    tokenizer: Callable[[HFTokenizer, Mapping, Path, int], CheckpointTokenizer]
    # config.json's data -> what it asks for that a forward pass does not use, in words (the
    # manifest's "notes"; Mixtral's router noise in training)
    notes: Callable[[Mapping], list[str]] = lambda data: []


FAMILIES: dict[str, Family] = {
    "gpt2": Family("GPT-2", "model_type 'gpt2', GPT2LMHeadModel", gpt2.gpt2_config,
                   lambda key, cfg, present: gpt2.stored_name(key, cfg.tie_embeddings), gpt2.expected_shapes,
                   gpt2.gpt2_state_dict, gpt2.config_sizes, gpt2.gpt2_tokenizer),
    "bert": Family("BERT", "model_type 'bert', BertForMaskedLM or BertModel", bert.bert_config,
                   bert.stored_name, bert.expected_shapes, bert.bert_state_dict, bert.config_sizes,
                   bert.bert_tokenizer),
    # The Llama-shaped decoders: one conversion (tfviz.hf.llama), a family name each.
    **{kind: Family(name, f"model_type '{kind}', {arch}", llama.llama_config, llama.stored_name,
                    llama.expected_shapes, llama.llama_state_dict, llama.config_sizes,
                    llama.llama_tokenizer)
       for kind, (name, arch) in llama.NAMES.items()},
    # The same decoder with a mixture of SwiGLU experts for its feed-forward block (tfviz.hf.moe).
    **{kind: Family(name, f"model_type '{kind}', {arch}", moe.moe_config, llama.stored_name,
                    partial(moe.expected_shapes, kind=kind), partial(moe.moe_state_dict, kind=kind),
                    moe.config_sizes, moe.moe_tokenizer, moe.notes)
       for kind, (name, arch) in moe.NAMES.items()},
}
#: model_types close to one tfviz builds, with what they add that it does not: refused by name.
NOT_BUILT = {
    "granitemoeshared": "GraniteMoeShared sends every token through a shared expert beside the routed "
                        "ones; tfviz builds routed experts only (GraniteMoe, model_type 'granitemoe')",
    "granitemoehybrid": "GraniteMoeHybrid mixes Mamba state-space layers with attention; tfviz builds "
                        "attention layers only",
    "qwen2_moe": "Qwen2-MoE adds a gated shared expert to its routed ones; tfviz builds routed experts "
                 "only (Mixtral, GraniteMoe)",
}


@dataclass(frozen=True)
class FolderInfo:
    """What a model folder holds, read from config.json and the safetensors header alone (no
    weights are read, nothing is built): enough to label it and to say what it will cost.

    ``n_params`` counts the parameters the converted model holds (as ``load_checkpoint``'s
    manifest does); ``memory_bytes`` is what they take in memory as float32, which is how
    tfviz runs every model, whatever the file's dtype.
    """

    folder: Path
    family: str  # "GPT-2"
    model_type: str  # config.json's, e.g. "gpt2"
    architecture: str | None  # config.json's first architecture, e.g. "GPT2LMHeadModel"
    n_layers: int
    n_heads: int
    d_model: int
    vocab: int
    n_params: int
    bytes_on_disk: int  # model.safetensors's size (a sharded checkpoint's: all its shards')

    @property
    def memory_bytes(self) -> int:
        return 4 * self.n_params

    @property
    def size(self) -> str:
        """"12 layers × 12 heads, d = 768, 50,257 tokens"."""
        return (f"{self.n_layers} layers × {self.n_heads} heads, d = {self.d_model}, "
                f"{self.vocab:,} tokens")


class CheckpointError(ValueError):
    """A model folder tfviz cannot open; the message says which folder, what and what to do."""

    def __init__(self, folder: Path, problem: str) -> None:
        super().__init__(f"Cannot open the model folder {folder}: {problem}")
        self.folder = folder
        self.problem = problem


def is_checkpoint_folder(folder: Path) -> bool:
    """A Hugging Face folder rather than one of our bundles: its config.json names a
    ``model_type`` (ours names an ``arch``), or it holds HF weight files and no config of ours."""
    config = folder / "config.json"
    if config.exists():
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            return True  # let load_checkpoint say what is wrong with it
        return "model_type" in data or "architectures" in data
    return (folder / "pytorch_model.bin").exists() or (folder / "model.safetensors").exists()


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.exists():
        raise CheckpointError(folder, "it has no config.json, so tfviz cannot tell which model it is.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(folder, f"config.json is not valid JSON ({e}).") from None
    kind = data.get("model_type")
    if kind not in FAMILIES:
        archs = ", ".join(data.get("architectures") or []) or "none named"
        known = ", ".join(f"{f.name} ({f.example})" for f in FAMILIES.values())
        why = f" {NOT_BUILT[kind]}." if kind in NOT_BUILT else ""
        raise CheckpointError(folder, f"config.json says model_type {kind!r} (architectures: {archs}).{why} "
                              f"tfviz can open {known} checkpoints.")
    return data


INDEX = "model.safetensors.index.json"  # a sharded checkpoint's map: tensor name -> its shard


def weights_file(folder: Path, data: dict) -> Path:
    """model.safetensors, or a sharded checkpoint's index (``INDEX``), which the functions
    below read as the shards it names."""
    path = folder / "model.safetensors"
    if path.exists():
        return path
    if (folder / INDEX).exists():
        shard_files(folder, folder / INDEX)  # every shard it names is there
        return folder / INDEX
    if (folder / "pytorch_model.bin").exists():
        arch = (data.get("architectures") or ["AutoModelForCausalLM"])[0]
        raise CheckpointError(folder, (
            "it holds its weights only as pytorch_model.bin. tfviz reads safetensors only: a .bin "
            "file is a Python pickle, and reading a pickle can run any code its author put in it. "
            "If you trust the file, convert it once, on a machine with transformers installed:\n"
            f"    python -c \"from transformers import {arch} as M; "
            f"M.from_pretrained('{folder}').save_pretrained('{folder}', safe_serialization=True)\"\n"
            "which writes model.safetensors beside it."))
    if list(folder.glob("model-*-of-*.safetensors")):
        raise CheckpointError(folder, f"its weights are split into several safetensors files but "
                              f"it has no {INDEX}, which says which file holds which tensor; "
                              "download that file too.")
    raise CheckpointError(folder, "it has no model.safetensors.")


def weight_map(folder: Path, index: Path) -> dict[str, str]:
    """A sharded checkpoint's index: each tensor's name -> the shard file that holds it."""
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        mapping = data["weight_map"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            raise TypeError("its weight_map names something other than files")
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(folder, f"{index.name} is not a valid safetensors index ({e}); "
                              "download it again.") from None
    return mapping


def shard_files(folder: Path, index: Path) -> list[Path]:
    """The shards ``index`` names, in order, each checked to be in the folder."""
    names = sorted(set(weight_map(folder, index).values()))
    missing = [n for n in names if not (folder / n).is_file() or Path(n).name != n]
    if missing:
        raise CheckpointError(folder, f"{index.name} names {', '.join(missing)}, which the folder "
                              "lacks; download every shard of the checkpoint.")
    return [folder / n for n in names]


def weights_bytes(path: Path) -> int:
    """Bytes on disk of the weights ``path`` stands for (a sharded checkpoint: all its shards)."""
    if path.name != INDEX:
        return path.stat().st_size
    return sum(p.stat().st_size for p in shard_files(path.parent, path))


def header_shapes(folder: Path, path: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape as the safetensors header gives it; raises if a file is shorter
    than its own header says (a cut download or copy). ``path`` may be a sharded checkpoint's
    index: then every shard's header is read, and each tensor must be in the shard it names.
    """
    if path.name != INDEX:
        return file_shapes(folder, path)
    mapping, shapes = weight_map(folder, path), {}
    for shard in shard_files(folder, path):
        found = file_shapes(folder, shard)
        for key in (k for k, v in mapping.items() if v == shard.name):
            if key not in found:
                raise CheckpointError(folder, f"{path.name} puts {key} in {shard.name}, which does not "
                                      "hold it; download the checkpoint again.")
            shapes[key] = found[key]  # what the index maps: a shard's other tensors are not read
    return shapes


def file_shapes(folder: Path, path: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape as one safetensors file's header gives it; raises if ``path`` is
    shorter than its own header says (a cut download or copy).

    A safetensors file is an 8-byte little-endian header length, a JSON header giving each
    tensor's dtype, shape and byte range, then the bytes; the largest range end is where the
    file must end. Reading the header is cheap: no tensor is read.
    """
    size = path.stat().st_size
    problem, shapes = None, {}
    if size < 8:
        problem = f"it is {size} bytes long, shorter than any safetensors file's 8-byte start"
    else:
        with path.open("rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if 8 + n > size:
                problem = f"its header should be {n:,} bytes long, but the file has {size:,} bytes in all"
            else:
                try:
                    header = json.loads(f.read(n))
                    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
                    end = 8 + n + max((v["data_offsets"][1] for v in tensors.values()), default=0)
                    shapes = {k: tuple(int(d) for d in v["shape"]) for k, v in tensors.items()}
                except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
                    raise CheckpointError(folder, f"{path.name} has a header that is not valid "
                                          f"safetensors ({e}); download it again.") from None
                if end > size:
                    problem = f"its header says its tensors end at byte {end:,}, but the file has {size:,} bytes"
    if problem:
        raise CheckpointError(folder, f"{path.name} is truncated: {problem}. An interrupted download "
                              "or copy leaves such a file; download it again.")
    return shapes


def check_shapes(folder: Path, path: Path, shapes: Mapping[str, tuple[int, ...]], family: Family,
                 cfg: ModelConfig) -> dict[str, str]:
    """Our name of each tensor the model reads -> its key in the file, every shape (from the
    header) checked against the one config.json needs; raises on a tensor too many or too few."""
    want = family.expected_shapes(cfg)
    keys: dict[str, str] = {}
    for key, shape in shapes.items():
        name = family.stored_name(key, cfg, shapes.keys())
        if name is None:
            continue  # a buffer, a tied copy, or a head our model does not use
        if name not in want:
            raise CheckpointError(folder, f"{path.name} holds a tensor {key!r} that a {family.name} "
                                  "model of this config does not have.")
        if shape != want[name]:
            raise CheckpointError(folder, (
                f"{path.name}'s {key} has shape {shape}, but config.json ({family.sizes(cfg)}) "
                f"needs {want[name]}. Is config.json from another model?"))
        keys[name] = key
    missing = sorted(set(want) - set(keys))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise CheckpointError(folder, f"{path.name} lacks {', '.join(missing[:3])}{more}, which "
                              f"config.json's {cfg.n_layers} layers need.")
    return keys


def read_tensors(folder: Path, path: Path, keys: Mapping[str, str]) -> dict[str, torch.Tensor]:
    """The tensors ``keys`` names (ours -> the file's), read from ``path`` (or, for a sharded
    checkpoint's index, from the shard that holds each)."""
    mapping = weight_map(folder, path) if path.name == INDEX else None
    files = sorted({mapping[key] for key in keys.values()}) if mapping else [path.name]
    out = {}
    for file in files:
        try:
            with safe_open(folder / file if mapping else path, framework="pt") as f:
                out.update({name: f.get_tensor(key) for name, key in keys.items()
                            if mapping is None or mapping[key] == file})
        except SafetensorError as e:
            raise CheckpointError(folder, f"{file} cannot be read as safetensors ({e}).") from None
    return out


def read_tokenizer(folder: Path, data: dict, family: Family, cfg: ModelConfig) -> CheckpointTokenizer:
    path = require_tokenizer(folder)
    try:
        hf = HFTokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises a bare Exception for a malformed file
        raise CheckpointError(folder, f"tokenizer.json cannot be read ({e}).") from None
    try:
        tok = family.tokenizer(hf, data, folder, cfg.vocab_size)
    except ValueError as e:
        raise CheckpointError(folder, f"{e}.") from None
    if tok.vocab_size > cfg.vocab_size:
        raise CheckpointError(folder, f"tokenizer.json has {tok.vocab_size:,} tokens but the model "
                              f"only {cfg.vocab_size:,} embeddings (config.json's vocab_size); "
                              "they are from different models.")
    return tok


def build_config(folder: Path, data: dict, family: Family) -> ModelConfig:
    try:
        return family.config(data, folder.resolve().name)
    except (KeyError, ValueError, TypeError) as e:
        missing = f"it lacks {e}" if isinstance(e, KeyError) else str(e)
        raise CheckpointError(folder, f"config.json is not one tfviz can build: {missing}.") from None


def require_tokenizer(folder: Path) -> Path:
    path = folder / "tokenizer.json"
    if not path.exists():
        raise CheckpointError(folder, (
            "it has no tokenizer.json, so tfviz cannot turn text into this model's token ids. "
            "Save the model's tokenizer into the folder with transformers on any machine: "
            f"AutoTokenizer.from_pretrained('{folder}').save_pretrained('{folder}') writes it "
            "(the fast tokenizer's file)."))
    return path


def open_config(folder: Path) -> tuple[dict, Family, ModelConfig, Path]:
    """config.json's data, its family, our config and the weights file, each checked."""
    data = read_config(folder)
    family = FAMILIES[data["model_type"]]
    path = weights_file(folder, data)
    return data, family, build_config(folder, data, family), path


def describe(folder: str | Path) -> FolderInfo:
    """What the model in ``folder`` is and what it costs, without reading its weights: its
    config.json and the safetensors header are read, the same checks as
    :func:`load_checkpoint` run (except reading tokenizer.json), and a bad folder raises the
    same :class:`CheckpointError`. Milliseconds even for GPT-2 small's 0.5 GB file.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise CheckpointError(folder, "there is no such folder.")
    data, family, cfg, path = open_config(folder)
    require_tokenizer(folder)
    keys = check_shapes(folder, path, header_shapes(folder, path), family, cfg)
    shapes = family.expected_shapes(cfg)
    n_params = sum(_numel(shapes[name]) for name in keys)
    return FolderInfo(folder, family.name, data["model_type"], (data.get("architectures") or [None])[0],
                      cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.vocab_size, n_params,
                      weights_bytes(path))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def load_checkpoint(folder: str | Path) -> Bundle:
    """A :class:`tfviz.bundle.Bundle` of the Hugging Face model in ``folder``.

    Everything is checked before the model is built; the model is made on torch's "meta"
    device (no memory, no random numbers) and takes the file's tensors as its own, so a
    GPT-2 small needs its weights in memory once, not twice.
    """
    from tfviz.bundle import Bundle  # noqa: F811

    folder = Path(folder)
    data, family, cfg, path = open_config(folder)
    tok = read_tokenizer(folder, data, family, cfg)
    stored = header_shapes(folder, path)
    keys = check_shapes(folder, path, stored, family, cfg)
    state = family.state_dict(read_tensors(folder, path, keys), cfg)
    import torch

    from tfviz.model import Transformer

    with torch.device("meta"):
        model = Transformer(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    model.eval()
    n_params = sum(t.numel() for t in state.values())
    manifest = {"source": str(folder), "family": family.name,
                "architectures": data.get("architectures", []), "parameters": n_params,
                "size": f"{cfg.n_layers} layers × {cfg.n_heads} heads, d = {cfg.d_model}, "
                        f"{cfg.vocab_size:,} tokens",
                # what the file holds and the model does not compute (BERT's pooler and
                # next-sentence head, a tied copy, a buffer): lessons say the file has them
                "set_aside": sorted(set(stored) - set(keys.values()))}
    notes = family.notes(data)
    if notes:  # what config.json asks for that a forward pass does not use (training only)
        manifest["notes"] = notes
    return Bundle(cfg.name, model, tok, cfg, manifest, trained=True)
