"""The fallback tokenizer of a preset without trained files: one token per UTF-8 byte.

>>> t = ByteTokenizer()
>>> t.decode(t.encode("héllo 👋")) == "héllo 👋"
True
>>> t.tokens("a é")                         # é is two bytes in UTF-8
['a', '␣', '<0xC3>', '<0xA9>']
"""
from __future__ import annotations

from collections.abc import Iterable


class ByteTokenizer:
    """The special tokens take ids 0-6 (as in ``ServedTokenizer``); byte b is id 7 + b."""

    specials = ("<pad>", "<bos>", "<eos>", "<unk>", "[MASK]", "[CLS]", "[SEP]")
    pad_id, bos_id, eos_id, unk_id, mask_id, cls_id, sep_id = range(7)

    @property
    def vocab_size(self) -> int:
        return len(self.specials) + 256

    def normalize(self, text: str) -> str:
        """Cased: the text is read exactly as typed."""
        return text

    def encode(self, text: str) -> list[int]:
        return [len(self.specials) + b for b in text.encode("utf-8")]

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text; special tokens are left out."""
        n = len(self.specials)
        return bytes(i - n for i in ids if i >= n).decode("utf-8", errors="replace")

    def id_to_token(self, token_id: int) -> str:
        n = len(self.specials)
        if token_id < n:
            return self.specials[token_id]
        byte = token_id - n
        if byte == 32:
            return "␣"
        return chr(byte) if byte < 128 and chr(byte).isprintable() else f"<0x{byte:02X}>"

    def tokens(self, text: str) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text)]
