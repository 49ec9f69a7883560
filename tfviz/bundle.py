"""A ready model + tokenizer + config (what ``tfviz.load`` returns), for the app and for notebooks.

>>> import tfviz
>>> b = tfviz.load("gpt-tiny")
>>> tr = b.trace("the animal didn't cross the street")
>>> tr["pattern", 0].shape[0]        # one attention map per head
4

Trained bundles live in ``assets/<name>/`` (config.json, model.safetensors, tokenizer.json,
manifest.json), written by ``python -m tfviz.train --preset NAME``. If a preset has no trained
files yet, ``tfviz.load`` (``tfviz.opening``) builds it with fresh seeded weights and a byte-level tokenizer.
Weights are read with safetensors only, never with pickle.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from tfviz.config import ModelConfig, RunOptions, preset
from tfviz.facts import ModelFacts, model_facts
from tfviz.manifest import Measured
from tfviz.tokenizer import load_tokenizer
from tfviz.tokenizer.base import Tokenizer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.textinput import truncation_notice

if TYPE_CHECKING:  # torch is imported where a model is built or run, not where a text is read:
    # the tour's first view and the sidebar read the default sentence without it
    from tfviz.model import Transformer
    from tfviz.trace import NamesFilter, Trace

ASSETS = Path(__file__).resolve().parent.parent / "assets"


class Reading(NamedTuple):
    """What a model reads of a text: its token ids, cut to the model's context (never empty),
    and the notice that says so when the text was cut (None otherwise)."""

    ids: tuple[int, ...]
    notice: str | None


@dataclass(frozen=True)
class Bundle(Measured):
    name: str
    model: Transformer
    tokenizer: Tokenizer
    config: ModelConfig
    manifest: dict = field(default_factory=dict)
    trained: bool = False
    _weights: Mapping[str, np.ndarray] | None = field(default=None, init=False, repr=False,
                                                      compare=False)
    _facts: ModelFacts | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def facts(self) -> ModelFacts:
        """What this model is (norm, activation, positions, tokenizer, special tokens, size,
        what its file holds): the one place a lesson sentence learns it (:mod:`tfviz.facts`).
        Computed on first use and kept, as :meth:`weights` is; a value, safe to share."""
        if self._facts is None:
            counts = {k: int(v.numel()) for k, v in self.model.state_dict().items()}
            object.__setattr__(self, "_facts", model_facts(
                self.name, self.config, self.tokenizer, self.manifest, self.trained, counts))
        return self._facts

    def weights(self) -> Mapping[str, np.ndarray]:
        """Every parameter as read-only numpy, TransformerLens-shaped: ``weights()["W_Q"][l, h]``
        is layer l, head h's (d_model, d_head) matrix (see :mod:`tfviz.weights`).

        Built on the first call and kept: two threads that race here build equal copies and
        one is kept. Nobody can change it, so every learner on a server may share it.
        """
        if self._weights is None:
            from tfviz.weights import export_weights

            object.__setattr__(self, "_weights", export_weights(self.model))
        return self._weights

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def token_strings(self, ids) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def read(self, text: str) -> Reading:
        """What the model reads of ``text``: the one place text becomes the ids of a trace, so
        the notice about cutting it to the context sits beside the cut.

        >>> import tfviz
        >>> ids, notice = tfviz.load("reverse-encdec").read("abcd" * 10)
        >>> len(ids), notice
        (32, 'Your text is 40 tokens long; the model reads at most 32, so only the first 32 are shown.')
        """
        ids = self.encode(text)
        n = self.config.max_seq_len
        tok = self.tokenizer
        if (len(ids) > n > 1 and getattr(tok, "add_special_tokens", False)
                and ids[-1] == tok.eos_id):  # a BERT's [CLS] ... [SEP]: cut inside, keep [SEP]
            closing = tok.id_to_token(ids[-1])
            return Reading((*ids[:n - 1], ids[-1]), truncation_notice(len(ids), n, closing))
        return Reading(tuple(ids[:n]) or (0,), truncation_notice(len(ids), n))

    def trace(self, text: str | Reading, *, source: str | None = None,
              options: RunOptions | None = None, names: NamesFilter = None) -> Trace:
        """Trace one forward pass on ``text`` as :meth:`read` reads it. A caller that already
        read it may pass that :class:`Reading` instead, so the text is tokenised once.

        Encoder-decoder models: the encoder reads ``text`` (or ``source``, and the decoder then
        reads the string ``text``); see :meth:`seq2seq_inputs`.
        """
        from tfviz.trace import run_with_trace

        if self.config.arch != "encoder-decoder":
            ids = list(text.ids if isinstance(text, Reading) else self.read(text).ids)
            return run_with_trace(self.model, ids, tokens=self.token_strings(ids),
                                  options=options, names=names)
        src, ids = self.seq2seq_inputs(text) if source is None else self.seq2seq_inputs(source, text)
        return run_with_trace(self.model, ids, tokens=self.token_strings(ids), enc_ids=src,
                              enc_tokens=self.token_strings(src), options=options, names=names)

    def seq2seq_inputs(self, source: str | Reading,
                       target: str | None = None) -> tuple[list[int], list[int]]:
        """(encoder ids, decoder ids) for an encoder-decoder model.

        The encoder reads ``source``; the decoder reads ``<bos>`` + ``target``. Without a
        target, the decoder reads ``<bos>`` + the model's own greedy answer (without its
        ``<eos>``), so ``trace("abcd")`` on reverse-encdec shows ``<bos> d c b a`` reading
        ``a b c d``, and its cross-attention draws the anti-diagonal.
        """
        n = self.config.max_seq_len
        src = list(source.ids if isinstance(source, Reading) else self.read(source).ids)
        bos, eos = self.tokenizer.bos_id, self.tokenizer.eos_id
        if target is not None:
            return src, [bos, *self.encode(target)][:n]
        dec = [bos]
        import torch

        with torch.no_grad():
            logits, cache = self.model.step(torch.tensor([dec]), enc_ids=torch.tensor([src]))
            while len(dec) < n and (nxt := int(logits[0, -1].argmax())) != eos:
                dec.append(nxt)
                logits, cache = self.model.step(torch.tensor([[nxt]]), cache)
        return src, dec


def fresh(cfg: ModelConfig) -> Bundle:
    from tfviz.model import Transformer

    tok = ByteTokenizer()
    if cfg.vocab_size < tok.vocab_size:
        cfg = cfg.replace(vocab_size=tok.vocab_size)
    model = Transformer(cfg).eval()
    return Bundle(cfg.name, model, tok, cfg)


def load_dir(path: Path) -> Bundle:
    data = json.loads((path / "config.json").read_text())
    if data.get("arch") == "vit":  # an image model: no tokenizer (tfviz.vision_bundle)
        from tfviz.vision_bundle import load_vision_dir

        return load_vision_dir(path)
    from safetensors.torch import load_file

    from tfviz.model import Transformer

    cfg = ModelConfig.from_dict(data)
    model = Transformer(cfg)
    model.load_state_dict(load_file(path / "model.safetensors"))
    model.eval()
    manifest_path = path / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return Bundle(cfg.name, model, load_tokenizer(path), cfg, manifest, trained=True)


def bundled_names() -> list[str]:
    """Text-model presets that have trained files in assets/ (with their tokenizer); the
    vision model, vit-tiny, reads images and has none (tfviz.vision_bundle)."""
    return sorted(p.name for p in ASSETS.glob("*/model.safetensors") for p in [p.parent]
                  if (p / "tokenizer.json").exists())

