"""The room and its pacing, on the teacher's page: how many students are here and how many
have answered the question asked now, how many say they are lost (never who), and the
teacher's controls: ask one answer box as the question, give it a countdown, reveal its
results (hidden until then, so the room does not copy the first bar), or reset its answers.

Everything goes through the store (``tfviz.classroom.live``: ``room``, ``ask``,
``start_countdown``, ``reveal``, ``reset_question``), so it holds across replicas; the panel
is a fragment that reads the room every 2 s, one read of the store.
"""
from __future__ import annotations

import streamlit as st

from tfviz.classroom.catalog import STEPS
from tfviz.classroom.live import MAX_COUNTDOWN_S, LiveError, StoreDown
from tfviz.ui.errors import safe_fragment
from tfviz.ui.live_session import NOTICE, TEACHER, live_store

PICK = "_live_question_pick"
SECONDS = "_live_countdown_s"
RESETTING = "_live_resetting"  # the question whose reset waits for its confirmation
SAID = "_live_room_said"  # what the last control did, or why it could not (shown in the panel:
# a button here reruns the panel alone, so the sidebar's notice would wait for a full run)
BOXES = tuple((e, b) for e, boxes in STEPS.items() for b in boxes)


def box_name(box) -> str:
    from tfviz.exercises.registry import EXERCISES

    exercise_id, step = box
    title = EXERCISES[exercise_id].title if exercise_id in EXERCISES else exercise_id
    return f"{title} · {step}"


def _call(method: str, *args, **kwargs) -> object:
    """A teacher's call on the store; None (with the reason in the notice) when it failed."""
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return None
    try:
        out = getattr(live_store(), method)(teaching["code"], teaching["key"], *args, **kwargs)
    except LiveError as err:
        st.session_state[SAID] = str(err)
        return None
    st.session_state[SAID] = None
    return out


EXERCISES_PAGE = "exercises"  # 20 · Worked exercises, where every answer box is


def _ask() -> None:
    """Ask the picked box, and take the class to the worked exercises, where it is answered
    (a following student's page goes where the class is, so it has to be there)."""
    picked = st.session_state.get(PICK)
    if picked is not None and _call("ask", *picked) is not None:
        _call("update", lesson=EXERCISES_PAGE)


def _countdown() -> None:
    _call("start_countdown", int(st.session_state.get(SECONDS) or 60))


def _reset(box) -> None:
    st.session_state[RESETTING] = None
    dropped = _call("reset_question", *box)
    if dropped is not None:
        st.session_state[SAID] = (f"Reset {box_name(box)}: {dropped} answer"
                                    f"{'' if dropped == 1 else 's'} forgotten. Students may "
                                    "answer it again.")


def room_panel() -> None:
    """The room's counts and the pacing controls (nothing without a class)."""
    if st.session_state.get(TEACHER):
        _room()


@safe_fragment(run_every=2.0)
def _room() -> None:
    teaching = st.session_state.get(TEACHER)
    if not teaching:
        return
    try:
        room = live_store().room(teaching["code"], teaching["key"])
    except StoreDown as err:
        st.warning(err.status())
        return
    except LiveError as err:
        st.session_state[TEACHER] = None
        st.session_state[NOTICE] = str(err)
        st.rerun(scope="app")
    if st.session_state.get(SAID):
        st.info(st.session_state[SAID])
    here, answered, lost = st.columns(3)
    here.metric("Here now", room.present, help="Students whose page said so in the last 30 s.")
    answered.metric("Answered the question", room.answered if room.question else "–",
                    help="Answers to the question asked now (first tries, no names).")
    lost.metric("I'm lost", room.lost, help="Students here with “I'm lost” on.")

    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.selectbox("Question", BOXES, index=None, key=PICK, format_func=box_name,
                 placeholder="Pick an answer box…")
    c2.button("Ask it", key="_live_ask", on_click=_ask, type="primary")
    if not room.question:
        st.caption("No question asked. Pick an answer box of *20 · Worked exercises*: every "
                   "student sees it, with its countdown, and its answers are counted here.")
        return
    st.markdown(f"### Asked: {box_name(room.question)}")
    t1, t2, t3 = st.columns([1, 1, 1], vertical_alignment="bottom")
    t1.number_input("Countdown (seconds)", 5, MAX_COUNTDOWN_S, 60, step=15, key=SECONDS)
    if room.seconds_left is None:
        t2.button("Start the countdown", key="_live_countdown", on_click=_countdown)
        st.caption("No countdown: answers are taken until you start one.")
    else:
        t2.button("Stop the countdown", key="_live_countdown_stop", on_click=_call,
                  args=("stop_countdown",))
        if room.seconds_left > 0:
            s = int(-(-room.seconds_left // 1))
            st.markdown(f"**{s // 60}:{s % 60:02d} left**: every student's page counts down.")
        else:
            st.markdown("**Time is up**: later answers are refused, in words, on the students' "
                        "pages.")
    t3.button("Ask no question", key="_live_unask", on_click=_call, args=("ask", None))

    r1, r2 = st.columns(2)
    if room.revealed:
        r1.button("Hide the results", key="_live_hide", on_click=_call, args=("reveal", False))
    else:
        r1.button("Reveal the results", key="_live_reveal", on_click=_call, args=("reveal", True),
                  type="primary")
    if st.session_state.get(RESETTING) == room.question:
        r2.warning(f"Forget all {room.answered} answers to this question?")
        y, n = r2.columns(2)
        y.button("Yes, reset it", key="_live_reset_yes", on_click=_reset, args=(room.question,))
        n.button("Keep them", key="_live_reset_no", on_click=st.session_state.__setitem__,
                 args=(RESETTING, None))
    else:
        r2.button("Reset this question…", key="_live_reset",
                  on_click=st.session_state.__setitem__, args=(RESETTING, room.question))
    _results(teaching, room)


def _results(teaching: dict, room) -> None:
    """The current question's results, large, for the projector: only once revealed."""
    if not room.revealed:
        st.info(f"Results hidden: {room.answered} answered. Reveal them when the room is ready.")
        return
    try:
        rows = live_store().summary(teaching["code"], teaching["key"])
    except LiveError as err:
        st.caption(err.status())
        return
    row = next((r for r in rows if (r.exercise_id, r.step) == room.question), None)
    if row is None:
        st.markdown("## No answers yet")
        return
    share = f"{100 * row.right / row.answered:.0f}%" if row.answered else "–"
    st.markdown(f"## {row.right} of {row.answered} right ({share})")
    for s in row.slips[:3]:
        st.markdown(f"#### {s.count} {s.label}")
