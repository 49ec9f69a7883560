"""Issue #40: every file the app offers for download, clicked in a real browser and read back.

A download button whose data is a callable is run by Streamlit when the button is pressed, on a
thread of its own, outside any script run: there ``st.session_state`` is not this browser's, so
a callable that reads the session there makes a file of nothing. AppTest never presses a
download button (it has no browser to save a file), so only chromium shows what a teacher gets.

- The live class's two CSV files (``tfviz.ui.live_teacher.downloads``): a teacher and two
  students, each a browser context of their own; the students answer boxes of *20 · Worked
  exercises* after the teacher's page was drawn, and the files hold exactly what the store
  holds (``LiveStore.export_rows``, ``summary``), row for row.
- The printable sheets of the teacher's page (lessons/22_teacher.py): the sheet and the answer
  key, Markdown and HTML, are exactly what ``tfviz.exercises.worksheet`` writes for the
  exercises, variants and class code chosen on the page.

The charts' "Save as PNG" is the browser's own code (no server call); test_instant_views.py
and test_every_page.py download and read those pictures.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.browser.conftest import FAILED, wait_for_app
from tests.browser.live_class_browsers import NOTICE_ENDED, Browser, _nav, end_class, start_class

pytestmark = pytest.mark.browser

SAVED = "Saved for your class's dashboard"
# What each student types into the boxes of the first exercise (its source's own numbers):
# right, a diagnosed slip (the scale left out), and a wrong answer that is no known slip.
ANSWERS = {"student 1": (("scores", "1, -1"), ("scaled", "1, -1")),
           "student 2": (("scores", "1 -1"), ("scaled", "0.7071 -0.7071"), ("weights", "0.3 0.7"))}


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _download(pg, label: str, log: Path | None = None) -> tuple[str, str]:
    """Presses the download button ``label``; (the file's name, its text). No file: what the
    button says (Streamlit shows why a deferred file failed under it) and the server's log."""
    button = pg.locator('[data-testid="stDownloadButton"]', has_text=label)
    try:
        with pg.expect_download(timeout=30_000) as saved:
            button.locator("button").click()
    except Exception as exc:
        said = button.locator('[data-testid="stDownloadButtonError"]')
        raise AssertionError(f"no file from {label!r}: "
                             f"{said.inner_text() if said.count() else 'no error shown'}; "
                             f"log: {log.read_text(errors='replace')[-2000:] if log else ''}") from exc
    return saved.value.suggested_filename, Path(saved.value.path()).read_text(encoding="utf-8")


def _answer(student: Browser, inst, answers) -> None:
    """Types each answer into its box on /exercises and presses Check; waits until the page
    says the class has it."""
    pg = student.page
    for n, (box, text) in enumerate(answers, start=1):
        # the box by its own label (another box's form may name this one in a note), and the
        # form that holds it for its Check button
        field = pg.get_by_role("textbox", name=inst.field(box).label, exact=True)
        form = pg.locator('[data-testid="stMain"] [data-testid="stForm"]').filter(has=field)
        form.get_by_role("textbox").fill(text)
        form.get_by_role("button", name="Check").click()
        try:
            pg.wait_for_function("([t, n]) => document.querySelector('[data-testid=\"stMain\"]')"
                                 ".innerText.split(t).length - 1 === n", arg=[SAVED, n],
                                 timeout=60_000)
        except Exception as exc:
            raise AssertionError(f"{student.name}, box {box}: not saved for the class; "
                                 f"sidebar: {student.sidebar()[-300:]}") from exc
    student.settle()


def test_the_teachers_csv_files_hold_every_answer_the_store_holds(logged_server, browser):
    from tfviz.classroom.export import answers_csv, summary_csv
    from tfviz.classroom.store import open_store
    from tfviz.exercises.registry import EXERCISES, make_instance

    url, log = logged_server
    start = len(log.read_text(errors="replace"))
    exercise = next(iter(EXERCISES))  # the exercise /exercises opens on
    inst = make_instance(exercise, None)

    # The teacher starts a class and takes it to the exercises; the students join there.
    teacher, code = start_class(browser, url)
    teacher.page.wait_for_function("() => document.cookie.includes('tfviz_teacher=')",
                                   timeout=30_000)
    cookie = {c["name"]: c["value"] for c in teacher.context.cookies()}["tfviz_teacher"]
    plain, _, key = cookie.partition(".")
    _nav(teacher, "Worked exercises", "exercises")
    wait_for_app(teacher.page, timeout=90_000)
    students = {name: Browser(browser, name).open(f"{url}/exercises?join={plain}")
                for name in ANSWERS}
    for s in students.values():
        s.page.wait_for_function("(c) => document.querySelector('[data-testid=\"stSidebar\"]')"
                                 ".innerText.includes('Following class ' + c)", arg=code,
                                 timeout=60_000)
        assert s.page.url.split("?")[0].endswith("/exercises"), (s.page.url, s.sidebar()[-300:])

    # The teacher's page is drawn before any answer exists: the files must be made when the
    # buttons are pressed, not when the page was drawn.
    _nav(teacher, "Teacher", "teacher")
    wait_for_app(teacher.page, timeout=90_000)
    teacher.page.locator('[data-testid="stDownloadButton"]').first.wait_for(timeout=30_000)
    for name, answers in ANSWERS.items():
        _answer(students[name], inst, answers)

    store = open_store()  # the server's own store: the same file (tests/conftest.py)
    want_rows = store.export_rows(plain, key)
    sent = [(box, inst.check(box, text)) for a in ANSWERS.values() for box, text in a]
    assert sorted((r["box"], r["correct"], bool(r["slip"])) for r in want_rows) == sorted(
        (box, fb.correct, bool(fb.mistake)) for box, fb in sent)  # the store has what was sent
    assert any(r["slip"] for r in want_rows) and not all(r["correct"] for r in want_rows)

    name, got = _download(teacher.page, "Every answer (CSV)", log)
    assert name == f"live-class-{plain}-answers.csv"
    assert _rows(got) == _rows(answers_csv(want_rows)), got  # row for row, header and all
    assert len(_rows(got)) == sum(map(len, ANSWERS.values()))

    name, got = _download(teacher.page, "Summary per question (CSV)", log)
    assert name == f"live-class-{plain}-summary.csv"
    summary = store.summary(plain, key)
    assert _rows(got) == _rows(summary_csv(summary, store.checkin_summary(plain, key))), got
    assert [(r["question"], r["box"], r["answered"], r["right"]) for r in _rows(got)] == [
        (s.exercise_id, s.step, str(s.answered), str(s.right)) for s in summary]
    assert {(s.step, s.answered) for s in summary} == {("scores", 2), ("scaled", 2), ("weights", 1)}

    # Downloaded, the teacher ends the class (the students' held requests are answered, so
    # nothing of this class is left waiting on the shared server).
    end_class(teacher.page)
    for s in students.values():
        s.page.wait_for_function("(t) => document.querySelector('[data-testid=\"stSidebar\"]')"
                                 ".innerText.includes(t)", arg=NOTICE_ENDED, timeout=30_000)
    for b in (teacher, *students.values()):
        assert not b.errors, (b.name, b.errors)
        assert b.page.locator('[data-testid="stException"]').count() == 0
        b.close()
    problems = FAILED.findall(log.read_text(errors="replace")[start:])  # a callable that raised
    assert not problems, log.read_text(errors="replace")[start:][-3000:]


def test_the_printable_sheets_and_answer_keys_are_the_worksheets_own(server, browser):
    from tfviz.exercises.registry import EXERCISES, make_instance
    from tfviz.exercises.worksheet import worksheet, worksheet_html

    page = Browser(browser, "teacher").open(f"{server}/teacher")
    pg = page.page
    # Not the page's defaults: the files follow what the teacher chose.
    for label, value in (("Variants of each exercise (N)", "2"), ("Starting class code", "250")):
        box = pg.locator(f'[data-testid="stMain"] input[aria-label="{label}"]')
        box.fill(value)
        box.press("Enter")
        wait_for_app(pg)
    pg.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                         ".includes('variant b → 251')", timeout=60_000)
    wait_for_app(pg)
    ids = ("flying-arrows", "thinking-machines", "causal-mask")  # the page's default pick
    sheet, key = worksheet(ids, 2, 250)
    sheet_html, key_html = worksheet_html(ids, 2, 250)

    files = {label: _download(pg, label) for label in (
        "Sheet (Markdown)", "Sheet (HTML, to print)", "Answer key (Markdown)",
        "Answer key (HTML, to print)")}
    assert files == {"Sheet (Markdown)": ("transformer-sheet-250.md", sheet),
                     "Sheet (HTML, to print)": ("transformer-sheet-250.html", sheet_html),
                     "Answer key (Markdown)": ("transformer-sheet-250-key.md", key),
                     "Answer key (HTML, to print)": ("transformer-sheet-250-key.html", key_html)}
    # The key holds each variant's answers, as the exercise itself computes them, and the
    # sheet none of them.
    got_key, got_sheet = files["Answer key (Markdown)"][1], files["Sheet (Markdown)"][1]
    for ex_id in ids:
        assert EXERCISES[ex_id].title.split(":")[0] in got_sheet
        for code in (250, 251):
            inst = make_instance(ex_id, code)
            assert f"(class code {code})" in got_key
            for f in inst.answer_fields:
                assert f"- {f.label}: **{f.answer_text}** ({f.tolerance_text})" in got_key
            assert not any(f"**{f.answer_text}**" in got_sheet for f in inst.answer_fields)
    assert not page.errors, page.errors
    page.close()
