"""The tokenizer each bundled model is trained with.

- gpt-tiny, moe-tiny, bert-tiny share one byte-level BPE (``story_tokenizer``), trained on the
  story corpus with a fixed seed, so the same text gives the same tokens in all three.
- reverse-encdec reads single letters: ``tfviz.tokenizer.task.TaskTokenizer``.

Both implement ``tfviz.tokenizer.base.Tokenizer``.
"""
from __future__ import annotations

from tfviz.data import story_corpus
from tfviz.tokenizer.served import ServedTokenizer, train_served_tokenizer

# The shared BPE: trained on the first 20,000 sentences of story_corpus(seed=0).
STORY_TOKENIZER = {"n_sentences": 20_000, "seed": 0, "vocab_size": 600, "min_frequency": 2}


def story_tokenizer() -> ServedTokenizer:
    """Byte-level BPE with 600 tokens; same settings -> byte-identical JSON."""
    s = STORY_TOKENIZER
    texts = story_corpus(s["n_sentences"], seed=s["seed"])
    return train_served_tokenizer(texts, vocab_size=s["vocab_size"], min_frequency=s["min_frequency"])
