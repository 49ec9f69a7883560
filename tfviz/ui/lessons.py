"""The table of contents: every page of the app, its section and its URL."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Lesson:
    file: str  # under lessons/
    title: str
    url: str
    section: str
    icon: str = ""


HOME = "00_home.py"  # served at "/": a lesson marked default would lose its own URL

LESSONS = (
    Lesson(HOME, "Welcome", "home", "Start here", ":material/home:"),
    Lesson("01_tour.py", "1 · Tour", "tour", "Foundations", ":material/explore:"),
    Lesson("02_tokenizer.py", "2 · Tokenizer (BPE)", "tokenizer", "Foundations", ":material/content_cut:"),
    Lesson("03_embeddings.py", "3 · Embeddings and positions", "embeddings", "Foundations", ":material/place:"),
    Lesson("04_lookup.py", "4 · Attention as soft lookup", "attention-lookup", "Attention", ":material/search:"),
    Lesson("05_self_attention.py", "5 · Self-attention step by step", "self-attention", "Attention", ":material/center_focus_strong:"),
    Lesson("06_scaling.py", "6 · Why divide by √d_k", "scaling", "Attention", ":material/straighten:"),
    Lesson("07_multihead.py", "7 · Multi-head attention", "multi-head", "Attention", ":material/view_module:"),
    Lesson("08_masking.py", "8 · Masking", "masking", "Attention", ":material/visibility_off:"),
    Lesson("09_layernorm.py", "9 · Residual and LayerNorm", "layernorm", "The block", ":material/add_circle:"),
    Lesson("10_ffn.py", "10 · Feed-forward", "feed-forward", "The block", ":material/settings:"),
    Lesson("11_moe.py", "11 · Mixture of experts", "mixture-of-experts", "The block", ":material/call_split:"),
    Lesson("12_forward.py", "12 · Full forward walk", "forward-walk", "The block", ":material/directions_walk:"),
    Lesson("20_exercises.py", "20 · Worked exercises", "exercises", "Practice", ":material/edit_note:"),
    Lesson("21_quiz.py", "21 · Quiz", "quiz", "Practice", ":material/quiz:"),
    Lesson("22_teacher.py", "Teacher: class sheets", "teacher", "Practice", ":material/school:"),
)


#: URLs kept for lessons still to be written (curriculum number -> URL). Errata of the notes
#: that belong to them already point there (tfviz/notes_errata.py), so each such page shows
#: its callout from the day it is built.
PLANNED = {13: "encoder-decoder", 14: "decoding", 15: "bert", 17: "long-sequences"}

_NUMBER = re.compile(r"(\d+) · ")  # a lesson's number opens its title: "5 · Self-attention ..."


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
    found = {}
    for lesson in available():
        if m := _NUMBER.match(lesson.title):
            found[int(m.group(1))] = lesson
    return found


def mention(number: int, topic: str) -> str:
    """How text names a lesson: "lesson 5 (Self-attention step by step)" if that page exists,
    else "KV cache (no lesson page yet)", so nothing points at a page the learner cannot open.
    """
    page = numbered().get(number)
    if page is None:
        return f"{topic} (no lesson page yet)"
    return f"lesson {number} ({_NUMBER.sub('', page.title, count=1)})"
