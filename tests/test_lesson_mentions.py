"""Every "lesson N" the app can show is a page in the navigation.

Written while lessons 13-19 were planned and text already named them; a lesson added to
the curriculum before its page would point nowhere again. The scan
covers every string the app can show and the comments around them (app.py, server.py,
lessons/, tfviz/), and the sentences built at run time from lesson numbers (exercise captions,
quiz captions, the quiz summary). A lesson's number is the one its navigation title opens with
("5 · Self-attention step by step"); pages without one (home, teacher) are not numbered lessons.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfviz.exercises.quiz import LESSONS, QUESTIONS, summary_message
from tfviz.exercises.registry import EXERCISES
from tfviz.ui.lessons import ROOT, available, mention, numbered

# "lesson 5", "Lesson 11 ·", "lesson-6", "lessons 9-12", "lessons 13–19", "lesson 16/17",
# "lessons 4, 5 and 7"
MENTION = re.compile(r"\b[Ll]essons?[ \t\-]+(\d+)((?:\s*(?:[-–—/,]|and|or|to)\s*\d+)*)")
_PART = re.compile(r"\s*([-–—/,]|and|or|to)\s*(\d+)")
_RANGE = {"-", "–", "—", "to"}


def lesson_numbers(text: str) -> list[tuple[int, str]]:
    """(number, the words that name it) for every lesson a text mentions; ranges expanded."""
    found = []
    for m in MENTION.finditer(text):
        numbers, last = [int(m.group(1))], int(m.group(1))
        for sep, n in _PART.findall(m.group(2)):
            n = int(n)
            numbers += range(last + 1, n + 1) if sep in _RANGE else [n]
            last = n
        found += [(n, m.group(0)) for n in numbers]
    return found


def dead(text: str, pages) -> list[tuple[int, str]]:
    return [(n, words) for n, words in lesson_numbers(text) if n not in pages]


def source_files() -> list[Path]:
    files = [ROOT / "app.py", ROOT / "server.py", *sorted((ROOT / "lessons").glob("*.py")),
             *sorted((ROOT / "tfviz").rglob("*.py"))]
    return [f for f in files if f.exists()]


@pytest.mark.parametrize("text, numbers", [
    ("see lesson 5.", [5]),
    ("Lesson 11 · Mixture of experts", [11]),
    ("a lesson-6 experiment", [6]),
    ("Lessons 9-12: the block", [9, 10, 11, 12]),
    ("lessons 13–19 arrive", [13, 14, 15, 16, 17, 18, 19]),
    ("worth revisiting lesson 16/17", [16, 17]),
    ("lessons 4, 5 and 7", [4, 5, 7]),
    ("lesson=19, lesson {n}, the lessons", []),
])
def test_the_scanner_reads_every_way_of_naming_lessons(text, numbers):
    assert [n for n, _ in lesson_numbers(text)] == numbers


def test_a_mention_of_a_missing_lesson_is_caught():
    built = range(1, 13)
    assert dead("cross-attention comes in lesson 13", built) == [(13, "lesson 13")]
    assert dead("Lessons 11-14", built) == [(13, "Lessons 11-14"), (14, "Lessons 11-14")]
    assert dead("lesson 12 walks through it", built) == []


def test_navigation_numbers_come_from_the_titles():
    pages = numbered()
    assert pages[5].url == "self-attention" and pages[12].url == "forward-walk"
    assert pages[20].url == "exercises" and pages[21].url == "quiz"
    assert {page.url for page in pages.values()} <= {page.url for page in available()}
    assert "teacher" not in {page.url for page in pages.values()}  # a page, not a lesson


def test_every_lesson_named_in_the_code_is_a_page():
    pages = numbered()
    problems = []
    for path in source_files():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            problems += [f"{path.relative_to(ROOT)}:{i}: {words!r} (no lesson {n} in the "
                         f"navigation)" for n, words in dead(line, pages)]
    assert not problems, "\n".join(problems)


def test_lesson_mentions_built_at_run_time():
    pages = numbered()
    for n, entry in LESSONS.items():
        topic = entry.topic
        assert mention(n) == mention(n, topic)  # the curriculum's name is the default
        text = mention(n, topic)
        if n in pages:
            title = pages[n].title.split(" · ", 1)[1]
            assert text == f"lesson {n} ({title})"
        else:
            assert text == f"{topic} (no lesson page yet)"
            assert lesson_numbers(text) == []


def test_exercise_captions_name_only_lessons_that_exist():
    pages = numbered()
    for spec in EXERCISES.values():
        caption = f"It practises {mention(spec.lesson, LESSONS[spec.lesson].topic)}."
        assert not dead(caption, pages), (spec.id, caption)
    beam = EXERCISES["beam-search"]
    caption = mention(beam.lesson, LESSONS[beam.lesson].topic)
    if beam.lesson not in pages:
        assert caption == "LM head and decoding (no lesson page yet)"


def test_quiz_summary_recommends_only_lessons_that_exist():
    pages = numbered()
    text = summary_message([False] * len(QUESTIONS), QUESTIONS, pages=pages)
    assert not dead(text, pages)
    asked = {q.lesson for q in QUESTIONS}
    for n in asked:
        named = (f"{n} ({LESSONS[n].topic})" in text) if n in pages else (LESSONS[n].topic in text)
        assert named, (n, text)
    unbuilt = sorted(asked - set(pages))
    if unbuilt:
        assert "no lesson page yet: reread their explanations above." in text
