"""The table of contents: every page of the app, its section and its URL.

The pages come from ``tfviz.curriculum`` (plain data, shared with the quiz); this module adds
what needs the files on disk: which pages exist, and how text names a lesson.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfviz import curriculum

ROOT = Path(__file__).resolve().parents[2]
HOME = curriculum.HOME  # served at "/"
#: URLs kept for lessons still to be written (lesson number -> URL); see tfviz.curriculum.
PLANNED = curriculum.PLANNED


@dataclass(frozen=True)
class Lesson:
    """A page of the navigation, built from its entry in ``tfviz.curriculum``."""

    file: str  # under lessons/
    title: str  # as the navigation shows it: "5 · Self-attention step by step"
    url: str
    section: str
    icon: str = ""
    number: int | None = None  # None: not a numbered lesson (home, the teacher's page)


LESSONS = tuple(Lesson(e.file, e.nav_title, e.url, e.section, e.icon, e.number)
                for e in curriculum.CURRICULUM if e.file is not None)


def available() -> list[Lesson]:
    return [lesson for lesson in LESSONS if (ROOT / "lessons" / lesson.file).exists()]


def by_url(url: str) -> Lesson | None:
    return next((lesson for lesson in LESSONS if lesson.url == url), None)


def numbered() -> dict[int, Lesson]:
    """Lesson number -> page, for every page that exists and carries a number in its title.

    This is what "lesson 5" can point to: the navigation shows "5 · Self-attention step by
    step". Home and the teacher's page have no number; planned lessons are not here until
    their file exists.
    """
    return {lesson.number: lesson for lesson in available() if lesson.number is not None}


def mention(number: int, topic: str | None = None) -> str:
    """How text names a lesson: "lesson 5 (Self-attention step by step)" if that page exists,
    else "KV cache (no lesson page yet)", so nothing points at a page the learner cannot open.
    ``topic`` defaults to the curriculum's name for the lesson (its ``topic``).
    """
    if numbered().get(number) is None:
        return f"{curriculum.LESSONS[number].topic if topic is None else topic} (no lesson page yet)"
    return f"lesson {number} ({curriculum.LESSONS[number].title})"
