"""Issue #13: a token picker keeps a valid position (an int in range) whatever the text
becomes, and never leaves the browser holding a label drawn for an older sentence."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP

import tfviz

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
SAT = ["the", "␣cat", "␣sat", "␣on", "␣the", "␣mat"]


def _picker_app():
    import streamlit as st

    from tfviz.ui.pickers import token_select

    tokens = st.session_state.get("toks", ["the", "␣cat", "␣sat", "␣on", "␣the", "␣mat"])
    pos = token_select("Token", tokens, "tok", default=st.session_state.get("dflt"),
                       first=st.session_state.get("first", 0))
    st.text(f"chosen {pos!r}")


def _picker(**state) -> AppTest:
    at = AppTest.from_function(_picker_app, default_timeout=30)
    for key, value in state.items():
        at.session_state[key] = value
    return _ran(at)


def _ran(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    assert not at.warning, [w.value for w in at.warning]  # e.g. "default and session state"
    return at


def _chosen(at: AppTest):
    return at.text[0].value.removeprefix("chosen ")


def test_labels_carry_position_and_token_and_the_value_is_an_int():
    at = _picker()
    box = at.selectbox(key="tok")
    assert box.options == ["0 the", "1 ␣cat", "2 ␣sat", "3 ␣on", "4 ␣the", "5 ␣mat"]
    assert box.value == 0 and _chosen(at) == "0"
    box.set_value(4)
    _ran(at)
    assert at.session_state["tok"] == 4 and type(at.session_state["tok"]) is int
    assert _chosen(at) == "4"


def test_first_and_default():
    at = _picker(first=1, dflt=3)
    assert at.selectbox(key="tok").options[0] == "1 ␣cat"
    assert _chosen(at) == "3"
    assert _chosen(_picker(first=1)) == "1"  # no default: the first position offered
    assert _chosen(_picker(dflt=99)) == "5"  # a default past the end: the last position
    assert _chosen(_picker(toks=["only"], first=1)) == "None"  # nothing to choose: no widget
    assert _chosen(_picker(toks=[], dflt=0)) == "None"


def test_text_gets_longer_then_shorter():
    at = _picker(dflt=2)
    at.selectbox(key="tok").set_value(5)
    _ran(at)
    at.session_state["toks"] = SAT + ["␣and", "␣slept"]  # longer: the choice stays
    _ran(at)
    assert _chosen(at) == "5" and at.selectbox(key="tok").options[-1] == "7 ␣slept"
    at.session_state["toks"] = ["a", "␣dog"]  # shorter than the choice: the page's default,
    _ran(at)  # cut to what exists
    assert _chosen(at) == "1" and at.session_state["tok"] == 1


def test_new_text_sends_the_new_label_to_the_browser():
    """The cause of #13: the browser keeps a select box's *label*. When the text changes and
    the chosen position survives, Streamlit would not send the new label, and the next rerun
    brought the old label back as a string. The helper makes Streamlit send it every run."""
    at = _picker()
    at.selectbox(key="tok").set_value(2)
    _ran(at)
    at.session_state["toks"] = ["a", "␣dog", "␣ran", "␣home"]
    _ran(at)
    proto = at.selectbox(key="tok").proto
    assert proto.set_value and proto.raw_value == "2 ␣ran"


@pytest.mark.parametrize("stored, expected", [
    ("3 ␣on", "3"),        # a label the browser kept from an earlier text: its position
    ("3 ␣sentence", "3"),  # ... even when that token is no longer there
    ("9 ␣gone", "2"),      # a label of a position the new text does not have: the default
    ("␣sat", "2"), ("", "2"), ("²", "2"), ("-1 x", "2"),
    (-1, "2"), (6, "2"), (10**9, "2"), (True, "2"), (None, "2"), (2.0, "2"), ([3], "2"),
])
def test_bad_state_values_become_a_valid_position(stored, expected):
    at = _picker(tok=stored, dflt=2)
    assert _chosen(at) == expected
    assert type(at.session_state["tok"]) is int


def _stale(lesson: str, key: str, value, model: str | None = None):
    """Open ``lesson`` with ``value`` already stored under ``key`` (set while the page is not
    shown: AppTest itself cannot format a stale label)."""
    at = AppTest.from_file(APP, default_timeout=90)
    if model:
        at.query_params["model"] = model
    at.run()
    at.session_state[key] = value
    at.switch_page(f"lessons/{lesson}").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("lesson, key, model", [
    ("08_masking.py", "mk_pos", None),
    ("01_tour.py", "tour_mask_pos", "bert-tiny"),
])
def test_lesson_pickers_survive_a_stale_label(lesson, key, model):
    """What the browser sent in #13: the label of position 2 from a sentence since replaced."""
    at = _stale(lesson, key, "2 ␣a-token-from-an-older-sentence", model)
    assert at.session_state[key] == 2 and at.selectbox(key=key).value == 2


def test_lessons_pick_token_positions_with_the_shared_picker():
    for path in sorted(LESSONS.glob("*.py")):
        assert not re.search(r"\.(selectbox|radio)\([^\n]*range\(", path.read_text()), (
            f"{path.name}: pick token positions with tfviz.ui.pickers.token_select")


def test_exercise_picker_reads_back_a_label_whose_tick_changed():
    """Solving an exercise adds "✓ " to its label while the value stays: the browser then
    sends the old (or new) title back, and the picker must stay on that exercise."""
    from tfviz.exercises.registry import EXERCISES

    ids = list(EXERCISES)
    for label in (EXERCISES[ids[2]].title, "✓ " + EXERCISES[ids[2]].title):
        at = _stale("20_exercises.py", "ex_pick", label)
        assert at.session_state["ex_pick"] == ids[2] == at.selectbox(key="ex_pick").value
    assert _stale("20_exercises.py", "ex_pick", "no such exercise").session_state["ex_pick"] == ids[0]


def test_masking_new_token_picker_reads_back_a_token_label():
    at = _stale("08_masking.py", "mk_new", "␣tired")  # a token of the default text, not the one replaced
    bundle = tfviz.load("gpt-tiny")
    assert at.session_state["mk_new"] == bundle.encode("tired")[0] == at.selectbox(key="mk_new").value
    gone = _stale("08_masking.py", "mk_new", "␣a-label-no-token-has")
    assert type(gone.session_state["mk_new"]) is int


@pytest.mark.parametrize("link, expected", [(None, 1), ("3", 3), ("25", "last"), ("0", 1),
                                             ("junk", 1), ("99999", 1), ("-2", 1)])
def test_forward_walk_opens_on_the_links_step(app_page, link, expected):
    """The step is an instant view (issue #15): the browser owns it, and the server only reads
    a shared link's ``step`` to open the chart there. A step beyond the end (a link made on a
    model with more steps) opens the last one; anything unusable opens the first."""
    from tests.app.specs import instant_charts, param_values

    at = app_page("12_forward.py", **({"step": link} if link is not None else {}))
    (walk,) = [spec for spec, _ in instant_charts(at) if "step" in param_values(spec)]
    n = next(p for p in walk["params"] if p["name"] == "step")["bind"]["max"]
    assert param_values(walk)["step"] == (n if expected == "last" else expected)
