"""Tokenizers: a teaching BPE that records every merge, and the byte-level BPE we serve.

- ``teaching_bpe``: ``train_bpe`` -> ``BPEHistory`` (the classic algorithm, step by step)
- ``teaching_encode``: ``TeachingTokenizer.encode`` with the merges applied to each word
- ``corpus_input``: ``parse_corpus`` turns learner text into a corpus or a friendly message
- ``served``: ``ServedTokenizer`` / ``train_served_tokenizer`` (HF ``tokenizers``, byte level)
- ``hf_reference``: HF set up like the classic algorithm, for parity checks
- ``readable``: show byte-level tokens as readable text ("Ġthe" -> "␣the")
"""

from tfviz.tokenizer.corpus_input import Corpus, parse_corpus
from tfviz.tokenizer.teaching_bpe import BPEHistory, MergeStep, train_bpe
from tfviz.tokenizer.teaching_encode import Encoding, TeachingTokenizer

__all__ = ["BPEHistory", "Corpus", "Encoding", "MergeStep", "TeachingTokenizer", "parse_corpus", "train_bpe"]
