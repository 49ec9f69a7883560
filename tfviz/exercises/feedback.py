"""The verdict on one answer, for the worked exercises and the quiz alike.

``valid`` says whether the input could be read as an answer at all. When it is False
(empty, words, HTML, several numbers where one is wanted) ``correct`` is False too, the
``message`` says what the box wants, and a page lets the learner try again without counting it:

>>> Feedback(False, "“abc” is not a number.", valid=False).valid
False
>>> fb = Feedback(False, "Not quite.", diagnosis="Forgot the scale.", mistake="no_scale")
>>> fb.valid, fb.diagnosis
(True, 'Forgot the scale.')
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feedback:
    """``diagnosis`` is why a wrong answer is wrong, when that is known (a named slip, a
    distractor's explanation); ``mistake`` names the slip(s) for tests and analytics.
    ``expected`` is the right answer as text (quiz); ``expected_shape`` the shape of the
    numbers an exercise box wants."""

    correct: bool
    message: str
    valid: bool = True
    diagnosis: str | None = None
    mistake: str | None = None
    expected: str = ""
    expected_shape: tuple[int, ...] = ()
