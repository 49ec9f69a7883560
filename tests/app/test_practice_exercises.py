"""Lesson 20 in the real app frame: right, diagnosed-wrong and garbage answers, hints, variants."""

import re

import numpy as np
import pandas as pd
import pytest

from tfviz.exercises import EXERCISES, make_instance, solve_attention
from tfviz.exercises.attention import select

from tests.app.specs import fits, instant_charts, param_values, unpacked

PAGE = "20_exercises.py"
FLY = "flying-arrows:source"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _values(elements):
    return [str(e.value) for e in elements]


def answer(at, ikey, box, text):
    at.text_input(key=f"ex_ans_{ikey}_{box}").set_value(text)
    return _ok(at.button(key=f"ex_check_{ikey}_{box}").click().run())


def typed(box) -> str:
    """The right answer as a learner might type it (full precision, spaces between)."""
    if box.kind == "words":
        return " ".join(box.expected)
    return " ".join(repr(float(x)) for x in np.ravel(box.expected))


def page_text(node) -> str:
    """Everything an element tree puts on the page: texts, labels, tables, chart data, code."""
    out = [str(getattr(node, "label", "") or "")]
    children = getattr(node, "children", None)
    if children is not None and not hasattr(node, "value"):
        items = children.values() if isinstance(children, dict) else children
        return "\n".join(out + [page_text(c) for c in items])
    try:
        value = node.value
    except Exception:  # an element without a value: its message says what it shows
        value = node.proto if hasattr(node, "proto") else None
    if isinstance(value, pd.DataFrame) or hasattr(value, "to_string"):
        out.append(value.to_string())
    elif value is not None:
        out.append(str(value))
    return "\n".join(out)


def _given(inst) -> set:
    """Every number and word the exercise hands out: an answer equal to one of them is no leak."""
    found: set = set()

    def visit(v):
        if isinstance(v, dict):
            for key, x in v.items():
                visit(key)
                visit(x)
        elif isinstance(v, (list, tuple, np.ndarray)):
            for x in np.ravel(np.asarray(v, dtype=object)) if isinstance(v, np.ndarray) else v:
                visit(x)
        elif isinstance(v, str):
            found.add(v.lower())
        elif isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            found.add(round(float(v), 6))
    visit(dict(inst.data))
    return found


def answer_forms(inst) -> list[tuple[str, str]]:
    """(box, regex) for each answer as the page would print it: a fraction to 2 (if that is
    not a rounding of something small), 3 or 4 places, a whole number of two digits or more,
    a run of words in order; small whole numbers are everywhere in the data, so not sought."""
    given, forms = _given(inst), []
    for box in inst.answer_fields:
        if box.kind == "words":
            words = [re.escape(str(w)) for w in box.expected]
            if len(words) > 1:
                forms.append((box.name, r"\W{1,4}".join(words)))
            elif words[0].lower() not in given:
                forms.append((box.name, rf"\b{words[0]}\b"))
            continue
        for x in map(float, np.ravel(box.expected)):
            if not np.isfinite(x) or round(x, 6) in given or (x == round(x) and abs(x) < 10):
                continue
            texts = ({f"{int(x)}", f"{int(x):,}"} if x == round(x) else
                     {f"{x:.{p}f}" for p in ((2, 3, 4) if abs(x) >= 0.1 else (3, 4))})
            for text in texts:
                sign = "[-−]" if text.startswith("-") else ""
                forms.append((box.name, rf"(?<![\d.,]){sign}{re.escape(text.lstrip('-'))}(?!\d)"))
    return forms


def leaks(at, inst) -> list[str]:
    text = page_text(at._tree)
    return [f"{box}: …{text[max(0, m.start() - 50):m.end() + 20]}…"
            for box, pattern in answer_forms(inst) for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("seed", [None, 7])
def test_no_exercise_gives_its_answers_away_before_they_are_answered(app_page, seed):
    at = app_page(PAGE)
    if seed is not None:
        at.radio(key="ex_mode").set_value("variant").run()
        _ok(at.text_input(key="ex_code").set_value(str(seed)).run())
    for exercise_id in EXERCISES:
        _ok(at.selectbox(key="ex_pick").set_value(exercise_id).run())
        inst = make_instance(exercise_id, seed)
        assert answer_forms(inst), exercise_id  # the test looks for something
        assert not leaks(at, inst), (exercise_id, leaks(at, inst))


def test_the_checks_appear_box_by_box_once_answered(app_page):
    at = app_page(PAGE)
    inst = make_instance("flying-arrows")
    assert not [t for t in at.table if "what" in t.value]  # the engine's table waits
    answer(at, FLY, "weights", "0.5 0.5")  # wrong, but an attempt: its check may show now
    what = [t.value for t in at.table if "what" in t.value]
    assert len(what) == 1 and what[0]["what"].tolist() == ["weights of “flying”"]
    assert any("self-attention output" in c for c in _values(at.caption))  # the box still waiting
    assert not any("The code of tfviz.exercises.ex_flying" in str(h.proto) for h in at.get("html"))
    for box in inst.answer_fields:
        answer(at, FLY, box.name, typed(box))
    what = [t.value for t in at.table if "what" in t.value]
    assert what[0]["what"].tolist() == ["weights of “flying”", "output of “flying”"]
    assert any("The code of tfviz.exercises.ex_flying" in str(h.proto) for h in at.get("html"))


def test_the_full_solution_opens_every_check(app_page):
    at = app_page(PAGE)
    _ok(at.selectbox(key="ex_pick").set_value("thinking-machines").run())
    assert "softmax(14, 12)" not in page_text(at._tree)
    _ok(at.button(key="ex_full_thinking-machines:source").click().run())
    assert "softmax(14, 12)" in page_text(at._tree)


def test_page_opens_with_the_source_numbers(app_page):
    at = app_page(PAGE)
    assert at.title[0].value == "Worked exercises"
    assert at.selectbox(key="ex_pick").value == "flying-arrows"
    assert any("[0, 1, 1, 1, 1, 0]" in m for m in _values(at.markdown))
    assert at.latex, "formulas are shown"
    assert at.table, "the data is shown as tables"
    captions = " ".join(_values(at.caption))
    assert "tolerance **±0.01**" in captions
    assert "0 of 17 exercises solved" in at.get("progress")[0].proto.text


def test_right_answers_solve_the_exercise(app_page):
    at = app_page(PAGE)
    inst = make_instance("flying-arrows")
    for box in inst.answer_fields:
        answer(at, FLY, box.name, typed(box))
    assert _values(at.success).count("✓ Correct (±0.01).") == len(inst.answer_fields)
    assert not at.error and not at.warning
    assert any("exercise solved" in s for s in _values(at.success))
    assert "1 of 17 exercises solved" in at.get("progress")[0].proto.text
    assert at.selectbox(key="ex_pick").format_func("flying-arrows").startswith("✓")
    # the forgiving formats: brackets, no brackets, fractions
    _ok(answer(at, FLY, "scores", "[1, -1]"))
    _ok(answer(at, FLY, "scores", "1/1 -3/3"))
    assert _values(at.success).count("✓ Correct (±0.01).") == len(inst.answer_fields)


def test_forgetting_the_scale_is_diagnosed(app_page):
    at = app_page(PAGE)
    no_scale = solve_attention([[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]], select(6, [0, 1]),
                               select(6, [2, 3]), select(6, [4, 5]), scale=False)
    answer(at, FLY, "weights", " ".join(f"{x:.4f}" for x in no_scale.weights[0]))
    answer(at, FLY, "output", ", ".join(f"{x:.4f}" for x in no_scale.output[0]))
    errors = _values(at.error)
    assert len(errors) == 2 and not any(s.startswith("✓") for s in _values(at.success))
    assert all("√d_k" in e and "we can tell what happened" in e for e in errors)


def test_a_wrong_answer_without_a_known_slip_names_the_entries(app_page):
    at = app_page(PAGE)
    answer(at, FLY, "output", "0.609 0.9")
    (error,) = _values(at.error)
    assert error.startswith("✗ Not quite.") and "Entry 2 (counting from 1)" in error


@pytest.mark.parametrize("garbage, says", [
    ("", "This box wants 2 numbers"),
    ("abc", "is not a number"),
    ("<script>alert(1)</script>", "is not a number"),
    ("9" * 100_000, "This box wants 2 numbers"),
    ("🙂 🙃", "is not a number"),
    ("0.6 0.2 0.1", "Expected 2 numbers but found 3"),
], ids=["empty", "word", "html", "huge", "emoji", "three-numbers"])
def test_garbage_gets_a_friendly_warning(app_page, garbage, says):
    at = app_page(PAGE)
    answer(at, FLY, "output", garbage)
    warnings = _values(at.warning)
    assert len(warnings) == 1 and says in warnings[0], warnings
    assert not at.error
    assert not any(s.startswith("✓") for s in _values(at.success))


def test_hint_next_step_full_solution_and_arrows(app_page):
    at = app_page(PAGE)
    n_latex = len(at.latex)
    _ok(at.button(key=f"ex_hint_{FLY}").click().run())
    assert any("recipe" in i for i in _values(at.info))
    assert len(at.latex) == n_latex + 5  # one formula per step
    assert at.button(key=f"ex_hint_{FLY}").disabled
    _ok(at.button(key=f"ex_next_{FLY}").click().run())
    assert any(m.startswith("**Step 1 · Queries") for m in _values(at.markdown))
    assert not at.get("vega_lite_chart")
    for _ in range(3):  # scores, scale, softmax: now the weights are known
        _ok(at.button(key=f"ex_next_{FLY}").click().run())
    assert any(m.startswith("**Step 4 · Softmax") for m in _values(at.markdown))
    assert len(at.get("vega_lite_chart")) == 1
    _ok(at.button(key=f"ex_full_{FLY}").click().run())
    assert any(m.startswith("**Step 5 · Weighted sum") for m in _values(at.markdown))
    assert at.button(key=f"ex_next_{FLY}").disabled and at.button(key=f"ex_full_{FLY}").disabled
    assert any("**The answers**" == m for m in _values(at.markdown))
    _ok(at.button(key=f"ex_hide_{FLY}").click().run())
    assert not any(m.startswith("**Step") for m in _values(at.markdown))


def test_the_model_agrees(app_page):
    at = app_page(PAGE)
    agree = [s for s in _values(at.success) if s.startswith("Largest difference")]
    assert len(agree) == 1
    gap = float(agree[0].split(": ")[1].split(" ")[0])
    assert gap < 1e-5


def test_class_code_variants(app_page):
    at = app_page(PAGE)
    _ok(at.radio(key="ex_mode").set_value("variant").run())
    assert at.text_input(key="ex_code").value == "1"
    _ok(at.text_input(key="ex_code").set_value("4711").run())
    inst = make_instance("flying-arrows", 4711)
    assert at.header[0].value.endswith("(class code 4711)")
    assert any(inst.tokens[0] in m for m in _values(at.markdown))
    answer(at, "flying-arrows:4711", "output", typed(inst.field("output")))
    assert "✓ Correct (±0.01)." in _values(at.success)
    for bad in ("abc", "-5", "1234567890123", "<b>7</b>"):
        _ok(at.text_input(key="ex_code").set_value(bad).run())
        assert any("class code is a whole number" in w for w in _values(at.warning))
        assert at.header[0].value == make_instance("flying-arrows").title  # source meanwhile
    _ok(at.button(key="ex_new_code").click().run())
    code = at.text_input(key="ex_code").value
    assert code.isdigit() and 1000 <= int(code) <= 9999
    assert not at.warning


@pytest.mark.parametrize("seed", [None, 7])
def test_every_exercise_can_be_solved_on_the_page(app_page, seed):
    at = app_page(PAGE)
    if seed is not None:
        at.radio(key="ex_mode").set_value("variant").run()
        _ok(at.text_input(key="ex_code").set_value(str(seed)).run())
    for exercise_id in EXERCISES:
        _ok(at.selectbox(key="ex_pick").set_value(exercise_id).run())
        inst = make_instance(exercise_id, seed)
        ikey = f"{exercise_id}:{'source' if seed is None else seed}"
        for box in inst.answer_fields:
            answer(at, ikey, box.name, typed(box))
        right = [s for s in _values(at.success) if s.startswith("✓ Correct")]
        assert len(right) == len(inst.answer_fields), (exercise_id, _values(at.warning),
                                                       _values(at.error))
    assert "17 of 17 exercises solved" in at.get("progress")[0].proto.text


def test_causal_mask_arrows_let_you_pick_the_word(app_page):
    at = app_page(PAGE)
    _ok(at.selectbox(key="ex_pick").set_value("causal-mask").run())
    ikey = "causal-mask:source"
    _ok(at.button(key=f"ex_full_{ikey}").click().run())
    (spec, data), = instant_charts(at)  # lesson 5's flying arrows: the word is its own slider
    inst = make_instance("causal-mask")
    assert param_values(spec)["query"] == 2 and fits(at) == [{"query": {"n": 3, "default": 2}}]
    rows = data["weights"]  # one row a word asking (one layer, one head), every word sent
    assert sorted(rows["q"]) == [0, 1, 2]
    for q, packed in zip(rows["q"], rows["w"]):  # its weights to 4 decimals, masked keys empty
        np.testing.assert_allclose(unpacked(packed), np.where(inst.arrows.weights[0, q] > 0,
                                                              inst.arrows.weights[0, q], np.nan),
                                   atol=5e-5)
    assert any(e.label == "The numbers as a table" for e in at.expander)  # drawn through vega
    assert not any(s.startswith("Largest difference") for s in _values(at.success))
    masked = make_instance("causal-mask").field("masked")
    answer(at, ikey, "masked", "2 -inf -inf 1 3 -inf 0 2 1")
    answer(at, ikey, "weights", "1 0 0 0.119 0.881 0 0.09 0.665 0.245")
    assert _values(at.success).count("✓ Correct (±0.01).") == 2
    answer(at, ikey, "masked", "2 0 0 1 3 0 0 2 1")  # zeros where −∞ belongs
    assert any("instead of −∞" in e for e in _values(at.error))
    assert masked.count == 9


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
def test_page_works_with_every_model(app_page, model):
    at = app_page(PAGE, model=model)
    assert at.title[0].value == "Worked exercises"
    answer(at, FLY, "scores", "1 -1")
    assert "✓ Correct (±0.01)." in _values(at.success)
