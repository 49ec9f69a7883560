"""Every quiz question, in lesson order: one file per curriculum section.

>>> len(QUESTIONS) >= 36
True
"""

from __future__ import annotations

from collections import Counter

from ..spec import Question
from .architectures import ARCHITECTURES
from .attention import ATTENTION
from .heads_masks import HEADS_AND_MASKS
from .looking_inside import LOOKING_INSIDE
from .block import BLOCK
from .efficiency import EFFICIENCY
from .foundations import FOUNDATIONS
from .practice import PRACTICE
from .pretraining import PRETRAINING

QUESTIONS: tuple[Question, ...] = (
    *FOUNDATIONS, *ATTENTION, *HEADS_AND_MASKS, *BLOCK, *ARCHITECTURES, *PRETRAINING, *EFFICIENCY,
    *LOOKING_INSIDE, *PRACTICE,
)

_dupes = [qid for qid, n in Counter(q.id for q in QUESTIONS).items() if n > 1]
if _dupes:  # ids are how results are stored; two questions must never share one
    raise ValueError(f"duplicate question ids: {_dupes}")
