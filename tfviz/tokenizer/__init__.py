"""Tokenizers: a teaching BPE that records every merge, and the byte-level BPE we serve.

- ``teaching_bpe``: ``train_bpe`` -> ``BPEHistory`` (the classic algorithm, step by step)
- ``naive_bpe``: ``train_bpe_naive``, the same training as the textbook loop lesson 2 shows
- ``teaching_encode``: ``TeachingTokenizer.encode`` with the merges applied to each word
- ``corpus_input``: ``parse_corpus`` turns learner text into a corpus or a friendly message
- ``served``: ``ServedTokenizer`` / ``train_served_tokenizer`` (HF ``tokenizers``, byte level)
- ``hf_reference``: HF set up like the classic algorithm, for parity checks
- ``readable``: show byte-level tokens as readable text ("Ġthe" -> "␣the")
- ``base``: the ``Tokenizer`` protocol every model tokenizer implements (encode, decode, ids of
  the special tokens, ...): ``served``'s, ``task``'s (letters, reverse-encdec) and ``byte``'s
  (one token per byte, for a preset without trained files)
- ``checkpoint``: a downloaded model's own ``tokenizer.json`` (GPT-2's), used exactly as saved
- ``load_tokenizer``: the tokenizer saved with a bundled model (``tokenizer.json``)
"""
import json
from pathlib import Path

from tfviz.tokenizer.base import Tokenizer
from tfviz.tokenizer.corpus_input import Corpus, parse_corpus
from tfviz.tokenizer.teaching_bpe import BPEHistory, MergeStep, train_bpe
from tfviz.tokenizer.teaching_encode import Encoding, TeachingTokenizer

__all__ = ["BPEHistory", "Corpus", "Encoding", "MergeStep", "TeachingTokenizer", "Tokenizer",
           "load_tokenizer", "parse_corpus", "train_bpe"]


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer in ``path`` (a ``tokenizer.json`` file, or a folder holding one).

    A JSON with ``"kind": "task"`` is a letters-only ``TaskTokenizer`` (reverse-encdec);
    anything else is a byte-level ``ServedTokenizer``. Both implement ``Tokenizer``.

    >>> load_tokenizer("assets/gpt-tiny").tokens("the cat")  # doctest: +SKIP
    ['␣the', '␣cat']
    """
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    text = path.read_text(encoding="utf-8")
    if json.loads(text).get("kind") == "task":
        from tfviz.tokenizer.task import TaskTokenizer  # letters for the algorithmic tasks

        return TaskTokenizer.from_json(text)
    from tfviz.tokenizer.served import ServedTokenizer  # imported here: HF tokenizers is heavy

    return ServedTokenizer.from_json(text)
