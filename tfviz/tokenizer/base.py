"""What every model tokenizer offers: the ``Tokenizer`` protocol (minbpe's ``base.Tokenizer``,
as a protocol rather than a base class, because the served one wraps HF ``tokenizers``).

Three tokenizers implement it: ``ServedTokenizer`` (byte-level BPE, the story models),
``TaskTokenizer`` (letters, reverse-encdec) and ``ByteTokenizer`` (one token per byte, for a
preset that has no trained files). Code that takes a bundle's tokenizer relies on this and on
nothing else: special ids are attributes, never guessed.

>>> from tfviz.tokenizer.byte import ByteTokenizer
>>> tok = ByteTokenizer()
>>> isinstance(tok, Tokenizer)
True
>>> ids = tok.encode("hi")                  # 7 specials first, then byte b at id 7 + b
>>> ids, tok.tokens("hi"), tok.decode(ids)
([111, 112], ['h', 'i'], 'hi')
>>> tok.specials[tok.bos_id], tok.id_to_token(tok.eos_id), tok.mask_id
('<bos>', '<eos>', 4)
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """Text <-> token ids, with the special tokens first.

    ``decode(encode(x)) == normalize(x)`` for ordinary text (cased tokenizers: ``== x``).
    """

    # Special token strings. Our own tokenizers give them ids 0..len(specials)-1; a checkpoint's
    # need not (tfviz.tokenizer.checkpoint: GPT-2's <|endoftext|> is 50256).
    specials: tuple[str, ...]
    pad_id: int
    bos_id: int
    eos_id: int
    mask_id: int | None  # None when the vocabulary has no [MASK]

    @property
    def vocab_size(self) -> int: ...

    def normalize(self, text: str) -> str:
        """What the model reads of ``text`` (uncased tokenizers lowercase it)."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Iterable[int]) -> str: ...

    def id_to_token(self, token_id: int) -> str:
        """A readable string for one id (a space shows as "␣")."""
        ...

    def tokens(self, text: str) -> list[str]:
        """``[id_to_token(i) for i in encode(text)]``."""
        ...


def end_ids(tok: Tokenizer) -> tuple[int, ...]:
    """Every id that ends a generated text, ``eos_id`` first: a checkpoint's tokenizer may have
    several (``CheckpointTokenizer.eos_ids``: Llama 3 Instruct stops at <|end_of_text|>,
    <|eom_id|> or <|eot_id|>), ours have one.

    >>> from tfviz.tokenizer.byte import ByteTokenizer
    >>> end_ids(ByteTokenizer())
    (2,)
    """
    return tuple(getattr(tok, "eos_ids", None) or (tok.eos_id,))

