"""The teacher's page in a live class: start and end the session, the join code large for the
projector, the class's answers live (what it got wrong, box by box, without names), and the
worked step behind any answer box, drawn for the projector.

The session's state is in ``tfviz.classroom.live``; the teacher's push of page and view, on
every page, in ``tfviz.ui.live_push``. Only a browser that teaches a class has a fragment on a
timer here (the dashboard, every 2 s).
"""
from __future__ import annotations

import streamlit as st

from tfviz.classroom.codes import format_code
from tfviz.classroom.live import LiveError
from tfviz.exercises import registry
from tfviz.ui.errors import safe_fragment
from tfviz.ui.exercise_widgets import cached_instance, show_step
from tfviz.ui.live_push import teacher_view
from tfviz.ui.live_session import NOTICE, STUDENT, TEACHER, TEACHER_PAGE, client, live_store


def _start() -> None:
    try:
        code, key = live_store().start(client=client(), **teacher_view(TEACHER_PAGE))
    except LiveError as err:
        st.session_state[NOTICE] = str(err)
        return
    st.session_state[TEACHER] = {"code": code, "key": key}
    st.session_state[STUDENT] = None
    st.session_state[NOTICE] = None


def _end() -> None:
    teaching = st.session_state.get(TEACHER)
    st.session_state[TEACHER] = None
    if teaching:
        try:
            live_store().end(teaching["code"], teaching["key"])
        except LiveError:
            pass  # already gone: nothing left to end


def teacher_panel() -> None:
    """Start or end a live session; show its join code large, for the projector."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        st.button("Start a live class", key="_live_start", on_click=_start, type="primary")
        return
    code = format_code(teaching["code"])
    st.markdown(f"<div style='font-size:4rem;font-weight:700;letter-spacing:0.1em;"
                f"font-family:monospace'>{code}</div>", unsafe_allow_html=True)
    st.markdown(f"Students type **{code}** under *Join a live class* in the sidebar, or open "
                f"this app's address with `?join={teaching['code']}` at the end.")
    st.button("End the live class", key="_live_end", on_click=_end)


def dashboard_rows():
    """The live class's summary rows for this teacher (an empty tuple before any answer), or
    None when this browser teaches no class (or the class has ended)."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return None
    try:
        return live_store().summary(teaching["code"], teaching["key"])
    except LiveError:
        return None


def class_dashboard() -> None:
    """What the class got wrong, live: per answer box, answered, right, the commonest slips.
    Refreshed every 2 s while this browser teaches a class; without one, nothing on a timer."""
    if st.session_state.get(TEACHER):
        _dashboard()


@safe_fragment(run_every=2.0)
def _dashboard() -> None:
    teaching = st.session_state.get(TEACHER)
    if not teaching:  # ended meanwhile: the page's next run draws no dashboard
        return
    try:
        rows = live_store().summary(teaching["code"], teaching["key"])
    except LiveError as err:
        st.session_state[TEACHER] = None
        st.session_state[NOTICE] = str(err)
        st.rerun(scope="app")
    if not rows:
        st.caption("No answers yet. Students' first try at each box of *20 · Worked "
                   "exercises* arrives here, without names.")
        return
    st.dataframe([{"exercise": registry.EXERCISES[r.exercise_id].title, "box": r.step,
                   "answered": r.answered, "right": r.right,
                   "most common slips": "; ".join(f"{s.count} {s.label}" for s in r.slips[:3])}
                  for r in rows], hide_index=True, key="_live_dashboard")


def worked_step_panel() -> None:
    """The teacher's page, in a live class: pick an answer box (the dashboard's rows first) and
    the worked step that computes it is drawn here, for the projector, with the numbers of the
    class code the students' sheets use."""
    from tfviz.classroom.catalog import STEPS, worked_steps

    rows = dashboard_rows()
    if rows is None:  # not teaching a live class
        return
    st.subheader("Show a worked step on the projector")
    answered = [(r.exercise_id, r.step) for r in rows]
    options = answered + [(e, b) for e, boxes in STEPS.items() for b in boxes if (e, b) not in answered]
    c1, c2 = st.columns([3, 2])
    choice = c1.selectbox("Answer box (the ones your class answered come first)", options, index=None,
                          key="_live_worked", placeholder="Pick a box…",
                          format_func=lambda o: f"{registry.EXERCISES[o[0]].title} · {o[1]}")
    code = c2.text_input("Class code on the students' sheets", key="_live_worked_code",
                         max_chars=40, placeholder="empty: the source's own numbers")
    if choice is None:
        return
    seed = registry.parse_class_code(code) if code.strip() else None
    if code.strip() and seed is None:
        st.warning("A class code is a whole number (digits only, up to 12); showing the source's "
                   "own numbers.")
    exercise_id, box = choice
    inst = cached_instance(exercise_id, seed)
    names = [f.name for f in inst.answer_fields]
    if box not in names:  # a variant may have fewer boxes (positional-table draws 3 or 4 rows)
        st.info(f"This variant of *{inst.title}* has no box {box}; its boxes are {', '.join(names)}.")
        return
    shown = worked_steps(inst.steps, box) or tuple(range(len(inst.steps)))
    st.markdown(f"**{inst.title}**, box **{inst.field(box).label}**: "
                + ("the step that computes it." if len(shown) < len(inst.steps)
                   else "it is read off the whole solution, so here is every step."))
    for i in shown:
        show_step(i + 1, inst.steps[i], inst.tokens, inst.focus)
    st.markdown(f"Answer: `{inst.field(box).answer_text}`")
