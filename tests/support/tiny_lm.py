"""A tiny decoder with an 8-token vocabulary, small enough to enumerate every continuation.

Its tokenizer knows three specials and the letters a-e (ids 3-7), one token per letter.
Its LM head is untied (a tied one mostly repeats the last token when untrained), and
``sharpen`` scales it so the next-token distributions are far from uniform,
and ``<eos>`` is sometimes the most probable token: beams then finish at different steps.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from tfviz.bundle import Bundle
from tfviz.config import ModelConfig
from tfviz.model import Transformer


class LetterTokenizer:
    specials = ("<pad>", "<bos>", "<eos>")
    pad_id, bos_id, eos_id, mask_id = 0, 1, 2, None
    letters = "abcde"

    @property
    def vocab_size(self) -> int:
        return len(self.specials) + len(self.letters)

    def normalize(self, text: str) -> str:
        return text

    def encode(self, text: str) -> list[int]:
        return [len(self.specials) + self.letters.index(c) for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        n = len(self.specials)
        return "".join(self.letters[i - n] for i in ids if i >= n)

    def id_to_token(self, token_id: int) -> str:
        n = len(self.specials)
        return self.specials[token_id] if token_id < n else self.letters[token_id - n]

    def tokens(self, text: str) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text)]


def tiny_bundle(init_seed: int = 0, max_seq_len: int = 16, sharpen: float = 3.0) -> Bundle:
    cfg = ModelConfig(name="tiny", vocab_size=8, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                      max_seq_len=max_seq_len, init_seed=init_seed, tie_embeddings=False)
    model = Transformer(cfg).eval()
    with torch.no_grad():
        model.unembed.weight.mul_(sharpen)  # a fresh model of our own: peakier distributions
    return Bundle(cfg.name, model, LetterTokenizer(), cfg)
