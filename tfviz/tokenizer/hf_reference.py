"""HF ``tokenizers`` set up to learn classic (not byte-level) BPE, as an independent check.

Used by the parity test (tests/unit/tokenizer/test_parity.py): a library gets the same merges.

One convention differs. HF attaches the end-of-word suffix to a word's last
character ("low" starts as l, o, "w</w>"), while the textbook algorithm keeps
``</w>`` as a separate symbol (l, o, w, </w>) that must be merged in like any other.
The two do not give the same merges: the textbook version spends merges on
(w, </w>) and counts pairs such as (e, r) across word ends differently from
(e, "r</w>"). So the honest comparison is with ``train_bpe(..., end_of_word="attached")``,
which uses HF's convention; the parity test does exactly that.

    >>> hf_classic_merges({"low": 5, "lower": 2}, num_merges=2)
    [('l', 'o'), ('lo', 'w</w>')]
"""

from __future__ import annotations

from collections.abc import Mapping

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from tfviz.tokenizer.served import merges_from_json
from tfviz.tokenizer.teaching_bpe import EOW, initial_vocab_of


def train_hf_classic(word_freqs: Mapping[str, int], vocab_size: int) -> Tokenizer:
    """Train HF BPE on whitespace-split words with the ``</w>`` suffix; nothing else added."""
    hf = Tokenizer(models.BPE(end_of_word_suffix=EOW))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # split on whitespace only, like str.split
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,  # the classic algorithm merges pairs seen once, too
        end_of_word_suffix=EOW,
        show_progress=False,
    )
    # One line per word, repeated by frequency, so HF's word counts equal ours.
    lines = [w for w, f in word_freqs.items() for _ in range(f)]
    hf.train_from_iterator(lines, trainer)
    return hf


def hf_classic_merges(word_freqs: Mapping[str, int], num_merges: int) -> list[tuple[str, str]]:
    """The first ``num_merges`` merges HF learns, read back from its saved JSON.

    HF stops at ``vocab_size`` = its starting alphabet (characters plus every
    "c</w>" end symbol) + ``num_merges``, which is the same count as ours in attached mode.
    """
    start = len(initial_vocab_of(word_freqs, "attached"))
    hf = train_hf_classic(word_freqs, vocab_size=start + num_merges)
    return merges_from_json(hf.to_str())[:num_merges]
