"""The backend interface (tfviz.classroom.backend): both stores implement the Protocol, method by
method with the same parameters; they say nothing to a learner (the words are live.py's); and
the counts each keeps (SQL GROUP BY, a Redis hash updated with each answer) agree with a scan
of the answer rows in Python, through adds, slips beyond the cap, a box's reset and downloads."""
from __future__ import annotations

import ast
import inspect
import random

import pytest

from tfviz.classroom import backend, live, redis_store, sqlite_store
from tfviz.classroom.backend import Backend, Outcome
from tfviz.classroom.catalog import STEPS

METHODS = [name for name, value in vars(Backend).items()
           if callable(value) and not name.startswith("_")]


@pytest.mark.parametrize("cls", [sqlite_store.SQLiteStore, redis_store.RedisStore])
def test_both_stores_implement_the_protocol_method_by_method(cls):
    assert len(METHODS) >= 15
    for name in METHODS:
        ours, theirs = inspect.signature(getattr(Backend, name)), inspect.signature(getattr(cls, name))
        assert list(ours.parameters) == list(theirs.parameters), (cls.__name__, name)


def test_the_opened_backends_are_backends(store):
    assert isinstance(store.backend, Backend)
    assert store.backend.durability()


@pytest.mark.parametrize("module", [sqlite_store, redis_store])
def test_the_backends_say_nothing_to_a_learner(module):
    """No LiveError but StoreDown (whose words are its own) is raised or imported by a backend:
    what a learner reads is written in live.py."""
    tree = ast.parse(inspect.getsource(module))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "tfviz.classroom.guard" for a in n.names}
    assert imported <= {"BadStoreURL", "StoreDown"}
    assert "hasattr" not in inspect.getsource(module)


def test_the_store_asks_no_backend_what_it_can_do():
    from tfviz.classroom import store

    assert "hasattr" not in inspect.getsource(store)


def test_outcomes_are_an_enum_and_each_refusal_has_words(store):
    assert {o.value for o in Outcome} == {"ok", "gone", "full", "late"}
    for outcome in Outcome:
        err = store._refused(outcome)
        assert (err is None) == (outcome is Outcome.OK)
        assert err is None or (str(err) and "Traceback" not in str(err))


def _random_answers(rng: random.Random, n: int):
    boxes = [(e, b) for e, steps in STEPS.items() for b in steps][:6]
    slips = ["no_scale", "divide_dk", "wrong_axis", "variance", "zero_fill"]
    for _ in range(n):
        exercise, box = rng.choice(boxes)
        correct = rng.random() < 0.4
        yield exercise, box, correct, None if correct or rng.random() < 0.3 else rng.choice(slips)


def test_the_backends_counts_agree_with_a_scan_of_the_rows(store, clock):
    b = store.backend
    code, key = store.start()
    rng = random.Random(44)

    def add(exercise, box, correct, slip):
        clock.advance(seconds=1)
        row = {"exercise": exercise, "box": box, "correct": correct, "slip": slip, "t": clock()}
        return b.add_answer(code, row, alive_since=clock() - 3600, max_answers=10_000,
                            max_slip_kinds=3, late_after=live.LATE_GRACE_S)

    def check(not_downloaded: int) -> None:
        rows = b.answers(code)
        want = live.tally_rows(rows)
        got = b.tally(code)
        assert (got.boxes, got.slips, got.total) == (want.boxes, want.slips, want.total)
        assert got.not_downloaded == not_downloaded
        assert live.summarise(got) == live.summarise(rows)

    for answer in _random_answers(rng, 300):
        assert add(*answer) is Outcome.OK
    check(300)
    kinds = {}
    for r in b.answers(code):
        kinds.setdefault((r["exercise"], r["box"]), set()).add(r["slip"])
    assert max(len(k - {None}) for k in kinds.values()) == 3  # the cap held: more were sent
    assert len(b.export(code)) == 300
    check(0)
    for answer in _random_answers(rng, 50):
        add(*answer)
    exercise, box = next(iter(b.tally(code).boxes))
    fresh_in_box = sum(1 for r in b.answers(code)[300:] if (r["exercise"], r["box"]) == (exercise, box))
    dropped = b.drop_box(code, exercise, box)
    assert dropped > fresh_in_box  # old and new rows of the box went
    check(50 - fresh_in_box)
    assert (exercise, box) not in b.tally(code).boxes
    assert b.presence(code, clock() - 30, (exercise, box)).answered == 0
    add(exercise, box, False, "no_scale")
    check(50 - fresh_in_box + 1)


def test_a_full_class_and_a_closed_one_are_outcomes_not_words(store, clock):
    b = store.backend
    code, key = store.start()
    row = {"exercise": "layernorm", "box": "std", "correct": True, "slip": None, "t": clock()}
    kw = dict(alive_since=clock() - 3600, max_slip_kinds=3, late_after=2.0)
    assert b.add_answer(code, row, max_answers=1, **kw) is Outcome.OK
    assert b.add_answer(code, row, max_answers=1, **kw) is Outcome.FULL
    assert b.add_answer("ZZZZZZZZ", row, max_answers=9, **kw) is Outcome.GONE
    with pytest.raises(backend.NoSuchClass):
        b.change("ZZZZZZZZ", lambda rec: rec)
