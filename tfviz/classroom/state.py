"""Where the teacher is, as a live session keeps it: :class:`LiveState`, and the checks every
setting passes before the store takes it (a lesson page that exists, a preset model, a
cleaned sentence, indices clamped to 0..63). No streamlit here.

>>> validated({"lesson": "self-attention", "layer": 99, "text": "flying\\x00 arrows"})
{'lesson': 'self-attention', 'layer': 63, 'text': 'flying arrows'}
"""
from __future__ import annotations

from dataclasses import dataclass

from tfviz.classroom.guard import BadValue
from tfviz.config import MODERN_PRESET_NAMES, PRESET_NAMES
from tfviz.curriculum import CURRICULUM
from tfviz.textinput import clean_text

MAX_INDEX = 63  # step, layer and head are clamped to 0..63 (as the URL's layer and head)

#: lesson pages a class can be on (the curriculum's pages that exist).
LESSON_URLS = frozenset(e.url for e in CURRICULUM if e.url and e.file)


@dataclass(frozen=True)
class LiveState:
    """Where the teacher is. ``text`` and ``model`` are "" until the teacher sets them;
    ``version`` grows by one with every change, ``updated`` is the store's clock then (wall-clock seconds)."""

    code: str
    lesson: str = "home"
    step: int = 0
    text: str = ""
    model: str = ""
    layer: int = 0
    head: int = 0
    version: int = 0
    updated: float = 0.0
    checkin: tuple[str, ...] = ()  # the quiz questions of the teacher's check-in
    checkin_phase: str = ""  # "before" or "after" while a check-in is open, else ""
    question: tuple[str, ...] = ()  # (exercise, box) the teacher asks now, or ()
    deadline: float = 0.0  # when the question's countdown reaches zero (store clock); 0: none
    revealed: bool = False  # whether the class may see the question's results (hidden first)
    resets: tuple[tuple[str, str, int], ...] = ()  # (exercise, box, times its answers were reset)

    @classmethod
    def of(cls, data: dict) -> "LiveState":
        """From a store's record (lists come back as tuples; unknown keys are ignored; a record
        written before a field existed gets the field's default)."""
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        for name in ("checkin", "question"):
            if name in known:
                known[name] = tuple(known[name] or ())
        if "resets" in known:
            known["resets"] = tuple((e, b, int(n)) for e, b, n in known["resets"] or ())
        return cls(**known)

    def resets_of(self, exercise_id: str, box: str) -> int:
        """How many times the teacher reset this box's answers: a page that sent a student's
        answer to it under an older count may send a new one.

        >>> LiveState("K7QM4XPD", resets=(("layernorm", "std", 2),)).resets_of("layernorm", "std")
        2
        """
        return next((n for e, b, n in self.resets if (e, b) == (exercise_id, box)), 0)


FIELDS = ("lesson", "step", "text", "model", "layer", "head")  # what update() may set


def _clamped(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"The {name} has to be a whole number.")
    return min(max(value, 0), MAX_INDEX)


def validated(changes: dict) -> dict:
    """Checked and bounded settings; raises BadValue with a friendly reason."""
    out = {}
    for name, value in changes.items():
        if name not in FIELDS:
            raise BadValue(f"A live session does not keep “{str(name)[:40]}”.")
        if name == "lesson":
            if value not in LESSON_URLS:
                raise BadValue("That is not one of the app's lesson pages.")
            out[name] = value
        elif name == "model":
            if value not in (*PRESET_NAMES, *MODERN_PRESET_NAMES):
                raise BadValue("That is not one of the app's models.")
            out[name] = value
        elif name == "text":
            if not isinstance(value, str):
                raise BadValue("The sentence has to be text.")
            text, _ = clean_text(value)  # control characters out, cut to MAX_TEXT_CHARS
            if not text:
                raise BadValue("The sentence is empty.")
            out[name] = text
        else:
            out[name] = _clamped(name, value)
    return out
