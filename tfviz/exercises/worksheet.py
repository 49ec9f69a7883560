"""Printable worksheets and their answer keys, in markdown or HTML.

Variant j of a sheet made with code s uses class code s + j, so a student who types that
code in the app gets exactly the numbers on their sheet and can check their work there.

>>> sheet, key = worksheet(["thinking-machines"], n_variants=2, seed=7)
>>> "class code 8" in sheet, "0." in key
(True, True)
"""
from __future__ import annotations

import html
from pathlib import Path

from tfviz.exercises.core import Instance
from tfviz.exercises.registry import EXERCISES, make_instance

MAX_VARIANTS = 40


def _variants(exercise_ids, n_variants: int, seed: int):
    if not 1 <= int(n_variants) <= MAX_VARIANTS:
        raise ValueError(f"n_variants must be between 1 and {MAX_VARIANTS}")
    unknown = [e for e in exercise_ids if e not in EXERCISES]
    if unknown:
        raise KeyError(f"unknown exercise(s): {', '.join(map(str, unknown))}")
    for number, ex_id in enumerate(exercise_ids, start=1):
        for j in range(int(n_variants)):
            code = int(seed) + j
            yield f"{number}{chr(ord('a') + j % 26)}", code, make_instance(ex_id, code)


def _sheet_item(label: str, code: int, inst: Instance) -> str:
    boxes = "\n".join(f"- {f.label}: ____________________" for f in inst.answer_fields)
    return f"## {label}. {inst.title} (class code {code})\n\n{inst.prompt}\n\n{boxes}\n"


def _key_item(label: str, code: int, inst: Instance) -> str:
    answers = "\n".join(f"- {f.label}: **{f.answer_text}** ({f.tolerance_text})"
                        for f in inst.answer_fields)
    steps = "\n".join(f"{i}. {s.title}: {s.explanation}" for i, s in enumerate(inst.steps, 1))
    head = f"## {label}. {inst.title} (class code {code})"
    return f"{head}\n\n{answers}\n\nWorked steps:\n\n{steps}\n"


def worksheet(exercise_ids, n_variants: int = 1, seed: int = 0) -> tuple[str, str]:
    """(sheet, answer key) as markdown: every exercise in ``n_variants`` numbered variants."""
    items = list(_variants(list(exercise_ids), n_variants, seed))
    head = f"# Transformer exercises (sheet {int(seed)})\n\n"
    sheet = head + "\n".join(_sheet_item(*it) for it in items)
    key = f"# Answer key (sheet {int(seed)})\n\n" + "\n".join(_key_item(*it) for it in items)
    return sheet, key


_STYLE = (Path(__file__).parent / "worksheet.css").read_text(encoding="utf-8")  # read once


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def prompt_html(text: str) -> str:
    r"""An exercise prompt as HTML, every text escaped. Prompts use a small part of Markdown:
    paragraphs, "- " lists and pipe tables (first row the header, then a |---| row).

    >>> prompt_html("Scores:\n\n| q | a |\n|---|---|\n| a | <1 |\n\n- x = 1")
    '<p>Scores:</p><table><tr><th>q</th><th>a</th></tr><tr><td>a</td><td>&lt;1</td></tr></table><ul><li>x = 1</li></ul>'
    """
    e, parts = html.escape, []
    for block in (b.strip() for b in text.split("\n\n")):
        lines = block.splitlines()
        if not lines:
            continue
        rows = [_cells(line) for line in lines if set(line.strip()) - set("|-: ")]  # no |---|
        if len(lines) >= 2 and rows and all(line.lstrip().startswith("|") for line in lines):
            head = "".join(f"<th>{e(c)}</th>" for c in rows[0])
            body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                           for row in rows[1:])
            parts.append(f"<table><tr>{head}</tr>{body}</table>")
        elif all(line.startswith("- ") for line in lines):
            parts.append("<ul>" + "".join(f"<li>{e(line[2:])}</li>" for line in lines) + "</ul>")
        else:
            parts.append(f"<p>{e(block)}</p>")
    return "".join(parts)


def _page(title: str, sections: list[str]) -> str:
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            + "".join(sections) + "</body></html>")


def worksheet_html(exercise_ids, n_variants: int = 1, seed: int = 0) -> tuple[str, str]:
    """The same sheet and key as self-contained HTML pages; every text is escaped."""
    e = html.escape
    sheet, key = [], []
    for label, code, inst in _variants(list(exercise_ids), n_variants, seed):
        head = f"<h2>{e(label)}. {e(inst.title)} (class code {code})</h2>"
        boxes = "".join(f"<li>{e(f.label)}: ____________________</li>" for f in inst.answer_fields)
        sheet.append(f"<section>{head}<div class=\"prompt\">{prompt_html(inst.prompt)}</div>"
                     f"<ul>{boxes}</ul></section>")
        answers = "".join(f"<li>{e(f.label)}: <b>{e(f.answer_text)}</b> ({e(f.tolerance_text)})"
                          "</li>" for f in inst.answer_fields)
        steps = "".join(f"<li>{e(s.title)}: {e(s.explanation)}</li>" for s in inst.steps)
        key.append(f"<section>{head}<ul>{answers}</ul><ol class=\"steps\">{steps}</ol></section>")
    return (_page(f"Transformer exercises (sheet {int(seed)})", sheet),
            _page(f"Answer key (sheet {int(seed)})", key))
