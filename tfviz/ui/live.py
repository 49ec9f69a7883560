"""Follow the teacher, on the pages: the sidebar's join box and the students' follower, and
the frame's one call, :func:`live_sidebar`, that draws them (or the teacher's push). The
sessions themselves live in ``tfviz.classroom.live`` (no streamlit there); what the parts on
the pages share in ``tfviz.ui.live_session``; the teacher's push of page, sentence, model and
view in ``tfviz.ui.live_push``; the teacher's page (start, join code, dashboard, worked step)
in ``tfviz.ui.live_teacher``.

- The teacher starts a session on the teacher's page; the join code goes on the projector, the
  key stays in this browser's ``st.session_state`` (never in the URL).
- On every run of any page the frame calls :func:`live_sidebar`. For the teacher it pushes the
  page, sentence and model, and each move of the charts' view (``tfviz.ui.live_push``).
- A student types the code (or opens a ``?join=CODE`` link, which the page's address keeps
  while they are in the class, so a reconnect to another replica joins again). The follower
  fragment's small script (``tfviz/ui/assets/live_watch.js``) holds a request open that the
  server answers when the class moves (``tfviz.ui.live_route``). A move of the charts' view
  alone is made there, in the browser. Anything else starts one run of the follower, which
  sets the text and model (the frame calls :func:`live_sidebar` before the sidebar's
  widgets, so a full run can set them), switches to the teacher's page (``st.switch_page``,
  the view keys in its query) or reruns the same page for a new text or model, and moves the
  instant charts' view in the browser.
- Only teachers and students in a class have fragments on a timer: a learner who never joins
  pays nothing; a student's follower runs every 10 s as a safety net, and a teacher's
  dashboard every 2 s while a class runs.
- Every answer a student's page sends says what became of it: saved for the class, or not
  sent and why (a store that does not answer: "the class is reconnecting"; a countdown that
  reached zero: "time was up").
- The room, without names: each following page says "here" at most every ``HEARTBEAT_S``
  (with a random token of its own, never sent with an answer), and has an "I'm lost" toggle;
  the teacher sees the counts. The question the teacher asks, and its countdown, show in the
  sidebar; the countdown ticks in the browser (``tfviz/ui/assets/countdown.js``).
"""
from __future__ import annotations

import time

import streamlit as st

from tfviz.classroom.codes import format_code, parse_code
from tfviz.classroom.live import LiveError, StoreDown, TimeUp, new_student
from tfviz.classroom.watch import SHOWN
from tfviz.textinput import MAX_URL_TEXT
from tfviz.ui.browser_code import asset, module_script
from tfviz.ui.cache import model_names
from tfviz.ui.errors import safe_fragment
from tfviz.ui.lessons import by_url
from tfviz.ui.live_push import forget_class, recall_class, teacher_beacon
from tfviz.ui.live_route import PATH, class_watch
from tfviz.ui.live_session import (FORGET, NOTICE, STUDENT, TEACHER, client, fragment_run,
                                   live_store)

SAFETY_POLL_S = 10.0  # the follower's own timer, for when the long poll cannot reach the server
HOLD_S = 10.0  # how long after a follow a page that lost it is taken to the teacher's again
CHECKIN_SEED = 0  # the check-in's options are shuffled once, the same for the whole class
SENT_STATUS = "_live_sent_status"  # (exercise or check-in, box) -> what became of the answer
HEARTBEAT_S = 10.0  # a following page says "here" at most this often (the room counts 30 s)
LOST = "_live_lost"  # the "I'm lost" toggle's key
# What a page compares with the long poll's reply: a reply that differs in any of these starts
# a run of the follower; one that differs in the view alone is made in the browser. The
# question's pacing counts once the reply carries it (``tfviz.classroom.watch.SHOWN``); until
# then a countdown reaches a student's page with the follower's next run (its timer).
SAME = ("lesson", "text", "model", "checkin_phase", "question", "deadline", "revealed", "resets")


def join(text: object) -> bool:
    """Join the class with code ``text``; a friendly notice if that fails."""
    try:
        state = live_store().state(text, client=client())
    except LiveError as err:
        st.session_state[NOTICE] = str(err)
        return False
    st.session_state[STUDENT] = {"code": state.code, "following": True, "applied": 0,
                                 "token": new_student()}  # for the room's count, never answers
    st.session_state[LOST] = False
    st.session_state[NOTICE] = None
    st.query_params["join"] = state.code  # a reconnect to another replica joins again
    return True


def _join_typed() -> None:
    join(st.session_state.get("_live_join", ""))
    st.session_state["_live_join"] = ""


def _set_following(on: bool) -> None:
    student = st.session_state.get(STUDENT)
    if student:
        student["following"] = on
        student["applied"] = 0  # catching up re-applies the teacher's state


def _leave() -> None:
    student = st.session_state.get(STUDENT)
    if student and st.session_state.get(LOST):
        try:  # the teacher's count drops now, not 30 s later
            live_store().set_lost(student["code"], student["token"], False, client=client())
        except LiveError:
            pass
    st.session_state[STUDENT] = None
    st.query_params.pop("join", None)


def _here(student: dict) -> None:
    """Say "here" to the room, at most every ``HEARTBEAT_S`` (a store that does not answer
    now is asked at the next run)."""
    now = time.monotonic()
    if now - student.get("here_at", float("-inf")) < HEARTBEAT_S:
        return
    try:
        live_store().heartbeat(student["code"], student["token"], client=client())
        student["here_at"] = now
    except LiveError:
        pass


def _lost_changed() -> None:
    student = st.session_state.get(STUDENT)
    if not student:
        return
    on = bool(st.session_state.get(LOST))
    try:
        live_store().set_lost(student["code"], student["token"], on, client=client())
        student["here_at"] = time.monotonic()
    except LiveError as err:
        st.session_state[LOST] = not on
        st.session_state[NOTICE] = f"Not sent to your teacher: {err}"


def _forget_reset(state, student: dict) -> None:
    """A box the teacher reset since this page sent its answer may be answered again: the page
    forgets that it sent it (the next Check sends the new try)."""
    seen = student.setdefault("resets", {})
    for exercise_id, box, n in state.resets:
        if seen.get((exercise_id, box), 0) < n:
            seen[(exercise_id, box)] = n
            student.setdefault("sent", set()).discard((exercise_id, box))
            st.session_state.get(SENT_STATUS, {}).pop((exercise_id, box), None)


def _question(state) -> None:
    """The question the teacher asks now, and its countdown (ticking in the browser)."""
    if not state.question:
        return
    from tfviz.exercises.registry import EXERCISES

    exercise_id, box = state.question
    title = EXERCISES[exercise_id].title if exercise_id in EXERCISES else exercise_id
    st.markdown(f"Your teacher asks: **{title}**, box **{box}** (*20 · Worked exercises*).")
    left = live_store().seconds_left(state)
    up = "Time is up: answers to this question are no longer counted."
    if left is None:
        return
    if left <= 0:
        st.warning(up)
        return
    # The countdown's element and the script that ticks it; drawn again (with the new time
    # left) whenever the follower runs, and stopped by the page once it is not drawn.
    st.html(f'<p role="timer" aria-live="off" style="font-size:1.6rem;font-weight:700;'
            f'margin:0" id="tfviz-countdown">{int(-(-left // 1)) // 60}:'
            f'{int(-(-left // 1)) % 60:02d} left</p>'
            + module_script("countdown.js", {"id": "tfviz-countdown", "left": left, "up": up}),
            unsafe_allow_javascript=True)


def _apply(state, url: str) -> None:
    """Take the student to the teacher's state. In a full run the frame calls this before the
    sidebar's widgets are drawn, so the text and model can be set; a run of the follower alone
    has to start a full run for them (and for a new page)."""
    student = st.session_state[STUDENT]
    if student.get("applied") != state.version:  # a new follow, not one made again (_undone)
        student["applied_at"] = time.monotonic()
        student["replaced"] = {k: st.session_state.get(k) for k in ("model", "text")}
    student["applied"] = state.version
    view = {"layer": str(state.layer), "head": str(state.head), "step": str(state.step)}
    moved = False
    if state.text and state.text != st.session_state.get("text"):
        st.session_state["text"], moved = state.text, True
    if state.model in model_names() and state.model != st.session_state.get("model"):
        st.session_state["model"], moved = state.model, True
    # The browser keeps its own view keys across pages (tfviz.ui.views), so the view is moved
    # there, by the script the follower draws (after the page switch if there is one).
    student["view"] = view
    page = by_url(state.lesson)
    # The server's copy of the URL gets the view too, so that charts drawn by this run or the
    # next (a new sentence re-draws them) start at the teacher's view, whenever the follower's
    # script runs in the browser.
    for k, v in view.items():
        if st.query_params.get(k) != v:
            st.query_params[k] = v
    if page is not None and state.lesson != url:
        st.switch_page(f"lessons/{page.file}", query_params={
            "model": st.session_state.get("model", ""),
            "text": st.session_state.get("text", "")[:MAX_URL_TEXT], **view,
            "join": student["code"]})
    if moved and fragment_run():  # same page: a run that keeps the page's elements in place
        st.rerun(scope="app")


def _undone(state, student: dict) -> bool:
    """Whether a follow first applied less than ``HOLD_S`` seconds ago has been undone: the
    model or text is back to what the follow replaced. A run that the browser asked for in the
    meantime (the follower's timer, a click) carries the sidebar's old model back in with it,
    which replaces the one just set; the class's version says that the follow was applied, so
    without this the student would stay behind until the teacher's next move. A student who
    picks something else on purpose keeps it (later, even the old one)."""
    if time.monotonic() - student.get("applied_at", float("-inf")) > HOLD_S:
        return False
    replaced = student.get("replaced", {})
    wanted = {"model": state.model if state.model in model_names() else None, "text": state.text}
    return any(want and (now := st.session_state.get(k)) != want and now == replaced.get(k)
               for k, want in wanted.items())


# The page waits for the teacher's next move with a request the server holds open
# (tfviz.ui.live_route); the reply starts one run of the follower. tfviz/ui/assets says how.
_watch = st.components.v2.component("tfviz_live_watch", js=asset("live_watch.js"))


def _moved() -> None:
    """The page heard that the class moved: this run of the follower applies it."""


@safe_fragment(run_every=SAFETY_POLL_S)
def _follower(url: str) -> None:
    student = st.session_state.get(STUDENT)
    if not student:
        return
    try:
        state = live_store().state(student["code"], client=client())
    except StoreDown as err:  # the class goes on; the next poll asks again
        st.warning(err.status())
        return
    except LiveError as err:
        st.session_state[STUDENT] = None
        st.session_state[NOTICE] = str(err)
        st.query_params.pop("join", None)
        st.rerun(scope="app")  # the sidebar drops the follower and shows why
    if st.query_params.get("join") != student["code"]:
        st.query_params["join"] = student["code"]  # kept in the URL, so a reconnect rejoins
    student.setdefault("token", new_student())  # a page that joined before the room existed
    _here(student)
    _forget_reset(state, student)
    _question(state)
    if student["following"]:
        st.caption(f"Following class **{format_code(student['code'])}**.")
        if state.version != student["applied"] or _undone(state, student):
            _apply(state, url)
        class_watch().allow(student["code"])  # this process answers the page's long poll
        student["runs"] = student.get("runs", 0) + 1
        _watch(key="_live_watch", on_moved_change=_moved, data={
            "path": PATH.removeprefix("/").format(code=student["code"]),
            "after": state.version, "run": student["runs"],  # a new run restarts the wait
            "same": {k: getattr(state, k) for k in SAME if k in SHOWN}})
        if state.checkin_phase:
            quiz = by_url("quiz")
            if quiz is not None and url != "quiz":
                st.page_link(f"lessons/{quiz.file}", icon=":material/quiz:",
                             label=f"Your teacher's check-in: {len(state.checkin)} questions")
        # Drawn on every run while following, the same until the teacher moves again: the
        # browser runs it when it appears or changes, never twice for the same body. Drawn
        # for one run only, a browser that never ran it would keep its old view keys, which
        # charts drawn anew adopt.
        if student.get("view"):
            st.html(module_script("view_move.js", {"view": student["view"],
                                                   "stamp": student["applied"]}),
                    unsafe_allow_javascript=True)
    else:
        st.caption(f"Exploring on your own; class **{format_code(student['code'])}** goes on.")


def live_sidebar(url: str) -> None:
    """The frame's call on every run (``url``: the page's URL path, "home" for the home page)."""
    if STUDENT not in st.session_state:  # once per browser session: a class it taught, or a
        st.session_state[STUDENT] = None  # ?join=CODE link
        if (taught := recall_class()) is not None:
            st.session_state[TEACHER] = taught
        elif (link := st.query_params.get("join")) and parse_code(link):
            join(link)
    with st.sidebar:
        if st.session_state.pop(FORGET, False):
            forget_class()
        if st.session_state.get(NOTICE):
            st.info(st.session_state[NOTICE])
        if st.session_state.get(TEACHER):
            teacher_beacon(url)  # pushes now, and every second after
            return
        student = st.session_state.get(STUDENT)
        if not student:
            st.text_input("Join a live class", key="_live_join", on_change=_join_typed,
                          max_chars=40, placeholder="code from the projector, e.g. K7QM-4XPD",
                          help="Your teacher's screen shows a join code. With it, this app "
                               "follows the teacher's page, sentence, model, layer and head.")
            return
        _follower(url)
        st.toggle("I'm lost", key=LOST, on_change=_lost_changed,
                  help="Your teacher sees how many students have this on, never who. Turn it "
                       "off when you are back on track.")
        left, right = st.columns(2)
        if student["following"]:
            left.button("Explore on my own", key="_live_explore", on_click=_set_following,
                        args=(False,))
        else:
            left.button("Catch up", key="_live_catch_up", on_click=_set_following, args=(True,),
                        type="primary")
        right.button("Leave class", key="_live_leave", on_click=_leave)


def _send(box: tuple[str, str], send) -> None:
    """Send one answer of a following student, first graded try per box only, and remember
    what became of it: saved (the store has it for good), or not, and why (then the box may
    be sent again: nothing is marked sent that was not)."""
    student = st.session_state.get(STUDENT)
    if not student:
        return
    sent = student.setdefault("sent", set())
    if box in sent:
        return
    status = st.session_state.setdefault(SENT_STATUS, {})
    try:
        send(student["code"])
    except StoreDown as err:
        status[box] = f"Not sent to your class: {err}"
        return
    except TimeUp as err:  # final for this question, unless the teacher resets it
        status[box] = f"Not counted: {err}"
        sent.add(box)
        return
    except LiveError as err:
        status[box] = f"Not sent to your class: {err}"
        st.session_state[NOTICE] = str(err)
        sent.add(box)  # a refusal (class ended, full) is final: do not try again
        return
    sent.add(box)
    status[box] = "Saved for your class's dashboard (anonymously)."


def report_answer(exercise_id: str, box: str, fb) -> None:
    """Send a following student's first graded try at a box to the class, anonymously (the
    browser remembers which boxes it sent; the store keeps only the answers)."""
    if fb.valid:
        _send((exercise_id, box), lambda code: live_store().submit_answer(
            code, exercise_id, box, fb.correct, None if fb.correct else fb.mistake,
            client=client()))


def report_checkin(phase: str, question_id: str, fb) -> None:
    """Send a following student's first graded try at a check-in question."""
    if fb is not None and fb.valid:
        _send((f"check-in:{phase}", question_id), lambda code: live_store().submit_checkin(
            code, phase, question_id, fb.correct, client=client()))


def answer_status(exercise_id: str, box: str) -> str | None:
    """What became of this box's answer in the live class (None outside a class)."""
    if not st.session_state.get(STUDENT):
        return None
    return st.session_state.get(SENT_STATUS, {}).get((exercise_id, box))


def open_checkin():
    """(phase, question ids) of the check-in the class has open now, or None."""
    student = st.session_state.get(STUDENT)
    if not student:
        return None
    try:
        state = live_store().state(student["code"], client=client())
    except LiveError:
        return None
    return (state.checkin_phase, state.checkin) if state.checkin_phase else None
