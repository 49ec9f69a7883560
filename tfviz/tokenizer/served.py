"""The tokenizer our models use: byte-level BPE from HF ``tokenizers``, in a small wrapper.

Byte-level means the text is first turned into UTF-8 bytes, and BPE merges bytes.
Every possible byte is in the starting vocabulary, so no text is ever "unknown":
a character the merges never covered (an emoji, a rare accent, NUL) simply becomes
one token per UTF-8 byte, and nothing is lost. ``<unk>`` exists only so the id
layout is familiar; encoding never produces it.

    >>> tok = train_served_tokenizer(["the cat sat"] * 20, vocab_size=300)
    >>> tok.tokens("the cat")
    ['␣the', '␣cat']
    >>> tok.decode(tok.encode("the cat 😀")) == "the cat 😀"
    True

The prefix space. The pre-tokenizer is saved as ``ByteLevel(add_prefix_space=True)``:
a space is put in front of the text so that "the" at the start is tokenized like
" the" in the middle of a sentence. ``encode`` always adds exactly one space at the
start (also when the text already begins with one) and ``decode`` removes one, so
``decode(encode(x)) == x`` for every string. For text that does not start with a
space the ids equal what the raw HF tokenizer loaded from our JSON gives.

Uncased, as BERT-uncased is. The tokenizers we serve declare a normaliser, NFKC then
lowercase, saved in tokenizer.json like the rest. ``encode`` applies it first, so "The"
and "the" are the same token and a capital letter never turns a word into byte fragments.
Round trips are then exact up to normalisation: ``decode(encode(x)) == normalize(x)``.

    >>> tok = train_served_tokenizer(["the cat sat"] * 20, vocab_size=300)
    >>> tok.normalize("The CAT ﬁt ①")
    'the cat fit 1'
    >>> tok.tokens("The Cat")
    ['␣the', '␣cat']

``train_served_tokenizer(..., uncased=False)`` gives a cased tokenizer whose round trips are
exact for every string.

Special tokens ``<pad> <bos> <eos> <unk> [MASK] [CLS] [SEP]`` have ids 0-6. ``encode``
treats text such as "[MASK]" as ordinary characters (so a learner's text always
round-trips); pass ``allow_special=True`` to turn those strings into their ids (they are
found before normalising, so "[MASK]" is not lowercased away).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from tfviz.tokenizer.readable import readable_token

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>", "[MASK]", "[CLS]", "[SEP]")
N_BYTES = 256
MIN_VOCAB_SIZE = len(SPECIAL_TOKENS) + N_BYTES  # 263: specials plus one token per byte


def uncased_normalizer() -> normalizers.Normalizer:
    """NFKC (compatibility forms: "ﬁ" -> "fi", full-width "Ａ" -> "A"), then lowercase."""
    return normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])


class ServedTokenizer:
    """Wrap a trained byte-level BPE ``tokenizers.Tokenizer`` with teaching-friendly methods.

    Implements ``tfviz.tokenizer.base.Tokenizer``.
    """

    specials = SPECIAL_TOKENS  # ids 0-6, checked when the JSON is loaded

    def __init__(self, hf: Tokenizer):
        for i, tok in enumerate(SPECIAL_TOKENS):
            if hf.token_to_id(tok) != i:
                raise ValueError(f"special token {tok!r} must have id {i}")
        self.hf = hf
        # Our own pre-tokenizer without the automatic prefix space: we add it once,
        # at the very start, instead of before every piece between special tokens.
        self._pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        self._special_re = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS))
        self.special_ids: dict[str, int] = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        self.mask_id, self.cls_id, self.sep_id = 4, 5, 6

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    @property
    def uncased(self) -> bool:
        return self.hf.normalizer is not None

    def normalize(self, text: str) -> str:
        """What the model reads of ``text``: "The Cat" -> "the cat" (identity when cased)."""
        return self.hf.normalizer.normalize_str(text) if self.hf.normalizer is not None else text

    def _encode_plain(self, text: str) -> list[int]:
        text = self.normalize(text)
        return [t.id for piece, _ in self._pre.pre_tokenize_str(text) for t in self.hf.model.tokenize(piece)]

    def encode(self, text: str, allow_special: bool = False) -> list[int]:
        """Text -> ids, normalised, with one prefix space added. "" -> [].

        With ``allow_special`` a text that starts with a special token gets no prefix
        space: "[CLS] hi" -> [5, id of " hi"], and decoding gives "[CLS] hi" back.
        """
        if not text:
            return []
        if not allow_special:
            return self._encode_plain(" " + text)
        if not self._special_re.match(text):
            text = " " + text
        ids: list[int] = []
        pos = 0
        for m in self._special_re.finditer(text):
            ids += self._encode_plain(text[pos : m.start()]) + [self.special_ids[m.group()]]
            pos = m.end()
        return ids + self._encode_plain(text[pos:])

    def decode(self, ids: Iterable[int], strip_prefix_space: bool = True) -> str:
        """Ids -> text. Removes the one prefix space ``encode`` added; pass False when
        decoding a slice from the middle (e.g. generated tokens), whose leading space is real.
        Bytes that do not form valid UTF-8 (half an emoji) come out as "\\ufffd"."""
        text = self.hf.decode(list(ids), skip_special_tokens=False)
        return text[1:] if strip_prefix_space and text.startswith(" ") else text

    def id_to_token(self, token_id: int) -> str:
        """Readable string for one id: " the" is shown as "␣the" (see ``readable``)."""
        raw = self.hf.id_to_token(token_id)
        if raw is None:
            raise IndexError(f"id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return raw if raw in self.special_ids else readable_token(raw)

    def tokens(self, text: str, allow_special: bool = False) -> list[str]:
        """Readable token strings: "the cat" -> ["␣the", "␣cat"]."""
        return [self.id_to_token(i) for i in self.encode(text, allow_special)]

    def token_ids_and_strings(self, text: str, allow_special: bool = False) -> list[tuple[int, str]]:
        """[(id, readable string), ...] for a table of tokens."""
        return [(i, self.id_to_token(i)) for i in self.encode(text, allow_special)]

    def to_json(self) -> str:
        return self.hf.to_str()

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_json(cls, text: str) -> ServedTokenizer:
        return cls(Tokenizer.from_str(text))

    @classmethod
    def from_file(cls, path: str | Path) -> ServedTokenizer:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def merges(self) -> list[tuple[str, str]]:
        """The learned merges, in order, read from the saved JSON."""
        return merges_from_json(self.to_json())


def merges_from_json(text: str) -> list[tuple[str, str]]:
    """model.merges from a tokenizer JSON. Newer versions store [["a", "b"], ...], older
    ones ["a b", ...]; both give [("a", "b"), ...]."""
    merges = json.loads(text)["model"]["merges"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else (m[0], m[1]) for m in merges]


def train_served_tokenizer(texts: Iterable[str], vocab_size: int, min_frequency: int = 2,
                           uncased: bool = True) -> ServedTokenizer:
    """Train byte-level BPE on ``texts``. Same texts and settings -> byte-identical JSON.

    ``uncased`` declares the NFKC + lowercase normaliser; the trainer applies it to
    ``texts`` too, so the merges are learned on what the model will read.
    Determinism: the trainer breaks count ties by the smaller token id, and all ids
    come from fixed orders (specials, then the 256 byte characters, then merges).
    """
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be at least {MIN_VOCAB_SIZE} (7 specials + 256 bytes)")
    hf = Tokenizer(models.BPE())
    if uncased:
        hf.normalizer = uncased_normalizer()
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    hf.train_from_iterator(list(texts), trainer)
    return ServedTokenizer(hf)
