"""T5's span corruption as a learner reads it (lesson 15): the encoder's input and the
decoder's target glued back into text, and how many tokens and runs were hidden.

Tokens are joined as typed (the readable space marker "␣" becomes a space); each sentinel
(``pretraining.sentinel``: <X>, <Y>, …) stands apart with a space before it. WordPiece tokens
(a BERT checkpoint's) are joined as WordPiece writes them: a space before each, none before a
piece that continues a word ("##imal").

A BERT checkpoint reads every text as [CLS] … [SEP]. Those are not words of the text, so
:func:`text_corruption` hides runs of the tokens between them only, and shows them where they
stand, by the checkpoint's own names:

>>> view = text_corruption(["[CLS]", "the", "an", "##imal", "ran", "home", "[SEP]"],
...                        [True, False, False, False, False, False, True], seed=0, wordpiece=True)
>>> view.encoder, view.decoder, view.hidden, view.spans, view.among, view.ends
('[CLS] the animal ran <X> [SEP]', '<X> home <Y>', 1, 1, 5, ('[CLS]', '[SEP]'))

>>> from tfviz.analysis.pretraining import corrupt
>>> view = corruption_view(corrupt(["the", "␣cat", "␣sat", "␣down"], [0, 1, 1, 0]))
>>> view.encoder, view.decoder, view.hidden, view.spans
('the <X> down', '<X> cat sat <Y>', 2, 1)
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from tfviz.analysis.pretraining import SpanCorruption, sentinel, span_corruption


class CorruptionView(NamedTuple):
    encoder: str  # what the encoder reads, as text
    decoder: str  # what the decoder writes, as text
    hidden: int  # tokens hidden
    spans: int  # runs of hidden tokens, one sentinel each
    among: int = 0  # the tokens that could be hidden (all but the special tokens at the ends)
    ends: tuple[str, ...] = ()  # those special tokens ([CLS], [SEP]), kept in their places


def joined(tokens: Iterable[str], sentinels: set[str], wordpiece: bool = False) -> str:
    """The readable pieces glued back into text, sentinels spaced.

    A WordPiece piece that continues a word is glued to it, except right after a sentinel,
    where the word's start is hidden: there it keeps its "##", as WordPiece's decoder leaves a
    run's first piece.

    >>> joined(["[CLS]", "it", "ran", "##g", "<X>", "##ld", "[SEP]"], {"<X>"}, wordpiece=True)
    '[CLS] it rang <X> ##ld [SEP]'
    """
    def piece(t: str, after: str | None) -> str:
        if t in sentinels:
            return f" {t}"
        if wordpiece:
            glued = t.startswith("##") and after is not None and after not in sentinels
            return t[2:] if glued else f" {t}"
        return t.replace("␣", " ")

    tokens = list(tokens)
    return "".join(piece(t, tokens[i - 1] if i else None) for i, t in enumerate(tokens)).strip()


def span_count(noise: Sequence[bool]) -> int:
    """How many runs of hidden tokens ``noise`` has."""
    return sum(1 for i, x in enumerate(noise) if x and (i == 0 or not noise[i - 1]))


def corruption_view(result: SpanCorruption, wordpiece: bool = False) -> CorruptionView:
    """``result`` (``pretraining.span_corruption`` or ``corrupt``) as text and counts."""
    sentinels = {sentinel(i) for i in range(len(result.noise) + 1)}
    return CorruptionView(joined(result.inputs, sentinels, wordpiece),
                          joined(result.targets, sentinels, wordpiece),
                          sum(result.noise), span_count(result.noise), len(result.noise))


def inner(special: Sequence[bool]) -> tuple[int, int]:
    """(start, stop) of the tokens between the special tokens a text starts and ends with.

    >>> inner([True, False, False, True]), inner([False, False]), inner([True, True])
    ((1, 3), (0, 2), (2, 2))
    """
    start = next((i for i, s in enumerate(special) if not s), len(special))
    stop = len(special) - next((i for i, s in enumerate(reversed(special)) if not s), len(special))
    return start, max(start, stop)


def text_corruption(tokens: Sequence[str], special: Sequence[bool], seed: int, *,
                    wordpiece: bool = False) -> CorruptionView:
    """T5's span corruption (``pretraining.span_corruption``, same seed, same spans) of the
    tokens between the special ones ``tokens`` starts and ends with, which the encoder reads
    unchanged in their places; ``special`` flags each token. Needs two such tokens or more."""
    start, stop = inner(special)
    result = span_corruption(tokens[start:stop], seed)
    around = SpanCorruption(result.noise, (*tokens[:start], *result.inputs, *tokens[stop:]),
                            result.targets)
    return corruption_view(around, wordpiece)._replace(ends=(*tokens[:start], *tokens[stop:]))
