"""The letters-only tokenizer of reverse-encdec: one token per symbol of a ``TaskVocab``.

It saves itself as JSON marked ``{"kind": "task", ...}``, which ``load_tokenizer`` recognises.

>>> tok = TaskTokenizer()
>>> tok.encode("a b c"), tok.encode("abc")
([4, 5, 6], [4, 5, 6])
>>> tok.decode([1, 6, 5, 4, 2])
'<bos>cba<eos>'
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from tfviz.data.tasks import SPECIALS, TaskVocab


class TaskTokenizer:
    """One token per symbol of a ``TaskVocab``: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<sep>`` 3,
    then the letters a-p.

    ``encode`` is forgiving, because learners type the sequence by hand:

    - spaces and commas are ignored, so "a b c", "a,b,c" and "abc" are the same;
    - capitals count as small letters ("ABC" == "abc");
    - any other character (a "z", a digit, "!") is skipped: the vocabulary has no ``<unk>``,
      and a silent gap is easier to read than a made-up symbol. ``unknown(text)`` lists them.
    - with ``allow_special=True`` the strings "<bos>", "<eos>", "<sep>", "<pad>" become their ids.

    >>> TaskTokenizer().tokens("D, c! B")
    ['d', 'c', 'b']
    """

    kind = "task"
    specials = SPECIALS  # <pad> <bos> <eos> <sep>: ids 0-3

    def __init__(self, vocab: TaskVocab | None = None):
        self.vocab = vocab or TaskVocab()
        self.special_ids = {t: i for i, t in enumerate(SPECIALS)}
        self.pad_id, self.bos_id, self.eos_id, self.sep_id = 0, 1, 2, 3
        self.unk_id = self.mask_id = self.cls_id = None  # this vocabulary has none of them
        self._index = {t: i for i, t in enumerate(self.vocab.tokens)}
        self._special_re = re.compile("|".join(re.escape(t) for t in SPECIALS) + r"|.", re.S)

    @property
    def vocab_size(self) -> int:
        return self.vocab.size

    def _pieces(self, text: str, allow_special: bool) -> list[str]:
        if allow_special:
            return [m.group() if m.group() in self.special_ids else m.group().lower()
                    for m in self._special_re.finditer(text)]
        return list(text.lower())

    def normalize(self, text: str) -> str:
        """Capitals count as small letters: "ABC" -> "abc"."""
        return text.lower()

    def encode(self, text: str, allow_special: bool = False) -> list[int]:
        """Text -> ids of the known symbols, in order: "a b?c" -> [4, 5, 6]."""
        ids = []
        for piece in self._pieces(text, allow_special):
            i = self._index.get(piece)
            if i is not None and (allow_special or piece not in self.special_ids):
                ids.append(i)
        return ids

    def unknown(self, text: str) -> list[str]:
        """Characters ``encode`` skips (spaces and commas are not counted): "ab9z" -> ["9", "z"]."""
        return [c for c in text.lower() if c not in self._index and c not in " ,\t\n"]

    def skipped(self, text: str) -> list[str]:
        """:meth:`unknown`, each character once, in sorted order: "z9z!" -> ["!", "9", "z"]."""
        return sorted(set(self.unknown(text)))

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """Ids -> symbols joined without spaces: [4, 5] -> "ab"."""
        return "".join(self.vocab.decode([int(i) for i in ids], skip_special=skip_special))

    def id_to_token(self, token_id: int) -> str:
        if not 0 <= int(token_id) < self.vocab_size:
            raise IndexError(f"id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return self.vocab.tokens[int(token_id)]

    def tokens(self, text: str, allow_special: bool = False) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text, allow_special)]

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "specials": list(SPECIALS),
                           "alphabet": list(self.vocab.alphabet)}, indent=1) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_json(cls, text: str) -> TaskTokenizer:
        data = json.loads(text)
        if data.get("kind") != cls.kind or tuple(data.get("specials", ())) != SPECIALS:
            raise ValueError("not a task tokenizer JSON (kind 'task' with specials <pad> <bos> <eos> <sep>)")
        return cls(TaskVocab(tuple(data["alphabet"])))

    @classmethod
    def from_file(cls, path: str | Path) -> TaskTokenizer:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))
