"""A live class on the store, in the real app frame: a student is told when an answer is saved
and when it is not; a store that does not answer leaves the class in place with a
"reconnecting" notice; the join code stays in the URL so a reconnect to another replica joins
again; the check-in reaches the quiz page and comes back to the teacher; a teacher takes a class
back with code and key; the teacher's page offers the answers as CSV."""
from __future__ import annotations

import pytest

from tfviz.classroom.guard import StoreDown
from tfviz.exercises.fmt import fmt_values
from tfviz.exercises.quiz import QUESTIONS, shuffle_options
from tfviz.exercises.registry import make_instance
from tfviz.ui.live import CHECKIN_SEED
from tfviz.ui.live_session import STUDENT, TEACHER, live_store

from tests.app.test_live_class import TEACHER_PAGE, _ok, _student, _teacher

IKEY = "flying-arrows:source"


def _down(*_args, **_kwargs):
    raise StoreDown()


def _sidebar_text(at) -> str:
    kinds = ("warning", "info", "markdown")
    return " ".join(str(e.value) for kind in kinds for e in at.sidebar.get(kind))


def test_an_answer_says_whether_it_was_saved(monkeypatch):
    teacher = _teacher()
    code, key = teacher.session_state[TEACHER]["code"], teacher.session_state[TEACHER]["key"]
    student = _student(code)
    _ok(student.switch_page("lessons/20_exercises.py").run())
    box = make_instance("flying-arrows").field("weights")
    slip = next(m for m in box.mistakes if m.name == "no_scale")
    monkeypatch.setattr(live_store().backend, "add_answer", _down)  # the store stops answering
    student.text_input(key=f"ex_ans_{IKEY}_weights").set_value(fmt_values(slip.values))
    _ok(student.button(key=f"ex_check_{IKEY}_weights").click().run())
    captions = " ".join(c.value for c in student.caption)
    assert "Not sent to your class: The class is reconnecting" in captions
    assert "Saved for your class" not in captions
    assert live_store().summary(code, key) == ()  # nothing was said saved, nothing was
    monkeypatch.undo()
    _ok(student.button(key=f"ex_check_{IKEY}_weights").click().run())  # a try once it is back
    assert "Saved for your class's dashboard (anonymously)." in [c.value for c in student.caption]
    (row,) = live_store().summary(code, key)
    assert (row.answered, row.slips[0].slip) == (1, "no_scale")


def test_a_store_that_does_not_answer_keeps_the_class_and_says_so(monkeypatch):
    teacher = _teacher()
    code = teacher.session_state[TEACHER]["code"]
    student = _student(code)
    assert student.query_params["join"] == code  # a reconnect on another replica joins again
    monkeypatch.setattr(live_store().backend, "get", _down)
    _ok(student.run())
    assert "The class is reconnecting" in _sidebar_text(student)
    assert student.session_state[STUDENT]["code"] == code  # still in the class
    _ok(teacher.run())  # the teacher's push fails too, and says so, and keeps the class
    assert teacher.session_state[TEACHER]["code"] == code
    assert "The class is reconnecting" in _sidebar_text(teacher)
    monkeypatch.undo()
    _ok(teacher.switch_page("lessons/08_masking.py").run())
    _ok(student.run())
    assert student.title[0].value.startswith("Masking")
    assert "reconnecting" not in _sidebar_text(student)


def test_a_typed_code_goes_into_the_url_and_leaving_takes_it_out():
    teacher = _teacher()
    code = teacher.session_state[TEACHER]["code"]
    student = _student()
    student.text_input(key="_live_join").set_value(code.lower())
    _ok(student.run())
    assert student.query_params["join"] == code
    _ok(student.button(key="_live_leave").click().run())
    assert "join" not in student.query_params and student.session_state[STUDENT] is None


def test_the_checkin_reaches_the_quiz_page_and_comes_back():
    teacher = _teacher()
    code, key = teacher.session_state[TEACHER]["code"], teacher.session_state[TEACHER]["key"]
    asked = [q for q in QUESTIONS if q.kind == "choice"][:3]
    _ok(teacher.multiselect(key="_live_checkin_pick").set_value([q.id for q in asked]).run())
    _ok(teacher.button(key="_live_ask_before").click().run())
    assert live_store().state(code).checkin == tuple(q.id for q in asked)
    student = _student(code)
    _ok(student.run())
    links = [el for el in student.sidebar.get("page_link")]
    assert any("check-in: 3 questions" in el.proto.label for el in links)
    _ok(student.switch_page("lessons/21_quiz.py").run())
    assert any("Check-in from your teacher (before the lesson)" in h.value for h in student.header)
    q = shuffle_options(asked[0], CHECKIN_SEED)  # as the page shows it
    name = f"checkin_before_{q.id}"
    student.radio(key=f"qz_answer_{name}").set_value(q.answer)
    _ok(student.button(key=f"qz_check_{name}").click().run())
    assert "Saved for your class's dashboard (anonymously)." in [c.value for c in student.caption]
    (row,) = live_store().checkin_summary(code, key)
    assert (row.question_id, row.before, row.after) == (q.id, (1, 1), (0, 0))
    _ok(teacher.run())
    table = teacher.dataframe[-1].value  # the dashboard has no exercise answers: one table
    assert list(table["right before"]) == ["100% of 1"] and list(table["right after"]) == ["– of 0"]


def test_a_teacher_takes_a_class_back_with_code_and_key():
    first = _teacher()
    code, key = first.session_state[TEACHER]["code"], first.session_state[TEACHER]["key"]
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP
    again = _ok(AppTest.from_file(APP, default_timeout=90).run())
    _ok(again.switch_page(f"lessons/{TEACHER_PAGE}").run())
    again.text_input(key="_live_resume_code").set_value(code.lower())
    again.text_input(key="_live_resume_key").set_value("not the key")
    _ok(again.button(key="FormSubmitter:_live_resume_form-Take the class back").click().run())
    assert TEACHER not in again.session_state or again.session_state[TEACHER] is None
    assert "Only the teacher" in _sidebar_text(again)
    again.text_input(key="_live_resume_key").set_value(key)
    _ok(again.button(key="FormSubmitter:_live_resume_form-Take the class back").click().run())
    assert again.session_state[TEACHER] == {"code": code, "key": key}
    assert live_store().update(code, key, step=2).step == 2


@pytest.mark.parametrize("wanted", ["Every answer (CSV)", "Summary per question (CSV)"])
def test_the_teacher_page_offers_the_answers_as_csv(wanted):
    teacher = _teacher()
    labels = [el.proto.label for el in teacher.get("download_button")]
    assert any(wanted in label for label in labels), labels
