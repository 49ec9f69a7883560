"""The teacher's page in a live class: start and end the session, the join code large for the
projector, the class's answers live (what it got wrong, box by box, without names), and the
worked step behind any answer box, drawn for the projector.

The session's state is in ``tfviz.classroom.live``; the teacher's push of page and view, on
every page, in ``tfviz.ui.live_push``; how students join (the QR code) in
``tfviz.ui.live_join``; the room and its pacing in ``tfviz.ui.live_room``. Only a browser that
teaches a class has fragments on a timer here (the dashboard and the room, every 2 s).

Ending asks first, naming how many answers have not been downloaded; an ended class's answers
stay downloadable with its key for a day (the store keeps them, then sweeps them), here or in
another browser through *Take back a class*.
"""
from __future__ import annotations

import time

import streamlit as st

from tfviz.classroom.checkin import MAX_QUESTIONS, MIN_QUESTIONS
from tfviz.classroom.codes import format_code, parse_code
from tfviz.classroom.export import answers_csv, summary_csv
from tfviz.classroom.live import REMEMBER_GONE_S, LiveError, SessionGone, StoreDown
from tfviz.exercises import registry
from tfviz.exercises.quiz import QUESTIONS, question_by_id
from tfviz.ui.errors import safe_fragment
from tfviz.ui.exercise_widgets import cached_instance, show_step
from tfviz.ui.live_join import join_card
from tfviz.ui.live_push import teacher_view
from tfviz.ui.live_session import (FORGET, NOTICE, STUDENT, TEACHER, TEACHER_PAGE, client,
                                   live_store)


ENDED = "_live_ended"  # {"code", "key", "at"}: the class this browser ended (answers kept a day)
ENDING = "_live_ending"  # True while "End" waits for its confirmation


def _teach(code: str, key: str) -> None:
    """This browser drives class ``code`` from now on (and follows none)."""
    st.session_state[TEACHER] = {"code": code, "key": key}
    st.session_state[STUDENT] = None
    st.session_state[NOTICE] = None
    st.session_state[ENDED] = None


def _start() -> None:
    try:
        code, key = live_store().start(client=client(), **teacher_view(TEACHER_PAGE))
    except LiveError as err:
        st.session_state[NOTICE] = str(err)
        return
    _teach(code, key)


def _end() -> None:
    st.session_state[ENDING] = False
    teaching = st.session_state.get(TEACHER)
    if teaching:
        try:
            live_store().end(teaching["code"], teaching["key"])
        except StoreDown as err:  # not ended: keep teaching, say why
            st.session_state[NOTICE] = str(err)
            return
        except LiveError:
            pass  # already gone: nothing left to end
        st.session_state[ENDED] = {**teaching, "at": time.time()}
    st.session_state[TEACHER] = None
    st.session_state[FORGET] = True


def _resume() -> None:
    """Take back a class this teacher started (after a server restart, or in a new tab)."""
    code = parse_code(st.session_state.get("_live_resume_code", ""))
    key = str(st.session_state.get("_live_resume_key", "")).strip()
    try:
        if code is None:
            raise LiveError("A join code is 8 letters and digits, like K7QM-4XPD.")
        live_store().summary(code, key)  # checks the key, and that the class is still live
    except SessionGone as gone:  # ended or expired: its answers may still be downloaded
        try:
            live_store().not_downloaded(code, key)  # checks the key; a closed class's day
        except LiveError as err:
            st.session_state[NOTICE] = str(err)
            return
        st.session_state[ENDED] = {"code": code, "key": key, "at": None}
        st.session_state[NOTICE] = f"{gone} Its answers can still be downloaded below."
        st.session_state["_live_resume_key"] = ""
        return
    except LiveError as err:
        st.session_state[NOTICE] = str(err)
        return
    _teach(code, key)
    st.session_state["_live_resume_key"] = ""


def teacher_panel() -> None:
    """Start or end a live session; show its join code large, for the projector."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        st.button("Start a live class", key="_live_start", on_click=_start, type="primary")
        with st.expander("Take back a class you started (after a restart, or in another tab)"):
            with st.form("_live_resume_form", border=False):
                st.text_input("Join code", key="_live_resume_code", max_chars=40)
                st.text_input("Teacher key", key="_live_resume_key", type="password",
                              max_chars=64)
                st.form_submit_button("Take the class back", on_click=_resume)
        return
    st.markdown(f"Live class **{format_code(teaching['code'])}** is running: its join code "
                "and QR code are in the next step.")
    with st.expander("Your teacher key (keep it off the projector)"):
        st.markdown("With the join code, this key gives you the class back if this tab closes "
                    "or the server restarts: *Take back a class you started*. Anyone who has it "
                    "can move your class.")
        st.code(teaching["key"], language=None)
    if not st.session_state.get(ENDING):
        st.button("End the live class…", key="_live_end",
                  on_click=st.session_state.__setitem__, args=(ENDING, True),
                  help="Asks first, and says how many answers you have not downloaded.")
        return
    try:
        left = live_store().not_downloaded(teaching["code"], teaching["key"])
    except LiveError as err:
        left = None
        st.caption(err.status())
    unsaved = ("you have downloaded every answer" if left == 0 else
               "the store could not say how many answers you have not downloaded"
               if left is None else
               f"**{left} answer{'' if left == 1 else 's'} {'has' if left == 1 else 'have'} not "
               "been downloaded**")
    st.warning(f"End class {format_code(teaching['code'])} for everyone? So far {unsaved}. "
               f"After it ends, its answers stay downloadable here (or with its code and key) "
               f"for {REMEMBER_GONE_S / 3600:g} hours, then are deleted.")
    y, n = st.columns(2)
    y.button("Yes, end the class", key="_live_end_yes", on_click=_end, type="primary")
    n.button("Keep teaching", key="_live_end_no", on_click=st.session_state.__setitem__,
             args=(ENDING, False))


def dashboard_rows():
    """The live class's summary rows for this teacher (an empty tuple before any answer), or
    None when this browser teaches no class (or the class has ended)."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return None
    try:
        return live_store().summary(teaching["code"], teaching["key"])
    except StoreDown:
        return ()
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
        state = live_store().state(teaching["code"])
    except StoreDown as err:
        st.warning(err.status())
        return
    except LiveError as err:
        st.session_state[TEACHER] = None
        st.session_state[NOTICE] = str(err)
        st.rerun(scope="app")
    if not rows:
        st.caption("No answers yet. Students' first try at each box of *20 · Worked "
                   "exercises* arrives here, without names.")
        return
    # The question asked now keeps its results hidden until revealed: this table is on the
    # projector too.
    hidden = tuple(state.question) if state.question and not state.revealed else None
    st.dataframe([{"exercise": registry.EXERCISES[r.exercise_id].title, "box": r.step,
                   "answered": r.answered,
                   "right": "hidden" if (r.exercise_id, r.step) == hidden else str(r.right),
                   "most common slips": "hidden until you reveal them"
                   if (r.exercise_id, r.step) == hidden else
                   "; ".join(f"{s.count} {s.label}" for s in r.slips[:3])}
                  for r in rows], hide_index=True, key="_live_dashboard")


def worked_step_panel() -> None:
    """The teacher's page, in a live class: pick an answer box (the dashboard's rows first) and
    the worked step that computes it is drawn here, for the projector, with the numbers of the
    class code the students' sheets use."""
    from tfviz.classroom.catalog import STEPS, worked_steps

    rows = dashboard_rows()
    if rows is None:  # not teaching a live class
        return
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


def _teaching_call(method: str, *args):
    """A teacher's call on the store; None (with the reason in the notice) if it failed."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return None
    try:
        return getattr(live_store(), method)(teaching["code"], teaching["key"], *args)
    except LiveError as err:
        st.session_state[NOTICE] = str(err)
        return None


def join_panel() -> None:
    """The QR code, the join code and the address, for the projector (while teaching)."""
    teaching = st.session_state.get(TEACHER)
    if teaching:
        join_card(teaching["code"])
    else:
        st.caption("Start a live class above: its QR code and join code appear here.")


def downloads() -> None:
    """The class's answers as CSV, and a summary per question, for the teacher to take home.
    The files are made when the button is pressed, so they hold every answer up to then (the
    page may have been drawn before the first answer came). Streamlit makes them on a thread of
    its own, outside any run of this browser's script, where ``st.session_state`` is not this
    browser's: so they read the class through the store, code and key taken here, never the
    session. A class that has ended or a store that does not answer raises there, and the
    browser says the download failed (rather than saving a file with no answers)."""
    teaching = st.session_state.get(TEACHER) or st.session_state.get(ENDED)
    if not teaching:
        return
    ended = not st.session_state.get(TEACHER)
    store, code, key = live_store(), teaching["code"], teaching["key"]
    stem = f"live-class-{code}"
    if ended:
        gone = teaching["at"] + REMEMBER_GONE_S if teaching.get("at") else None
        until = (f"until {time.strftime('%H:%M UTC on %d %b', time.gmtime(gone))}" if gone
                 else f"for {REMEMBER_GONE_S / 3600:g} hours after it ended")
        st.info(f"Class {format_code(code)} has ended. Its answers can be downloaded {until}.")

    def answers() -> str:
        return answers_csv(store.export_rows(code, key))

    def summary() -> str:
        return summary_csv(store.summary(code, key, closed_ok=True),
                           store.checkin_summary(code, key, closed_ok=True))

    d1, d2 = st.columns(2)
    d1.download_button("⬇️ Every answer (CSV)", answers, f"{stem}-answers.csv", "text/csv",
                       key="_live_dl_answers", on_click="ignore")
    d2.download_button("⬇️ Summary per question (CSV)", summary, f"{stem}-summary.csv", "text/csv",
                       key="_live_dl_summary", on_click="ignore")
    st.caption("One line per answer (exercise, box, right or not, the slip, the time in UTC), "
               f"without names. They are deleted {REMEMBER_GONE_S / 3600:g} hours after the "
               "class ends.")


def _ask(phase: str) -> None:
    picked = st.session_state.get("_live_checkin_pick") or []
    if _teaching_call("open_checkin", picked, phase) is not None:
        st.session_state[NOTICE] = None


def checkin_panel() -> None:
    """Pick 3-5 quiz questions, ask them before the lesson and again after it, and see each
    question's share right before and after, side by side."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return
    st.markdown(f"Pick {MIN_QUESTIONS} to {MAX_QUESTIONS} quiz questions and ask them before "
                "you teach; ask the same ones again afterwards. Your students answer at the top "
                "of *21 · Quiz*; the table shows what the lesson changed.")
    titles = {q.id: f"{q.prompt[:90]}{'…' if len(q.prompt) > 90 else ''}" for q in QUESTIONS}
    st.multiselect("Questions", list(titles), key="_live_checkin_pick",
                   max_selections=MAX_QUESTIONS, format_func=titles.__getitem__)
    b1, b2, b3 = st.columns(3)
    b1.button("Ask before the lesson", key="_live_ask_before", on_click=_ask, args=("before",))
    b2.button("Ask after the lesson", key="_live_ask_after", on_click=_ask, args=("after",))
    b3.button("Close the check-in", key="_live_checkin_close", on_click=_teaching_call,
              args=("close_checkin",))
    _checkin_results()


@safe_fragment(run_every=2.0)
def _checkin_results() -> None:
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return
    try:
        state = live_store().state(teaching["code"])
        rows = live_store().checkin_summary(teaching["code"], teaching["key"])
    except LiveError as err:
        st.caption(err.status())
        return
    if state.checkin_phase:
        st.info(f"Open now: the check-in *{state.checkin_phase}* the lesson, "
                f"{len(state.checkin)} questions.")
    if not rows:
        st.caption("No check-in answers yet.")
        return
    st.dataframe([{"question": question_by_id(r.question_id).prompt[:80],
                   "right before": f"{r.share(r.before)} of {r.before[1]}",
                   "right after": f"{r.share(r.after)} of {r.after[1]}"}
                  for r in rows], hide_index=True, key="_live_checkin_table")
