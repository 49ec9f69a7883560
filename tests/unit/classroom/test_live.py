"""Live class sessions (tfviz.classroom.live): the catalogue, who may drive, isolation, expiry and
ending. A fake clock stands in for time everywhere. Caps and rate limits:
tests/unit/classroom/test_live_limits.py; the slip dashboard's counts and thread safety:
tests/unit/classroom/test_live_summary.py."""
from __future__ import annotations

import dataclasses

import pytest

from tfviz.classroom import catalog, live
from tfviz.classroom.codes import CODE_ALPHABET, format_code, parse_code
from tfviz.classroom.live import SessionGone, UnknownCode, WrongKey
from tfviz.classroom.store import open_store
from tfviz.exercises.fmt import fmt_values
from tfviz.exercises.registry import EXERCISES


# -- the catalogue agrees with the exercises ------------------------------------------------

@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_catalogue_names_every_box_and_slip(exercise_id):
    assert list(catalog.STEPS) == list(EXERCISES)
    for seed in (None, 1, 2, 3, 4):  # moe-gate declares other slips in seeds 2-4
        inst = EXERCISES[exercise_id].make(seed)
        names = [f.name for f in inst.answer_fields]
        assert names == list(catalog.STEPS[exercise_id][:len(names)]), (exercise_id, seed)
        for f in inst.answer_fields:
            assert set(f.declared) <= set(catalog.SLIP_LABELS), (exercise_id, f.name, f.declared)


def test_a_slip_the_checker_diagnoses_is_accepted_as_it_comes(store):
    """End to end: type a slipped answer, take the checker's Feedback.mistake, send it."""
    code, key = store.start()
    inst = EXERCISES["flying-arrows"].make(None)
    box = inst.field("weights")
    sent = 0
    for mistake in box.mistakes:
        fb = inst.check("weights", fmt_values(mistake.values))
        assert not fb.correct and fb.mistake
        store.submit_answer(code, "flying-arrows", "weights", fb.correct, fb.mistake)
        sent += 1
    (row,) = store.summary(code, key)
    assert row.answered == sent == 3 and row.right == 0
    assert {s.slip for s in row.slips} == {"no_scale", "divide_dk", "wrong_axis"}


# -- only the key drives --------------------------------------------------------------------

def test_wrong_key_cannot_drive_end_or_read_answers(store):
    code, key = store.start(lesson="self-attention", text="flying arrows", model="gpt-tiny")
    other_code, other_key = store.start()
    before = store.state(code)
    for guess in (None, "", code, format_code(code), other_key, key.upper(), key + "x", key[:-1],
                  key.encode(), 0, "\udcff", "é" * 22):
        with pytest.raises(WrongKey, match="Only the teacher"):
            store.update(code, guess, lesson="masking", layer=2)
        with pytest.raises(WrongKey):
            store.summary(code, guess)
        with pytest.raises(WrongKey):
            store.end(code, guess)
    assert store.state(code) == before  # same lesson, same version
    assert store.update(code, key, lesson="masking").lesson == "masking"


def test_what_a_student_reads_is_a_frozen_copy_without_the_key(store):
    code, key = store.start(text="the cat sat")
    seen = store.state(code)
    assert key not in repr(seen) and all(key not in str(v) for v in dataclasses.astuple(seen))
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.lesson = "masking"
    assert store.state(code).lesson == "home"


def test_the_code_neither_contains_nor_derives_the_key(store, monkeypatch):
    pairs = [store.start() for _ in range(40)]
    codes, keys = zip(*pairs)
    assert len(set(codes)) == len(set(keys)) == 40
    for code, key in pairs:
        assert len(code) == 8 and set(code) <= set(CODE_ALPHABET)
        assert len(key) >= 22  # token_urlsafe(16): 16 random bytes, 128 bits
        assert code not in key and code.lower() not in key.lower()
    # The same code drawn twice (forced here) still comes with unrelated keys: the key is
    # not a function of the code.
    monkeypatch.setattr(live, "new_code", lambda: "K7QM4XPD")
    first = open_store("sqlite://").start()
    second = open_store("sqlite://").start()
    assert first[0] == second[0] == "K7QM4XPD" and first[1] != second[1]


def test_code_is_read_back_however_a_student_types_it():
    assert parse_code("k7qm-4xpd") == parse_code(" K7QM 4XPD ") == "K7QM4XPD"
    for bad in ("", "K7QM4XP", "K7QM4XPDD", "K7QM4XP!", "K7QM4XPÉ", "<b>K7QM4XPD</b>", "😀" * 8,
                None, 12345678, "x" * 100_000):
        assert parse_code(bad) is None


# -- two classes never meet -----------------------------------------------------------------

def test_two_sessions_never_see_each_others_state_or_answers(store):
    a, ka = store.start(lesson="masking", text="how are you", model="gpt-tiny")
    b, kb = store.start(lesson="tokenizer", text="flying arrows", model="bert-tiny")
    store.update(a, ka, layer=2, head=3, step=4)
    store.submit_answer(a, "layernorm", "std", False, "variance")
    sb = store.state(b)
    assert (sb.lesson, sb.text, sb.model, sb.layer, sb.head, sb.step, sb.version) == (
        "tokenizer", "flying arrows", "bert-tiny", 0, 0, 0, 1)
    assert store.summary(b, kb) == ()
    assert [r.step for r in store.summary(a, ka)] == ["std"]
    with pytest.raises(WrongKey):
        store.update(b, ka, layer=1)  # a's key does not open b
    store.end(a, ka)
    assert store.state(b).lesson == "tokenizer"


# -- expiry and ending ----------------------------------------------------------------------

def test_expired_code_gives_a_friendly_message(store, clock):
    code, key = store.start()
    for _ in range(3):  # students polling do not keep a session alive
        clock.advance(hours=1)
        store.state(code)
    clock.advance(hours=live.IDLE_HOURS - 3, seconds=-1)
    assert store.state(code).code == code
    clock.advance(seconds=1)
    for call in (lambda: store.state(code), lambda: store.submit_answer(code, "layernorm", "mean",
                                                                          True)):
        with pytest.raises(SessionGone) as err:
            call()
        message = str(err.value)
        assert "closed" in message and "new code" in message and "Traceback" not in message
    with pytest.raises(SessionGone):
        store.update(code, key, layer=1)
    assert len(store) == 0


def test_the_teacher_keeps_a_session_alive(store, clock):
    code, key = store.start()
    for _ in range(10):
        clock.advance(hours=live.IDLE_HOURS - 0.5)
        store.update(code, key, step=1)  # unchanged state still counts as the teacher's action
    assert store.state(code).step == 1


def test_an_ended_class_keeps_its_answers_for_its_teacher_for_a_day_then_forgets_them(store, clock):
    code, key = store.start()
    store.submit_answer(code, "layernorm", "mean", True)
    store.submit_answer(code, "layernorm", "mean", False)
    assert store.not_downloaded(code, key) == 2  # what the confirmation names
    store.end(code, key)
    with pytest.raises(SessionGone, match="ended"):
        store.state(code)
    with pytest.raises(SessionGone):
        store.submit_answer(code, "layernorm", "mean", True)
    with pytest.raises(SessionGone):  # the live dashboard's check still says "ended"
        store.summary(code, key)
    with pytest.raises(WrongKey):  # ended, the answers are still the teacher's alone
        store.export_rows(code, key[:-1])
    clock.advance(seconds=live.REMEMBER_GONE_S - 1)
    store.sweep()
    (row,) = store.summary(code, key, closed_ok=True)
    assert (row.answered, row.right) == (2, 1)
    assert [r["correct"] for r in store.export_rows(code, key)] == [True, False]
    assert store.not_downloaded(code, key) == 0
    clock.advance(seconds=1)
    store.sweep()  # a day after the end: swept, the answers are gone, not hidden
    assert store.backend.answers(code) == [] and store.backend.get(code) is None
    with pytest.raises(UnknownCode):  # and the code is simply unknown
        store.state(code)
    with pytest.raises(UnknownCode):
        store.export_rows(code, key)


def test_unknown_and_malformed_codes_get_friendly_messages(store):
    with pytest.raises(UnknownCode, match="No live class has the code K7QM-4XPD"):
        store.state("k7qm4xpd")
    for junk in ("", "hello", "<script>", "😀", None, 42, "x" * 100_000):
        with pytest.raises(UnknownCode, match="like K7QM-4XPD"):
            store.state(junk)
