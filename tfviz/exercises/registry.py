"""Every exercise by id, in the order lesson 20 lists them.

>>> list(EXERCISES)[:3]
['flying-arrows', 'how-are-you', 'positional-table']
>>> make_instance("thinking-machines").field("weights").answer_text
'0.881, 0.119'

A class code is just the seed: everyone typing the same code gets the same numbers, and
each exercise draws its own numbers from it.
"""
from __future__ import annotations

from types import MappingProxyType

from tfviz.exercises import (ex_beam, ex_bpe, ex_dla, ex_flying, ex_gqa_cache, ex_heads,
                             ex_induction, ex_layernorm, ex_mask, ex_moe, ex_params, ex_patching,
                             ex_positional, ex_rmsnorm, ex_rope, ex_swiglu, ex_thinking)
from tfviz.exercises.core import ExerciseSpec, Instance

# Each modern block's part (RoPE, RMSNorm, SwiGLU, a grouped-query cache) follows the exercise of
# the part it replaces or extends; looking inside (attribution, patching, induction) comes last.
_ORDER = (ex_flying, ex_heads, ex_positional, ex_rope, ex_thinking, ex_params, ex_beam,
          ex_layernorm, ex_rmsnorm, ex_swiglu, ex_moe, ex_bpe, ex_mask, ex_gqa_cache,
          ex_dla, ex_patching, ex_induction)

#: id -> spec; read-only, so nobody can swap an exercise out from under another learner.
EXERCISES: MappingProxyType[str, ExerciseSpec] = MappingProxyType(
    {m.SPEC.id: m.SPEC for m in _ORDER})


def make_instance(exercise_id: str, seed: int | None = None) -> Instance:
    """The instance for a class code (``None``: the source's own numbers)."""
    try:
        spec = EXERCISES[exercise_id]
    except KeyError:
        raise KeyError(f"unknown exercise {exercise_id!r}; choose one of {', '.join(EXERCISES)}"
                       ) from None
    return spec.make(seed)


def parse_class_code(text: object) -> int | None:
    """A class code typed by a person: digits only, up to 12 of them; anything else -> None.

    >>> parse_class_code(" 4711 "), parse_class_code("abc"), parse_class_code("")
    (4711, None, None)
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None
