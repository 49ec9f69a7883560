"""An encoder-decoder answers a source: the encoder reads it once, the decoder writes one token
at a time (greedy), and every step reuses the cross-attention keys and values of the source.

    memory = Encoder(source)                         once: (n, d), the top encoder layer's output
    K_l, V_l = memory W^K_l, memory W^V_l            once per decoder layer l: (n, H, d_head)
    repeat, reading <bos> y_1 ... y_{t-1}:
        self-attention over the decoder's own tokens (causal, its own KV cache)
        cross-attention: the new query row against K_l, V_l   (1 query · n keys)
        y_t = the most probable next token
    until <eos>, or the context (max_seq_len) is full

``translate`` records what each step computed (the new query's self-attention row over the
tokens so far and its cross-attention row over the source), so a page can draw the maps grow
row by row from what the model really did. With ``reuse_cross_kv=False`` the decoder projects
the memory to K and V again at every step instead: the same ids, for the comparison in
tests/unit/decoding/test_seq2seq.py, and ``kv_projections`` counts the projections either way.

>>> import tfviz
>>> t = translate(tfviz.load("reverse-encdec"), "hello")
>>> t.output, t.stop_reason, t.kv_projections, len(t.steps)
('olleh', 'eos', 1, 6)
>>> check_source("Hi, Bob!").error
'Only the letters a to p can be read. Not allowed in your source: `!`. Type 1 to 12 letters from a to p; capitals count as small letters, and spaces and commas are skipped.'
"""
from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from tfviz.data.tasks import LETTERS
from tfviz.model.hooks import recording
from tfviz.reference import softmax
from tfviz.textinput import clean_text

# reverse-encdec learned sources of 2 to 12 letters (its manifest); it reverses single letters
# too, but from 13 letters on its answers go wrong ("abcdefghijklm" -> "lkjjihfeddbb"), so the
# page takes no more than it was trained on.
MAX_SOURCE = 12
ALLOWED = (f"Type 1 to {MAX_SOURCE} letters from {LETTERS[0]} to {LETTERS[-1]}; capitals count as "
           "small letters, and spaces and commas are skipped.")
SKIPPED = " ,"  # what the task tokenizer skips without complaint (after clean_text)
SHOWN_BAD = 8  # characters named in a message before "and N more"
N_CANDIDATES = 5  # candidates kept per step for a page
StopReason = Literal["eos", "context", "length"]


@dataclass(frozen=True)
class SourceCheck:
    """What a typed source becomes: the letters the model reads ("" when it cannot be read),
    an error saying what is allowed, or a notice about what was changed on the way."""

    letters: str
    error: str | None = None
    notice: str | None = None


def shown_char(c: str) -> str:
    """A character as a message names it: in a code span, so that Markdown leaves ``*``, ``_``
    or ``$`` alone, or by its code point when it cannot be seen (a right-to-left override
    would turn the rest of the message around, a combining accent would sit on the quote).

    >>> shown_char("z"), shown_char("`"), shown_char("\u202e"), shown_char("\u0301")
    ('`z`', '`` ` ``', 'U+202E', 'U+0301')
    """
    if unicodedata.category(c)[0] in "CMZ":  # controls, formats, marks, separators
        return f"U+{ord(c):04X}"
    return "`` ` ``" if c == "`" else f"`{c}`"


def _named(chars: Sequence[str]) -> str:
    shown = ", ".join(shown_char(c) for c in chars[:SHOWN_BAD])
    more = len(chars) - SHOWN_BAD
    return shown + (f" and {more} more" if more > 0 else "")


def check_source(text: object, alphabet: Sequence[str] = LETTERS,
                 max_letters: int = MAX_SOURCE) -> SourceCheck:
    """Read a typed source the way reverse-encdec's tokenizer does, or say why it cannot.

    Anything the tokenizer would silently skip (a digit, an emoji, "<bos>") is refused with its
    characters named, and so is an empty or too long source. Never raises.

    >>> check_source(" A b,C ")
    SourceCheck(letters='abc', error=None, notice='Read as "abc": capitals as small letters, spaces and commas skipped.')
    >>> check_source("").error.split(".")[0]
    'The source is empty'
    >>> check_source("abcdefghijklmn").error.split(";")[0]
    'Your source has 14 letters'
    """
    cleaned, cut = clean_text(text)  # control characters out, white space collapsed, length capped
    known = set(alphabet)
    bad = list(dict.fromkeys(c for c in cleaned.lower() if c not in known and c not in SKIPPED))
    if bad:
        return SourceCheck("", f"Only the letters {alphabet[0]} to {alphabet[-1]} can be read. "
                               f"Not allowed in your source: {_named(bad)}. {ALLOWED}")
    letters = "".join(c for c in cleaned.lower() if c in known)
    if not letters:
        return SourceCheck("", f"The source is empty. {ALLOWED}")
    if len(letters) > max_letters:
        count = f"more than {len(letters):,}" if cut else str(len(letters))
        return SourceCheck("", f"Your source has {count} letters; the model was trained on "
                               f"at most {max_letters} and reverses longer ones wrongly. {ALLOWED}")
    notice = None if letters == cleaned else (f'Read as "{letters}": capitals as small letters, '
                                              "spaces and commas skipped.")
    return SourceCheck(letters, None, notice)


@dataclass(frozen=True)
class Seq2SeqStep:
    """One decoding step: the token the decoder read, what its new query attended to, and the
    token it chose. Rows are the new query's only: the maps grow by one row per step."""

    position: int  # decoder position of the token read (0 = <bos>)
    read: int  # the token id read at this position
    self_rows: np.ndarray  # (layers, heads, position + 1): causal self-attention weights
    cross_rows: np.ndarray  # (layers, heads, n): cross-attention weights over the source
    logits: np.ndarray  # (vocab,): the LM head's scores for the next token
    candidates: tuple[int, ...]  # the N_CANDIDATES most probable next tokens
    probs: tuple[float, ...]  # their probabilities (softmax of the logits)
    chosen: int  # greedy: the most probable (ties: the lower id)


@dataclass(frozen=True)
class Translation:
    """What :func:`translate` gives back (read-only numpy)."""

    source_ids: tuple[int, ...]
    source_tokens: tuple[str, ...]
    enc_patterns: np.ndarray  # (encoder layers, heads, n, n): bidirectional self-attention
    memory: np.ndarray  # (n, d): the top encoder layer's output
    steps: tuple[Seq2SeqStep, ...]
    new_ids: tuple[int, ...]  # the chosen tokens, <eos> included when chosen
    output: str  # the answer as text, without <eos>
    stop_reason: StopReason
    kv_projections: int  # times each decoder layer projected the memory to K and V

    @property
    def letter_steps(self) -> int:
        """The steps that write a source letter, mirrored: one per step while both the steps and
        the source last (the step after them writes <eos>)."""
        return min(len(self.source_ids), len(self.steps))

    @property
    def decoder_ids(self) -> tuple[int, ...]:
        """What the decoder read, one token per step: <bos> and every chosen token but the last."""
        return tuple(s.read for s in self.steps)

    def self_attention(self) -> np.ndarray:
        """(layers, heads, T, T) of the T steps: row t is step t's self-attention, nan above the
        diagonal (masked: a query never sees a later token)."""
        T = len(self.steps)
        L, H = self.steps[0].self_rows.shape[:2]
        out = np.full((L, H, T, T), np.nan)
        for t, s in enumerate(self.steps):
            out[:, :, t, :t + 1] = s.self_rows
        return out

    def cross_attention(self) -> np.ndarray:
        """(layers, heads, T, n): row t is step t's cross-attention over the source."""
        return np.stack([s.cross_rows for s in self.steps], axis=2)

    def largest_logit_gap(self, other: Translation) -> float:
        """The largest |difference| between this run's logits and ``other``'s, over the steps
        both took: 0.0 when two ways of computing the same answer agree exactly."""
        return max(float(np.abs(a.logits - b.logits).max()) for a, b in zip(self.steps, other.steps))


def _source_ids(bundle, source: str | Sequence[int]) -> list[int]:
    if not isinstance(source, str):
        return [int(i) for i in source]
    check = check_source(source)
    if check.error:
        raise ValueError(check.error)
    return bundle.encode(check.letters)


def translate(bundle, source: str | Sequence[int], *, reuse_cross_kv: bool = True,
              max_new_tokens: int | None = None) -> Translation:
    """Greedy decoding of an encoder-decoder bundle (reverse-encdec) on ``source`` (text, checked
    with :func:`check_source`, or ids), recording each step. The shared model is only read.

    The first step runs the encoder (its only run) and projects the memory to every decoder
    layer's cross-attention K and V; they stay in the model's KV cache (``KVCache.cross``).
    ``reuse_cross_kv=False`` drops them from the cache before every later step, so each step
    projects the memory again. Without ``max_new_tokens`` only <eos> or the context
    (max_seq_len) ends the answer.
    """
    if bundle.config.arch != "encoder-decoder":
        raise ValueError(f"translate() needs an encoder-decoder model (reverse-encdec); "
                         f"{bundle.name} is a {bundle.config.arch} model")
    src = _source_ids(bundle, source)
    if not src:
        raise ValueError(f"the source is empty. {ALLOWED}")
    model, cfg, tok = bundle.model, bundle.config, bundle.tokenizer
    if len(src) > cfg.max_seq_len:
        raise ValueError(f"the source has {len(src)} tokens; the model reads at most {cfg.max_seq_len}")
    top_enc = f"enc_blocks.{cfg.enc_layers - 1}.hook_resid_post"
    projections = 0

    def wanted(name: str) -> bool:  # what each step records; also counts K, V projections
        nonlocal projections
        if name == "blocks.0.cross_attn.hook_k":
            projections += 1
        return name.endswith("attn.hook_pattern") or name == top_enc

    reading, steps, new_ids, cache, reason = [tok.bos_id], [], [], None, "length"
    with torch.no_grad():
        while max_new_tokens is None or len(new_ids) < max_new_tokens:
            if len(reading) > cfg.max_seq_len:  # the decoder would read past its last position
                reason = "context"
                break
            with recording(wanted) as store:
                if cache is None:  # the first step: the encoder reads the source, once
                    logits, cache = model.step(torch.tensor([reading]), enc_ids=torch.tensor([src]))
                    enc_patterns = np.stack([store[f"enc_blocks.{i}.attn.hook_pattern"][0].numpy()
                                             for i in range(cfg.enc_layers)])  # (L_enc, H, n, n)
                    memory = store[top_enc][0].numpy()  # (n, d)
                else:
                    if not reuse_cross_kv:
                        cache = dataclasses.replace(cache, cross=None)  # project the memory again
                    logits, cache = model.step(torch.tensor([reading[-1:]]), cache)
            last = logits[0, -1].numpy().astype(float)  # (vocab,)
            probs = softmax(last)
            chosen = int(np.argmax(last))  # the first maximum: ties go to the lower id
            order = np.argsort(-probs, kind="stable")[:N_CANDIDATES]
            steps.append(Seq2SeqStep(
                position=len(reading) - 1, read=reading[-1],
                self_rows=np.stack([store[f"blocks.{i}.attn.hook_pattern"][0, :, -1].numpy()
                                    for i in range(cfg.n_layers)]),  # (L, H, position + 1)
                cross_rows=np.stack([store[f"blocks.{i}.cross_attn.hook_pattern"][0, :, -1].numpy()
                                     for i in range(cfg.n_layers)]),  # (L, H, n)
                logits=last, candidates=tuple(int(i) for i in order),
                probs=tuple(float(probs[i]) for i in order), chosen=chosen))
            new_ids.append(chosen)
            if chosen == tok.eos_id:
                reason = "eos"
                break
            reading.append(chosen)
    answer = [i for i in new_ids if i != tok.eos_id]
    return Translation(tuple(src), tuple(bundle.token_strings(src)), enc_patterns, memory,
                       tuple(steps), tuple(new_ids), tok.decode(answer), reason, projections)
