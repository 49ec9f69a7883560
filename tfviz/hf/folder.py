"""Open a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) as a Bundle.

Every way a folder can be wrong ends in one :class:`CheckpointError` that names the folder,
what is wrong and what to do, checked before the model is built:

- no config.json, or a ``model_type`` tfviz cannot build (only GPT-2 so far);
- weights only as ``pytorch_model.bin``: a pickle, which can run code when it is read, so it
  is refused, with the one line that converts it to safetensors;
- a truncated ``model.safetensors`` (its header promises more bytes than the file has);
- a tensor whose shape does not match config.json, or one missing;
- no ``tokenizer.json``, or one with more tokens than the model has embeddings.

Nothing is downloaded and transformers is not needed: the config is plain JSON, the weights
are read with ``safetensors`` and the tokenizer with ``tokenizers``.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import SafetensorError, safe_open
from tokenizers import Tokenizer as HFTokenizer

from tfviz.config import ModelConfig
from tfviz.hf.gpt2 import expected_shapes, gpt2_config, gpt2_state_dict, stored_name
from tfviz.model import Transformer
from tfviz.tokenizer.checkpoint import CheckpointTokenizer

if TYPE_CHECKING:
    from tfviz.bundle import Bundle

FAMILIES = {"gpt2": "GPT-2"}  # model_type -> family; BERT is to come


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
        raise CheckpointError(folder, f"config.json says model_type {kind!r} (architectures: {archs}); "
                              "tfviz can open GPT-2 checkpoints (model_type 'gpt2', GPT2LMHeadModel) "
                              "so far.")
    return data


def weights_file(folder: Path, data: dict) -> Path:
    path = folder / "model.safetensors"
    if path.exists():
        return path
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
        raise CheckpointError(folder, "its weights are split into several safetensors files; "
                              "tfviz reads one model.safetensors (GPT-2 and BERT fit in one).")
    raise CheckpointError(folder, "it has no model.safetensors.")


def check_complete(folder: Path, path: Path) -> None:
    """Raise if ``path`` is shorter than its own header says (a cut download or copy).

    A safetensors file is an 8-byte little-endian header length, a JSON header giving each
    tensor's byte range, then the bytes; the largest range end is where the file must end.
    """
    size = path.stat().st_size
    problem = None
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
                    end = 8 + n + max((v["data_offsets"][1] for k, v in header.items()
                                       if k != "__metadata__"), default=0)
                except (ValueError, KeyError, TypeError, IndexError) as e:
                    raise CheckpointError(folder, f"{path.name} has a header that is not valid "
                                          f"safetensors ({e}); download it again.") from None
                if end > size:
                    problem = f"its header says its tensors end at byte {end:,}, but the file has {size:,} bytes"
    if problem:
        raise CheckpointError(folder, f"{path.name} is truncated: {problem}. An interrupted download "
                              "or copy leaves such a file; download it again.")


def read_tensors(folder: Path, path: Path, cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """GPT-2's tensors by their stored names, each checked against the shape config.json needs."""
    want = expected_shapes(cfg)
    tensors: dict[str, torch.Tensor] = {}
    try:
        with safe_open(path, framework="pt") as f:
            for key in f.keys():
                name = stored_name(key)
                if name is None or (name == "lm_head.weight" and cfg.tie_embeddings):
                    continue  # a mask buffer, or the tied copy of wte
                if name not in want:
                    raise CheckpointError(folder, f"{path.name} holds a tensor {key!r} that a GPT-2 "
                                          "model of this config does not have.")
                shape = tuple(f.get_slice(key).get_shape())
                if shape != want[name]:
                    raise CheckpointError(folder, (
                        f"{path.name}'s {key} has shape {shape}, but config.json (n_embd={cfg.d_model}, "
                        f"n_inner={cfg.d_ff}, vocab_size={cfg.vocab_size}, n_positions={cfg.max_seq_len}) "
                        f"needs {want[name]}. Is config.json from another model?"))
                tensors[name] = f.get_tensor(key)
    except SafetensorError as e:
        raise CheckpointError(folder, f"{path.name} cannot be read as safetensors ({e}).") from None
    missing = sorted(set(want) - set(tensors))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise CheckpointError(folder, f"{path.name} lacks {', '.join(missing[:3])}{more}, which "
                              f"config.json's {cfg.n_layers} layers need.")
    return tensors


def read_tokenizer(folder: Path, data: dict, cfg: ModelConfig) -> CheckpointTokenizer:
    path = folder / "tokenizer.json"
    if not path.exists():
        raise CheckpointError(folder, (
            "it has no tokenizer.json, so tfviz cannot turn text into this model's token ids. "
            "Save the model's tokenizer into the folder with transformers on any machine: "
            f"AutoTokenizer.from_pretrained('{folder}').save_pretrained('{folder}') writes it "
            "(the fast tokenizer's file)."))
    try:
        hf = HFTokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises a bare Exception for a malformed file
        raise CheckpointError(folder, f"tokenizer.json cannot be read ({e}).") from None
    eos = data.get("eos_token_id")
    tok = CheckpointTokenizer(hf, hf.id_to_token(eos) if isinstance(eos, int) else None)
    if tok.vocab_size > cfg.vocab_size:
        raise CheckpointError(folder, f"tokenizer.json has {tok.vocab_size:,} tokens but the model "
                              f"only {cfg.vocab_size:,} embeddings (config.json's vocab_size); "
                              "they are from different models.")
    return tok


def load_checkpoint(folder: str | Path) -> Bundle:
    """A :class:`tfviz.bundle.Bundle` of the Hugging Face model in ``folder``.

    Everything is checked before the model is built; the model is made on torch's "meta"
    device (no memory, no random numbers) and takes the file's tensors as its own, so a
    GPT-2 small needs its weights in memory once, not twice.
    """
    from tfviz.bundle import Bundle  # noqa: F811  bundle imports this module lazily; no cycle

    folder = Path(folder)
    data = read_config(folder)
    path = weights_file(folder, data)
    try:
        cfg = gpt2_config(data, folder.resolve().name)
    except (KeyError, ValueError, TypeError) as e:
        missing = f"it lacks {e}" if isinstance(e, KeyError) else str(e)
        raise CheckpointError(folder, f"config.json is not one tfviz can build: {missing}.") from None
    tok = read_tokenizer(folder, data, cfg)
    check_complete(folder, path)
    state = gpt2_state_dict(read_tensors(folder, path, cfg), cfg)
    with torch.device("meta"):
        model = Transformer(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    model.eval()
    n_params = sum(t.numel() for t in state.values())
    manifest = {"source": str(folder), "family": FAMILIES[data["model_type"]],
                "architectures": data.get("architectures", []), "parameters": n_params,
                "size": f"{cfg.n_layers} layers × {cfg.n_heads} heads, d = {cfg.d_model}, "
                        f"{cfg.vocab_size:,} tokens"}
    return Bundle(cfg.name, model, tok, cfg, manifest, trained=True)
