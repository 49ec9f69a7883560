"""Follow the teacher in the real app frame: a teacher's AppTest and students' AppTests share the
server's store (st.cache_resource), as browsers on one server do. AppTest runs no JavaScript and
no timers: each ``run()`` stands for one poll of the students' fragment."""
from __future__ import annotations

import base64
import json
import re
import time

import numpy as np

from tfviz.exercises.registry import make_instance
from tfviz.exercises.fmt import fmt_values
from tfviz.ui.live_session import STUDENT, TEACHER, live_store

from tests.app.conftest import APP

TEACHER_PAGE = "22_teacher.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _teacher():
    from streamlit.testing.v1 import AppTest
    at = _ok(AppTest.from_file(APP, default_timeout=90).run())
    _ok(at.switch_page(f"lessons/{TEACHER_PAGE}").run())
    _ok(at.button(key="_live_start").click().run())
    return at


def _student(code: str | None = None):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(APP, default_timeout=90)
    if code:
        at.query_params["join"] = code
    return _ok(at.run())


def _title(at) -> str:
    return at.title[0].value


def _view_moves(at) -> list[dict]:
    """The view the student's browser is told to show (the follower's small script)."""
    out = []
    for el in at.get("html"):
        body = el.proto.body
        if "__tfvizViewMoves" in body:  # tfviz/ui/assets/view_move.js, its data after it
            out.append(json.loads(body.split("start(window, ")[-1].split(");")[0])["view"])
    return out


def test_students_follow_detach_and_catch_up():
    teacher = _teacher()
    teaching = teacher.session_state[TEACHER]
    code = teaching["code"]
    assert any(code[:4] in m.value for m in teacher.markdown)  # the join code, large
    assert teaching["key"] not in " ".join(str(m.value) for m in teacher.markdown)

    _ok(teacher.switch_page("lessons/05_self_attention.py").run())
    _ok(teacher.text_area(key="_typed").set_value("flying arrows").run())

    typed = _student()  # one student types the code, one opens the ?join= link
    _ok(typed.text_input(key="_live_join").set_value(f" {code[:4].lower()}-{code[4:]} ").run())
    linked = _student(code)
    for student in (typed, linked):
        _ok(student.run())  # a poll
        assert _title(student) == "Self-attention, step by step"
        assert student.session_state["text"] == "flying arrows"
        assert student.session_state[STUDENT]["following"]
        assert TEACHER not in student.session_state or not student.session_state[TEACHER]

    # The teacher moves the charts' view (the browser writes it into the URL; a run reads it):
    # the students' charts move in their browsers, without a page change.
    teacher.query_params["layer"], teacher.query_params["head"] = "2", "1"
    _ok(teacher.run())
    assert (live_store().state(code).layer, live_store().state(code).head) == (2, 1)
    _ok(linked.run())
    assert _view_moves(linked)[-1] == {"layer": "2", "head": "1", "step": "0"}
    # A poll with nothing new draws the same script again (the browser runs a body once): a
    # browser that missed it in one run still gets it (tfviz.ui.live._follower).
    drawn = [el.proto.body for el in linked.get("html") if "Object.assign" in el.proto.body]
    _ok(linked.run())
    assert [el.proto.body for el in linked.get("html") if "Object.assign" in el.proto.body] == drawn

    # One student explores; the teacher moves on; only the other follows.
    _ok(typed.button(key="_live_explore").click().run())
    assert _view_moves(typed) == []  # an explorer's view is their own
    _ok(teacher.switch_page("lessons/08_masking.py").run())
    _ok(typed.run())
    _ok(linked.run())
    assert _title(linked) != _title(typed) == "Self-attention, step by step"
    assert _view_moves(linked)[-1]["layer"] == str(live_store().state(code).layer)  # after the switch
    masking = _title(linked)
    # What the explorer does stays theirs, and never moves the class.
    version = live_store().state(code).version
    _ok(typed.text_area(key="_typed").set_value("the cat sat").run())
    assert live_store().state(code).version == version
    assert teacher.session_state["text"] == "flying arrows"
    # Catch up: back to the teacher's page and sentence.
    _ok(typed.button(key="_live_catch_up").click().run())
    _ok(typed.run())
    assert _title(typed) == masking and typed.session_state["text"] == "flying arrows"

    # The teacher ends the class: students get a friendly word and stop following.
    _ok(teacher.switch_page(f"lessons/{TEACHER_PAGE}").run())
    _ok(teacher.button(key="_live_end").click().run())  # asks first
    assert live_store().state(code).version  # not ended yet
    _ok(teacher.button(key="_live_end_yes").click().run())
    _ok(linked.run())
    _ok(linked.run())
    assert linked.session_state[STUDENT] is None
    assert any("ended this live session" in i.value for i in linked.info)


def test_two_classes_on_one_server_stay_apart():
    first, second = _teacher(), _teacher()
    _ok(first.switch_page("lessons/05_self_attention.py").run())
    _ok(second.switch_page("lessons/09_layernorm.py").run())
    _ok(second.text_area(key="_typed").set_value("how are you").run())
    a = _student(first.session_state[TEACHER]["code"])
    b = _student(second.session_state[TEACHER]["code"])
    _ok(a.run())
    _ok(b.run())
    assert _title(a) == "Self-attention, step by step"
    assert _title(b) != _title(a) and b.session_state["text"] == "how are you"
    assert a.session_state["text"] != "how are you"


def test_a_wrong_code_gets_a_friendly_message():
    student = _student()
    _ok(student.text_input(key="_live_join").set_value("ZZZZ-ZZZZ").run())
    assert student.session_state[STUDENT] is None
    assert any("No live class has the code ZZZZ-ZZZZ" in i.value for i in student.info)
    _ok(student.text_input(key="_live_join").set_value("<b>hi</b>").run())
    assert any("like K7QM-4XPD" in i.value for i in student.info)


def test_first_tries_reach_the_dashboard_anonymously():
    teacher = _teacher()
    code = teacher.session_state[TEACHER]["code"]
    inst = make_instance("flying-arrows")
    box = inst.field("weights")
    slip = next(m for m in box.mistakes if m.name == "no_scale")
    ikey = "flying-arrows:source"
    for _ in range(2):
        student = _student(code)
        _ok(student.switch_page("lessons/20_exercises.py").run())
        student.text_input(key=f"ex_ans_{ikey}_weights").set_value(fmt_values(slip.values))
        _ok(student.button(key=f"ex_check_{ikey}_weights").click().run())
        # A second try at the same box is not sent: the dashboard counts first tries.
        right = " ".join(repr(float(x)) for x in np.ravel(box.expected))
        student.text_input(key=f"ex_ans_{ikey}_weights").set_value(right)
        _ok(student.button(key=f"ex_check_{ikey}_weights").click().run())
    _ok(teacher.run())
    (row,) = live_store().summary(code, teacher.session_state[TEACHER]["key"])
    assert (row.exercise_id, row.step, row.answered, row.right) == ("flying-arrows", "weights", 2, 0)
    assert row.lines() == ["2 answered, 0 right", "2 forgot to divide by √d_k"]
    table = teacher.dataframe[0].value
    assert table.iloc[0]["most common slips"] == "2 forgot to divide by √d_k"

    # A click shows the worked step of that box on the projector: the box the class answered is
    # offered first, and the step drawn is the one whose numbers are that box (Softmax, step 4).
    pick = teacher.selectbox(key="_live_worked")
    assert pick.options[0] == "Flying arrows: one attention head by hand · weights"
    _ok(pick.set_value(("flying-arrows", "weights")).run())
    shown = " ".join(m.value for m in teacher.markdown)
    assert "**Step 4 · Softmax**" in shown and "Step 3 · Scale" not in shown
    assert f"Answer: `{box.answer_text}`" in shown
    # With the class code of the students' sheets, that variant's numbers.
    _ok(teacher.text_input(key="_live_worked_code").set_value("7").run())
    variant = make_instance("flying-arrows", 7).field("weights")
    assert f"Answer: `{variant.answer_text}`" in " ".join(m.value for m in teacher.markdown)
    assert variant.answer_text != box.answer_text
    # A box read off the whole solution shows every step.
    _ok(teacher.text_input(key="_live_worked_code").set_value("").run())
    _ok(teacher.selectbox(key="_live_worked").set_value(("bpe-merges", "merges")).run())
    bpe = make_instance("bpe-merges")
    shown = " ".join(m.value for m in teacher.markdown)
    assert all(f"**Step {i} · {s.title}**" in shown for i, s in enumerate(bpe.steps, start=1))


def test_a_teachers_own_run_is_never_pushed_to_the_class(monkeypatch):
    """A training-lab run lives in the teacher's session only: the class keeps the shared model
    and its sentence, and never gets the run's name or its task text (on gpt-tiny)."""
    from streamlit.testing.v1 import AppTest

    from tfviz.ui import own_model

    def script():
        import json

        import streamlit as st

        from tfviz.ui.live_push import teacher_view
        st.session_state["text"], st.session_state["model"] = "<bos> c g f <sep>", "my run 1: sort"
        st.code(json.dumps(teacher_view("self-attention")))

    monkeypatch.setattr(own_model, "chosen", lambda: object())
    pushed = json.loads(AppTest.from_function(script).run().code[0].value)
    assert pushed["lesson"] == "self-attention" and "layer" in pushed
    assert "text" not in pushed and "model" not in pushed
    monkeypatch.setattr(own_model, "chosen", lambda: None)  # a shared model is pushed as before
    pushed = json.loads(AppTest.from_function(script).run().code[0].value)
    assert pushed["model"] == "my run 1: sort" and pushed["text"] == "<bos> c g f <sep>"


def test_a_follow_undone_by_the_browsers_old_model_is_made_again():
    """A run the student's browser asks for between the follow and its drawing (the follower's
    timer, a click) carries the sidebar's old model back in; the follower sets the teacher's
    again. Later, a student's own pick stays theirs."""
    teacher = _teacher()
    code = teacher.session_state[TEACHER]["code"]
    _ok(teacher.switch_page("lessons/07_multihead.py").run())
    linked = _student(code)
    _ok(linked.run())
    assert linked.session_state["model"] == "gpt-tiny"
    _ok(teacher.selectbox(key="model").set_value("bert-tiny").run())
    assert live_store().state(code).model == "bert-tiny"
    _ok(linked.run())  # the poll that follows
    assert linked.session_state["model"] == "bert-tiny"
    # the browser's stale box: the model the follow replaced comes back with a run
    _ok(linked.selectbox(key="model").set_value("gpt-tiny").run())
    _ok(linked.run())
    assert linked.session_state["model"] == "bert-tiny"
    assert linked.selectbox(key="model").value == "bert-tiny"
    # long after the follow, the student's own pick stays
    linked.session_state[STUDENT]["applied_at"] -= 60
    _ok(linked.selectbox(key="model").set_value("gpt-tiny").run())
    _ok(linked.run())
    assert linked.session_state["model"] == "gpt-tiny"
    # and any other model is the student's own at once
    _ok(teacher.selectbox(key="model").set_value("moe-tiny").run())
    _ok(linked.run())
    assert linked.session_state["model"] == "moe-tiny"
    _ok(linked.selectbox(key="model").set_value("bert-tiny").run())
    _ok(linked.run())
    assert linked.session_state["model"] == "bert-tiny"


# -- joining by QR code; the room and its pacing; ending without losing a thing ------------

def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _sidebar_text(at) -> str:
    return " ".join([*(m.value for m in at.sidebar.markdown),
                     *(w.value for w in at.sidebar.warning),
                     *(h.proto.body for h in at.sidebar.get("html"))])


def _answer_weights(student, right: bool):
    inst = make_instance("flying-arrows")
    box = inst.field("weights")
    values = box.expected if right else next(m for m in box.mistakes if m.name == "no_scale").values
    ikey = "flying-arrows:source"
    student.text_input(key=f"ex_ans_{ikey}_weights").set_value(
        " ".join(repr(float(x)) for x in np.ravel(values)))
    return _ok(student.button(key=f"ex_check_{ikey}_weights").click().run())


def _statuses(student) -> str:
    return " ".join(c.value for c in student.caption) + " ".join(i.value for i in student.info)


def test_a_teacher_runs_the_room_from_the_projector(monkeypatch):
    from tests.unit.classroom.test_qr import _decode, _modules

    monkeypatch.setenv("TFVIZ_PUBLIC_URL", "http://10.0.0.5:8501/")
    teacher = _teacher()
    teaching = teacher.session_state[TEACHER]
    code, key = teaching["code"], teaching["key"]
    store = live_store()

    # Joining: the QR code on the teacher's page decodes to the class's address; the code is
    # there in large type, and the address in words.
    (card,) = [h.proto.body for h in teacher.get("html") if "tfviz-join" in h.proto.body]
    link = f"http://10.0.0.5:8501/?join={code}"
    src = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', card)[1]
    svg = base64.b64decode(src).decode()
    assert _decode(_modules(svg)) == link
    assert f"{code[:4]}-{code[4:]}" in card and link in card
    assert f'alt="QR code: open {link} to join class {code[:4]}-{code[4:]}"' in card

    # One student types the code in lower case, with a space and look-alikes; one opens the link.
    typed_code = code.lower().replace("0", "o").replace("1", "l").replace("v", "u")
    typed = _student()
    _ok(typed.text_input(key="_live_join").set_value(f"{typed_code[:4]} {typed_code[4:]}").run())
    linked = _student(code)
    for s in (typed, linked):
        assert s.session_state[STUDENT]["code"] == code
        _ok(s.switch_page("lessons/20_exercises.py").run())
    _ok(teacher.run())
    assert _metric(teacher, "Here now") == "2" and _metric(teacher, "I'm lost") == "0"

    # "I'm lost": a count, never a name; it decays when turned off.
    _ok(typed.toggle(key="_live_lost").set_value(True).run())
    _ok(teacher.run())
    assert _metric(teacher, "I'm lost") == "1"
    _ok(typed.toggle(key="_live_lost").set_value(False).run())
    _ok(teacher.run())
    assert _metric(teacher, "I'm lost") == "0"

    # The teacher asks one box; every student's sidebar names it.
    _ok(teacher.selectbox(key="_live_question_pick").set_value(("flying-arrows", "weights")).run())
    _ok(teacher.button(key="_live_ask").click().run())
    assert store.state(code).question == ("flying-arrows", "weights")
    _ok(linked.run())
    assert "Your teacher asks: **Flying arrows" in _sidebar_text(linked)
    assert _metric(teacher, "Answered the question") == "0"

    # Answers come in; the results stay hidden (on the projector too) until revealed.
    _answer_weights(linked, right=False)
    assert "Saved for your class" in _statuses(linked)
    _ok(teacher.run())
    assert _metric(teacher, "Answered the question") == "1"
    assert any("Results hidden: 1 answered" in i.value for i in teacher.info)
    row = teacher.dataframe[0].value.iloc[0]
    assert (row["right"], row["most common slips"]) == ("hidden", "hidden until you reveal them")
    _ok(teacher.button(key="_live_reveal").click().run())
    shown = " ".join(m.value for m in teacher.markdown)
    assert "## 0 of 1 right (0%)" in shown and "#### 1 forgot to divide by √d_k" in shown
    assert teacher.dataframe[0].value.iloc[0]["right"] == "0"

    # A countdown every student sees, ticking in the browser.
    _ok(teacher.number_input(key="_live_countdown_s").set_value(30).run())
    _ok(teacher.button(key="_live_countdown").click().run())
    left = store.seconds_left(store.state(code))
    assert 25 < left <= 30
    _ok(typed.run())
    timer = next(h.proto.body for h in typed.sidebar.get("html") if 'role="timer"' in h.proto.body)
    assert re.search(r">0:(2\d|30) left<", timer) and '"id": "tfviz-countdown"' in timer
    # ... and after zero (the store's clock moved on a minute) an answer is refused, in words.
    monkeypatch.setattr(store, "_clock", lambda: time.time() + 60)
    _answer_weights(typed, right=True)
    assert "Not counted: Time was up for this question" in _statuses(typed)
    _ok(typed.run())
    assert "Time is up: answers to this question are no longer counted." in _sidebar_text(typed)
    monkeypatch.undo()
    monkeypatch.setenv("TFVIZ_STORE", store.url)  # undo() dropped it; the store stays the same

    # Reset the question, after a confirmation: its answers go, and a student may answer again.
    _ok(teacher.button(key="_live_reset").click().run())
    assert any("Forget all 1 answers" in w.value for w in teacher.warning)
    _ok(teacher.button(key="_live_reset_yes").click().run())
    assert not [r for r in store.summary(code, key) if r.step == "weights"]
    _ok(typed.run())  # the follower hears of the reset
    _answer_weights(typed, right=True)
    assert "Saved for your class" in _statuses(typed)

    # End asks first, naming the answers not downloaded; after it, the answers stay a day.
    _ok(teacher.button(key="_live_end").click().run())
    warning = " ".join(w.value for w in teacher.warning)
    assert "**1 answer has not been downloaded**" in warning and "24 hours" in warning
    _ok(teacher.button(key="_live_end_no").click().run())
    assert teacher.session_state[TEACHER]  # still teaching
    _ok(teacher.button(key="_live_end").click().run())
    _ok(teacher.button(key="_live_end_yes").click().run())
    assert not teacher.session_state[TEACHER]
    assert any(f"Class {code[:4]}-{code[4:]} has ended" in i.value for i in teacher.info)
    assert [d.proto.label for d in teacher.get("download_button")][-2:] == [
        "⬇️ Every answer (CSV)", "⬇️ Summary per question (CSV)"]
    rows = store.export_rows(code, key)
    assert [(r["box"], r["correct"]) for r in rows] == [("weights", True)]
    assert store.not_downloaded(code, key) == 0


def test_an_ended_class_is_taken_back_for_its_answers_in_another_browser():
    teacher = _teacher()
    code, key = teacher.session_state[TEACHER]["code"], teacher.session_state[TEACHER]["key"]
    student = _student(code)
    _ok(student.switch_page("lessons/20_exercises.py").run())
    _answer_weights(student, right=True)
    _ok(teacher.button(key="_live_end").click().run())
    assert "**1 answer has not been downloaded**" in " ".join(w.value for w in teacher.warning)
    _ok(teacher.button(key="_live_end_yes").click().run())

    other = _ok(_student().switch_page(f"lessons/{TEACHER_PAGE}").run())

    def take_back(typed_code: str, typed_key: str):
        other.text_input(key="_live_resume_code").set_value(typed_code)
        other.text_input(key="_live_resume_key").set_value(typed_key)
        return _ok(next(b for b in other.button if b.label == "Take the class back").click().run())

    take_back(code, "a guess")  # a wrong key gets nothing
    assert any("Only the teacher who started" in i.value for i in other.info)
    assert not other.session_state.get("_live_ended")
    take_back(code.lower(), key)
    assert any("Its answers can still be downloaded below" in i.value for i in other.info)
    assert any(f"Class {code[:4]}-{code[4:]} has ended" in i.value for i in other.info)
    assert TEACHER not in other.session_state or not other.session_state[TEACHER]
    assert "⬇️ Every answer (CSV)" in [d.proto.label for d in other.get("download_button")]
    assert [(r["box"], r["correct"]) for r in live_store().export_rows(code, key)] == [
        ("weights", True)]
