"""Lesson 21 in the real app frame: right, wrong and unreadable answers, score, new quiz."""

import pytest

from tfviz.exercises.quiz import NumericQuestion, format_value, make_quiz, question_by_id

PAGE = "21_quiz.py"




def _ok(at):
    assert not at.exception, at.exception
    return at


def _values(elements):
    return [str(e.value) for e in elements]


def _name(q, seed=1, round_=0):
    return f"{seed}_{round_}_{q.id}"


def respond(at, q, value, seed=1, round_=0):
    name = _name(q, seed, round_)
    if q.kind == "choice":
        if value is not None:
            at.radio(key=f"qz_answer_{name}").set_value(value)
    else:
        at.text_input(key=f"qz_answer_{name}").set_value(value)
    return _ok(at.button(key=f"qz_check_{name}").click().run())


def first(kind, seed=1, n=8):
    return next(q for q in make_quiz(seed, n) if q.kind == kind)


def test_default_quiz_shows_eight_questions_with_nothing_preselected(app_page):
    at = app_page(PAGE)
    assert at.title[0].value == "Quiz: test your knowledge"
    quiz = make_quiz(1, 8)
    radios = [r for r in at.radio if r.key.startswith("qz_answer_")]
    assert len(radios) == sum(q.kind == "choice" for q in quiz)
    assert all(r.value is None for r in radios)
    assert "0 of 8 answered" in at.get("progress")[0].proto.text


def test_all_right_gives_a_perfect_score(app_page):
    at = app_page(PAGE)
    quiz = make_quiz(1, 8)
    for q in quiz:
        respond(at, q, q.answer if q.kind == "choice" else format_value(q.answer, q.tolerance))
    right = [s for s in _values(at.success) if s.startswith("✓ Correct!")]
    assert len(right) == 8 and not at.error and not at.warning
    assert at.metric[0].value == "8 / 8"
    assert _values(at.info)[-1] == "You got 8 of 8 right (100%). A perfect score!"
    assert all(at.button(key=f"qz_check_{_name(q)}").disabled for q in quiz)  # locked


def test_a_tempting_wrong_option_is_explained(app_page):
    at = app_page(PAGE)
    q = first("choice")
    wrong, why = next(iter(q.distractors.items()))
    respond(at, q, wrong)
    (error,) = _values(at.error)
    assert why in error and q.options[q.answer] in error and q.explanation in error
    assert "1 of 8 answered, 0 right" in at.get("progress")[0].proto.text
    assert any("Why the tempting wrong answers" in e.label for e in at.expander)


def test_a_known_numeric_slip_is_diagnosed(app_page):
    at = app_page(PAGE, )
    q = next(q for q in make_quiz(1, 20) if isinstance(q, NumericQuestion) and q.mistakes)
    _ok(at.slider(key="qz_n").set_value(20).run())
    mistake = q.mistakes[0]
    respond(at, q, repr(mistake.value))
    (error,) = _values(at.error)
    assert mistake.explanation in error and error.startswith("✗ Not quite")


@pytest.mark.parametrize("garbage", ["", "abc", "<script>alert(1)</script>", "7" * 100_000,
                                     "🤖", "1 2"],
                         ids=["empty", "word", "html", "huge", "emoji", "two-numbers"])
def test_unreadable_numbers_are_not_counted(app_page, garbage):
    at = app_page(PAGE)
    q = first("numeric")
    respond(at, q, garbage)
    (warning,) = _values(at.warning)
    assert "This question wants a single number" in warning
    assert not at.error and not any(s.startswith("✓") for s in _values(at.success))
    assert "0 of 8 answered" in at.get("progress")[0].proto.text
    assert not at.button(key=f"qz_check_{_name(q)}").disabled  # try again
    respond(at, q, format_value(q.answer, q.tolerance))
    assert any(s.startswith("✓ Correct!") for s in _values(at.success))


def test_checking_without_picking_asks_to_pick(app_page):
    at = app_page(PAGE)
    respond(at, first("choice"), None)
    assert _values(at.warning) == ["Pick one of the options first."]


def test_settings_sections_and_new_quiz(app_page):
    at = app_page(PAGE)
    _ok(at.slider(key="qz_n").set_value(3).run())
    assert len([b for b in at.button if b.key.startswith("qz_check_")]) == 3
    _ok(at.multiselect(key="qz_sections").set_value(["Practice"]).run())
    checks = [b for b in at.button if b.key.startswith("qz_check_")]
    practice = make_quiz(1, 3, ["Practice"])
    assert len(checks) == len(practice) == 2
    assert any("have 2 questions" in c for c in _values(at.caption))
    _ok(at.text_input(key="qz_code").set_value("42").run())
    assert {b.key for b in at.button if b.key.startswith("qz_check_")} == {
        f"qz_check_42_0_{q.id}" for q in make_quiz(42, 3, ["Practice"])}
    _ok(at.text_input(key="qz_code").set_value("forty-two").run())
    assert any("class code is a whole number" in w for w in _values(at.warning))
    _ok(at.multiselect(key="qz_sections").set_value([]).run())
    q = make_quiz(1, 3)[0]
    respond(at, q, q.answer if q.kind == "choice" else format_value(q.answer, q.tolerance))
    _ok(at.button(key="qz_again").click().run())  # same questions, answers cleared
    assert not any(s.startswith("✓") for s in _values(at.success))
    assert f"qz_check_1_1_{q.id}" in {b.key for b in at.button}
    _ok(at.button(key="qz_new").click().run())
    code = at.text_input(key="qz_code").value
    assert code.isdigit() and code != "1"


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
def test_quiz_works_with_every_model(app_page, model):
    at = app_page(PAGE, model=model)
    q = question_by_id(make_quiz(1, 8)[0].id)
    assert f"qz_check_1_0_{q.id}" in {b.key for b in at.button}


MODERN = ["rope-turned-coordinate", "rope-angle-slow-pair", "rope-relative-pair", "rmsnorm-value",
          "rmsnorm-vs-layernorm", "swiglu-unit", "swiglu-matrices", "gqa-cache-per-token",
          "gqa-cache-depends"]


@pytest.mark.parametrize("qid", MODERN)
def test_the_modern_blocks_questions_on_the_page(app_page, qid):
    """Each question on RoPE, RMSNorm, SwiGLU and the GQA cache, drawn with its section: the
    prompt shows, a slip (or a tempting option) is explained, and the right answer, typed as
    the page's own answer text, is right."""
    section = question_by_id(qid).section
    at = app_page(PAGE)
    _ok(at.slider(key="qz_n").set_value(20).run())
    _ok(at.multiselect(key="qz_sections").set_value([section]).run())
    (q,) = [q for q in make_quiz(1, 20, [section]) if q.id == qid]  # its options as shown
    assert any(q.prompt in m for m in _values(at.markdown))
    if q.kind == "choice":
        wrong, why = next(iter(q.distractors.items()))
        respond(at, q, wrong)
        (error,) = _values(at.error)
        assert why in error and q.options[q.answer] in error
    else:
        slip = q.mistakes[0]
        respond(at, q, format_value(slip.value, q.tolerance))
        (error,) = _values(at.error)
        assert slip.explanation in error and format_value(q.answer, q.tolerance) in error
    assert any("Why the tempting wrong answers" in e.label for e in at.expander)
    _ok(at.button(key="qz_again").click().run())  # a clean slate, the same questions
    respond(at, q, q.answer if q.kind == "choice" else format_value(q.answer, q.tolerance),
            round_=1)
    assert any(s.startswith("✓ Correct!") for s in _values(at.success))
