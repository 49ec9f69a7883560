"""Streamlit pieces for the practice pages: answer boxes, feedback, the step-by-step reveal,
and the quiz's questions. (The teacher's worked step for the projector, in a live class, is
``tfviz.ui.live_teacher.worked_step_panel``.)

State lives in ``st.session_state`` under keys that start with the page's prefix:

* ``ex_progress``: a :class:`~tfviz.exercises.progress.Progress` (immutable; replaced, never edited)
* ``ex_feedback``: {(instance key, box name): (text checked, Feedback)}
* ``ex_reveal``:   {instance key: how far the worked solution is open}

An *instance key* names one set of numbers: ``"flying-arrows:source"`` or ``"flying-arrows:4711"``.
"""
from __future__ import annotations

import secrets

import pandas as pd
import streamlit as st

from tfviz.exercises import registry
from tfviz.exercises.core import AnswerField, Instance, fmt_number
from tfviz.exercises.feedback import Feedback
from tfviz.exercises.progress import Progress
from tfviz.exercises.quiz import format_value, grade
from tfviz.exercises.worksheet import worksheet, worksheet_html
from tfviz.notes_errata import errata_for
from tfviz.ui import live
from tfviz.ui.errors import safe_fragment
from tfviz.ui.lessons import mention
from tfviz.ui.live_session import NOTICE
from tfviz.viz.exercises import engine_agreement, value_tables

PROGRESS, FEEDBACK, REVEAL = "ex_progress", "ex_feedback", "ex_reveal"
HIGHLIGHT = "background-color: rgba(240, 228, 66, 0.4)"  # Okabe-Ito yellow, light: the asked row


# ----- cached data (instances and sheets pickle; the same code gives the same numbers) --------
@st.cache_data(max_entries=256, show_spinner=False)
def cached_instance(exercise_id: str, seed: int | None) -> Instance:
    return registry.make_instance(exercise_id, seed)


@st.cache_data(max_entries=64, show_spinner="Running the numbers through the model…")
def cached_agreement(exercise_id: str, seed: int | None):
    return engine_agreement(registry.make_instance(exercise_id, seed))


@st.cache_data(max_entries=32, show_spinner="Writing the sheets…")
def cached_sheets(ids: tuple[str, ...], n_variants: int, seed: int) -> dict[str, str]:
    sheet, key = worksheet(ids, n_variants, seed)
    sheet_html, key_html = worksheet_html(ids, n_variants, seed)
    return {"sheet.md": sheet, "key.md": key, "sheet.html": sheet_html, "key.html": key_html}


def _cell(x) -> str:
    if isinstance(x, float):
        return "" if x != x else fmt_number(x, 4)  # NaN pads a short row: leave it blank
    return str(x)


def _styled(frame, highlight: str | None):
    """A fresh Styler of ``frame``: numbers trimmed, the row named ``highlight`` tinted."""
    def tint(row):
        return [HIGHLIGHT if row.name == highlight else ""] * len(row)
    return frame.style.format(_cell).apply(tint, axis=1)


def _frame_key(frame) -> tuple[str, tuple[str, ...]]:
    """What a table shows: every label and value as CSV (floats at full precision) and the
    columns' dtypes: equal keys, equal table. Streamlit's own hashing of a DataFrame costs
    several times as much for these small tables, most of what a cache hit would still cost.
    (Not pickle: tfviz never imports it, so nothing here can unpickle; see
    tests/robustness/test_security.py.)"""
    return frame.to_csv(), tuple(map(str, frame.dtypes))


@st.cache_data(max_entries=512, show_spinner=False, hash_funcs={pd.DataFrame: _frame_key})
def show_table(frame, highlight: str | None = None) -> None:
    """A small table as wide as its content, numbers trimmed (1, not 1.0000; −∞ for -inf);
    the row named ``highlight`` (the word the exercise asks about) is tinted.

    Cached by its inputs (the frame and ``highlight``): Streamlit keeps the table element
    this drew and replays it on a hit, so the Styler's rendering (most of the cost of an
    exercise's tables) runs once per table per replica. Nothing cached is shared or mutated:
    a miss builds a fresh Styler, which ``st.table`` consumes."""
    st.table(_styled(frame, highlight), width="content")


def show_tables(tables, highlight: str | None = None, per_row: int = 3) -> None:
    """(title, table) pairs side by side, ``per_row`` to a row."""
    for start in range(0, len(tables), per_row):
        for col, (title, table) in zip(st.columns(per_row), tables[start:start + per_row]):
            with col:
                st.caption(title)
                show_table(table, highlight)


def instance_key(exercise_id: str, seed: int | None) -> str:
    return f"{exercise_id}:{'source' if seed is None else seed}"


def new_code(state_key: str) -> None:
    """Callback: put a fresh random class code (1000–9999) into a text box."""
    st.session_state[state_key] = str(1000 + secrets.randbelow(9000))


def class_code_input(label: str, key: str, default: str = "1", **kwargs) -> int | None:
    """A text box for a class code; shows a friendly warning and returns None for garbage."""
    st.session_state.setdefault(key, default)
    text = st.text_input(label, key=key, max_chars=40, **kwargs)
    seed = registry.parse_class_code(text)
    if seed is None:
        st.warning("A class code is a whole number of up to 12 digits, such as 4711 (it is "
                   "printed next to each exercise on the sheet).")
    return seed


# ----- feedback ---------------------------------------------------------------------------------
def feedback_kind(fb: Feedback) -> str:
    """"right", "diagnosed" (a known slip), "wrong", or "unreadable" (not an answer at all)."""
    if fb.correct:
        return "right"
    if fb.diagnosis:
        return "diagnosed"
    return "wrong" if fb.valid else "unreadable"


def show_feedback(fb: Feedback) -> None:
    kind = feedback_kind(fb)
    if kind == "right":
        st.success(f"✓ {fb.message}")
    elif kind == "diagnosed":
        st.error(f"✗ {fb.message} {fb.diagnosis}")
    elif kind == "wrong":
        st.error(f"✗ {fb.message}")
    else:
        st.warning(fb.message)


def all_right(inst: Instance, ikey: str) -> bool:
    """Has every box of this set of numbers been checked right?"""
    results = st.session_state.get(FEEDBACK, {})
    return all((ikey, f.name) in results and results[(ikey, f.name)][1].correct
               for f in inst.answer_fields)


def _check(inst: Instance, ikey: str, box_name: str, widget_key: str) -> None:
    """Callback of a box's Check button: grade, remember, and mark the exercise when all right."""
    text = st.session_state.get(widget_key, "")
    results = st.session_state.setdefault(FEEDBACK, {})
    results[(ikey, box_name)] = (text, inst.check(box_name, text))
    live.report_answer(inst.exercise_id, box_name, results[(ikey, box_name)][1])  # class dashboard
    if all_right(inst, ikey):
        progress = st.session_state.get(PROGRESS, Progress())
        st.session_state[PROGRESS] = progress.solve(inst.exercise_id)


def answered(inst: Instance, ikey: str) -> frozenset[str]:
    """The boxes whose answers the page may now show: those checked with a readable answer
    (right or wrong), and every box once the full worked solution is open."""
    if reveal_level(ikey) >= len(inst.steps) + 1:
        return frozenset(f.name for f in inst.answer_fields)
    results = st.session_state.get(FEEDBACK, {})
    return frozenset(f.name for f in inst.answer_fields
                     if (ikey, f.name) in results and results[(ikey, f.name)][1].valid)


def _labels(inst: Instance, names) -> str:
    """The boxes' labels, "a", "a and b", "a, b and c" (labels quote their own words)."""
    labels = [inst.field(n).label for n in names]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def agreement_panel(inst: Instance, ikey: str, agreement) -> None:
    """The engine's numbers beside the hand solver's, each row only once the boxes it answers
    are answered (or the solution is open): before that it would give the answers away."""
    shown = answered(inst, ikey)
    rows = [i for i, boxes in enumerate(agreement.answers) if set(boxes) <= shown]
    if rows:
        st.table(agreement.table.iloc[rows], hide_index=True, width="content")
    waiting = sorted({b for boxes in agreement.answers for b in boxes} - shown,
                     key=[f.name for f in inst.answer_fields].index)
    if waiting:
        where = "that box" if len(waiting) == 1 else "each of those boxes"
        st.caption(f"The engine's numbers for the {_labels(inst, waiting)} appear here once "
                   f"you have checked an answer in {where}, or opened the full worked solution: "
                   "they are the answers.")
    st.success(f"Largest difference between the engine and the hand solver, over every word and "
               f"head: {agreement.max_difference:.1e} (the engine computes in 32-bit floats).")


def answer_box(inst: Instance, ikey: str, box: AnswerField) -> None:
    """One answer box with its format, tolerance, Check button and the last verdict."""
    widget_key = f"ex_ans_{ikey}_{box.name}"
    with st.form(key=f"ex_form_{ikey}_{box.name}", border=False):
        st.text_input(box.label, key=widget_key, placeholder=box.format_hint)
        left, right = st.columns([1, 6], vertical_alignment="center")
        left.form_submit_button("Check", key=f"ex_check_{ikey}_{box.name}", on_click=_check,
                                args=(inst, ikey, box.name, widget_key))
        right.caption(f"{box.format_hint} · tolerance **{box.tolerance_text}**")
    stored = st.session_state.get(FEEDBACK, {}).get((ikey, box.name))
    if stored:
        checked, fb = stored
        show_feedback(fb)
        if sent := live.answer_status(inst.exercise_id, box.name):
            st.caption(sent)
        if checked != st.session_state.get(widget_key, checked):
            st.caption("You have edited this answer since it was checked.")


def shown_elsewhere(inst: Instance, agreement=None) -> frozenset[str]:
    """The boxes whose first readable answer changes something the page draws outside the
    answer boxes: a course-notes entry that states them, or (``agreement``, the engine's
    panel) the engine's row that gives them away."""
    boxes = {b for e in errata_for("exercises", inst.exercise_id) for b in e.gives_away}
    if agreement is not None:
        boxes |= {b for row in agreement.answers for b in row}
    return frozenset(boxes)


def _outside(inst: Instance, ikey: str, watched: frozenset[str]):
    """What the rest of the page draws from the answers: the watched boxes answered, every
    box answered ("Show the code"), the exercise solved (progress, the picker's ✓), and a
    live-class notice in the sidebar."""
    shown = answered(inst, ikey)
    return (shown & watched, len(shown) == len(inst.answer_fields),
            st.session_state.get(PROGRESS, Progress()).is_solved(inst.exercise_id),
            st.session_state.get(NOTICE))


def answer_boxes(inst: Instance, ikey: str, watched: frozenset[str] = frozenset()) -> None:
    """Every answer box of one set of numbers, and the "all right" line, as one fragment:
    pressing Check reruns the boxes alone, not the page (its tables, solution and charts).

    When a check changes what the rest of the page draws (see :func:`_outside`; ``watched``
    from :func:`shown_elsewhere`), the fragment asks for a run of the whole page instead."""
    _answer_fragment(inst, ikey, watched, _outside(inst, ikey, watched))


@safe_fragment
def _answer_fragment(inst: Instance, ikey: str, watched: frozenset[str], drawn) -> None:
    # A fragment's rerun gets the arguments of the page's last full run: ``drawn`` is what
    # the page drew then, so a difference now means the page is out of date.
    if _outside(inst, ikey, watched) != drawn:
        st.rerun(scope="app")
    for box in inst.answer_fields:
        answer_box(inst, ikey, box)
    if all_right(inst, ikey):
        st.success("Every box is right: exercise solved ✓. Try a fresh variant, or another one.")


def progress_panel(ids) -> Progress:
    """Progress bar and checklist of the exercises solved in this session."""
    progress = st.session_state.get(PROGRESS, Progress())
    ids = list(ids)
    done = sum(progress.is_solved(i) for i in ids)
    st.progress(progress.fraction(ids), text=f"{done} of {len(ids)} exercises solved this session")
    with st.expander("Checklist"):
        st.markdown("\n".join(f"- {'✅' if progress.is_solved(i) else '⬜'} "
                              f"{registry.EXERCISES[i].title}" for i in ids))
    return progress


# ----- hints and the worked solution ------------------------------------------------------------
def _set_reveal(ikey: str, level: int) -> None:
    st.session_state.setdefault(REVEAL, {})[ikey] = level


def reveal_level(ikey: str) -> int:
    """0 nothing; 1 the hint (the recipe); 1 + s: s steps open; len(steps) + 1: everything."""
    return st.session_state.get(REVEAL, {}).get(ikey, 0)


def reveal_buttons(inst: Instance, ikey: str) -> int:
    """"Hint" -> "Next step" -> "Full worked solution" (and "Hide" to start over)."""
    level, full = reveal_level(ikey), len(inst.steps) + 1
    c1, c2, c3, c4 = st.columns(4)
    c1.button("💡 Hint", key=f"ex_hint_{ikey}", disabled=level > 0,
              on_click=_set_reveal, args=(ikey, 1))
    c2.button("➡️ Next step", key=f"ex_next_{ikey}", disabled=level >= full,
              on_click=_set_reveal, args=(ikey, min(full, max(level, 1) + 1)))
    c3.button("📖 Full worked solution", key=f"ex_full_{ikey}", disabled=level >= full,
              on_click=_set_reveal, args=(ikey, full))
    c4.button("🙈 Hide", key=f"ex_hide_{ikey}", disabled=level == 0,
              on_click=_set_reveal, args=(ikey, 0))
    return reveal_level(ikey)


def show_hint(inst: Instance) -> None:
    st.info("The recipe, without the numbers: work through these steps in order.")
    for i, step in enumerate(inst.steps, start=1):
        st.markdown(f"**{i}. {step.title}**")
        if step.formula_latex:
            st.latex(step.formula_latex)


def show_step(number: int, step, tokens, focus: int | None = None) -> None:
    """One worked step: its formula, what it does in words, and the numbers it produces."""
    with st.container(border=True):
        st.markdown(f"**Step {number} · {step.title}**")
        if step.formula_latex:
            st.latex(step.formula_latex)
        st.markdown(step.explanation.replace("\n", "  \n"))
        asked = tokens[focus] if focus is not None and focus < len(tokens) else None
        show_tables(value_tables(step.values, tokens), asked)


def show_answers(inst: Instance) -> None:
    st.markdown("**The answers**")
    st.table({"box": [f.label for f in inst.answer_fields],
              "answer": [f.answer_text for f in inst.answer_fields],
              "tolerance": [f.tolerance_text for f in inst.answer_fields]}, width="content")


# ----- quiz ---------------------------------------------------------------------------------------
QUIZ_RESULTS, QUIZ_ROUND = "qz_results", "qz_round"


def _grade_question(question, widget_key: str, result_key: tuple) -> None:
    """Callback of a question's Check button."""
    st.session_state.setdefault(QUIZ_RESULTS, {})[result_key] = grade(
        question, st.session_state.get(widget_key))


def new_quiz(code_key: str | None) -> None:
    """Callback: a clean slate, and with ``code_key`` a fresh code (so fresh questions)."""
    if code_key:
        new_code(code_key)
    st.session_state[QUIZ_ROUND] = st.session_state.get(QUIZ_ROUND, 0) + 1


def quiz_question(number: int, total: int, question, result_key: tuple):
    """One question in its own box: prompt, radio or number box, Check, and the verdict.

    Returns the Feedback once a readable answer was graded (then the question is locked).
    """
    fb = st.session_state.get(QUIZ_RESULTS, {}).get(result_key)
    locked = fb is not None and fb.valid
    name = "_".join(map(str, result_key))
    with st.container(border=True):
        st.caption(f"Question {number} of {total} · "
                   f"{mention(question.lesson)}")
        st.markdown(f"**{question.prompt}**")
        with st.form(key=f"qz_form_{name}", border=False):
            widget_key = f"qz_answer_{name}"
            if question.kind == "choice":
                st.radio("Your answer", range(len(question.options)), index=None,
                         format_func=question.options.__getitem__, key=widget_key,
                         disabled=locked)
            else:
                st.text_input("Your answer", key=widget_key, disabled=locked,
                              placeholder=question.unit)
                st.caption(f"Answer with {question.unit}; within ±"
                           f"{format_value(question.tolerance, question.tolerance / 10)} counts.")
            st.form_submit_button("Check", key=f"qz_check_{name}", disabled=locked,
                                  on_click=_grade_question, args=(question, widget_key, result_key))
        if fb is None:
            return None
        if not fb.valid:
            st.warning(fb.message)
            return None
        (st.success if fb.correct else st.error)(("✓ " if fb.correct else "✗ ") + fb.message)
        _why_not(question)
    return fb


def _why_not(question) -> None:
    """The tempting wrong answers and why each is wrong."""
    if question.kind == "choice":
        items = [(question.options[i], why) for i, why in sorted(question.distractors.items())]
    else:
        items = [(format_value(m.value, question.tolerance), m.explanation)
                 for m in question.mistakes]
    if items:
        with st.expander("Why the tempting wrong answers are wrong"):
            st.markdown("\n".join(f"- **{answer}**: {why}" for answer, why in items))
