"""A downloaded model's own tokenizer (its ``tokenizer.json``), used exactly as it was saved.

Our served tokenizer adds a prefix space and lowercases (``served``); a checkpoint's tokenizer
must read text the way its model was trained to, so this wrapper adds nothing of its own:
``encode`` gives the ids the HF ``tokenizers`` library gives for the file. A GPT-2 reads text
without special tokens; a BERT (``add_special_tokens=True``) gets the [CLS] ... [SEP] the
tokenizer's post-processor adds (which :mod:`tfviz.hf.bert` sets as transformers does); a
Llama, Mistral or Qwen gets its own beginning-of-text token where its files say so
(:mod:`tfviz.hf.llama`).

    >>> from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    >>> hf = Tokenizer(models.BPE())
    >>> hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> hf.decoder = decoders.ByteLevel()
    >>> hf.train_from_iterator(["the cat sat"] * 20, trainers.BpeTrainer(
    ...     vocab_size=280, special_tokens=["<|endoftext|>"], show_progress=False,
    ...     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    >>> tok = CheckpointTokenizer(hf)
    >>> tok.tokens("the cat")                 # no prefix space: "the" at the start has none
    ['the', '␣cat']
    >>> tok.specials, tok.eos_id, tok.mask_id
    (('<|endoftext|>',), 0, None)

Unlike our own tokenizers, a checkpoint's special tokens need not come first (GPT-2's
``<|endoftext|>`` is id 50256). ``eos_id`` is ``eos_token``'s id (else the last special token),
``eos_ids`` every id that ends a generated text (eos_id first), and ``bos_id`` and ``pad_id``
the same one as eos_id unless ``bos_token``/``pad_token`` name others: GPT-2 uses its one token
for all three; BERT has [CLS], [SEP] and [PAD].
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from tokenizers import Tokenizer

from tfviz.tokenizer.readable import readable_piece, readable_token

# How a checkpoint's token strings are shown: GPT-2's byte-level ("Ġthe" as "␣the"),
# SentencePiece's ("▁the" as "␣the", a byte-fallback "<0x0A>" as "↵"), or as stored (WordPiece).
Pieces = Literal["byte_level", "metaspace", "stored"]


class CheckpointTokenizer:
    """Implements ``tfviz.tokenizer.base.Tokenizer`` over a checkpoint's ``tokenizer.json``."""

    def __init__(self, hf: Tokenizer, eos_token: str | None = None, *, bos_token: str | None = None,
                 pad_token: str | None = None, add_special_tokens: bool = False,
                 pieces: Pieces = "byte_level", n_ids: int | None = None,
                 end_tokens: Iterable[str] = ()) -> None:
        """``add_special_tokens``: let the file's post-processor add its tokens (BERT's [CLS]
        and [SEP], a Llama's <s>); ``pieces``: how token strings are shown (see ``Pieces``).
        ``n_ids``: the model's embedding rows, when it has more than the tokenizer has tokens
        (a vocabulary padded to a round size): ids past the tokenizer's are named "#id", since
        a model may still give them a logit. ``end_tokens``: more tokens that end a generated
        text besides ``eos_token`` (a Llama 3 Instruct's generation_config.json names
        <|end_of_text|>, <|eom_id|> and <|eot_id|>); ``eos_ids`` holds them all, eos first. A
        named token missing from the file is passed over (eos then falls back to the last
        special token, bos and pad to eos)."""
        self.hf = hf
        self.n_ids = max(n_ids or 0, hf.get_vocab_size())
        self.add_special_tokens = add_special_tokens
        self.pieces = pieces
        added = sorted((i, t.content) for i, t in hf.get_added_tokens_decoder().items() if t.special)
        self.specials: tuple[str, ...] = tuple(content for _, content in added)
        self.special_ids = {content: i for i, content in added}
        eos = hf.token_to_id(eos_token) if eos_token else None
        if eos is None:  # GPT-2 names <|endoftext|> in its config; else the last special token
            eos = added[-1][0] if added else 0
        self.eos_id = eos
        ends = (hf.token_to_id(t) for t in end_tokens)
        self.eos_ids: tuple[int, ...] = tuple(dict.fromkeys([eos, *(i for i in ends if i is not None)]))
        bos = hf.token_to_id(bos_token) if bos_token else None
        pad = hf.token_to_id(pad_token) if pad_token else None
        self.bos_id = eos if bos is None else bos
        self.pad_id = eos if pad is None else pad
        mask = [i for i, c in added if c in ("[MASK]", "<mask>")]
        self.mask_id: int | None = mask[0] if mask else None

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def normalize(self, text: str) -> str:
        """What the model reads of ``text``: its normaliser's output (identity for GPT-2)."""
        return self.hf.normalizer.normalize_str(text) if self.hf.normalizer is not None else text

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=self.add_special_tokens).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)

    def id_to_token(self, token_id: int) -> str:
        """Readable string for one id: GPT-2's "Ġthe" and a Llama 2's "▁the" are shown as
        "␣the", a byte-fallback "<0x0A>" as "↵"; a WordPiece token ("##ing") as it is stored."""
        raw = self.hf.id_to_token(token_id)
        if raw is None and 0 <= token_id < self.n_ids:
            return f"#{token_id}"  # an embedding row no token of the tokenizer uses
        if raw is None:
            raise IndexError(f"id {token_id} is outside the vocabulary (size {self.vocab_size})")
        if raw in self.special_ids or self.pieces == "stored":
            return raw
        return readable_token(raw) if self.pieces == "byte_level" else readable_piece(raw)

    def tokens(self, text: str) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text)]
