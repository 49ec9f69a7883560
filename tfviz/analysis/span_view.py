"""T5's span corruption as a learner reads it (lesson 15): the encoder's input and the
decoder's target glued back into text, and how many tokens and runs were hidden.

Tokens are joined as typed (the readable space marker "␣" becomes a space); each sentinel
(``pretraining.sentinel``: <X>, <Y>, …) stands apart with a space before it.

>>> from tfviz.analysis.pretraining import corrupt
>>> view = corruption_view(corrupt(["the", "␣cat", "␣sat", "␣down"], [0, 1, 1, 0]))
>>> view.encoder, view.decoder, view.hidden, view.spans
('the <X> down', '<X> cat sat <Y>', 2, 1)
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from tfviz.analysis.pretraining import SpanCorruption, sentinel


class CorruptionView(NamedTuple):
    encoder: str  # what the encoder reads, as text
    decoder: str  # what the decoder writes, as text
    hidden: int  # tokens hidden
    spans: int  # runs of hidden tokens, one sentinel each


def joined(tokens: Iterable[str], sentinels: set[str]) -> str:
    """The readable pieces glued back into text, sentinels spaced."""
    return "".join(f" {t}" if t in sentinels else t.replace("␣", " ") for t in tokens).strip()


def span_count(noise: Sequence[bool]) -> int:
    """How many runs of hidden tokens ``noise`` has."""
    return sum(1 for i, x in enumerate(noise) if x and (i == 0 or not noise[i - 1]))


def corruption_view(result: SpanCorruption) -> CorruptionView:
    """``result`` (``pretraining.span_corruption`` or ``corrupt``) as text and counts."""
    sentinels = {sentinel(i) for i in range(len(result.noise) + 1)}
    return CorruptionView(joined(result.inputs, sentinels), joined(result.targets, sentinels),
                          sum(result.noise), span_count(result.noise))
