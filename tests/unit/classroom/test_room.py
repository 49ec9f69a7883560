"""The room and its pacing (tfviz.classroom.live), on both backends and across replicas (two
LiveStores opened on one URL, as two server processes): students here and lost, counted and
never named; the countdown every student reads and the answers it refuses in words; results
hidden until revealed; a question's reset. A fake clock stands in for time."""
from __future__ import annotations

import dataclasses

import pytest

from tfviz.classroom import live
from tfviz.classroom.live import BadValue, SessionGone, TimeUp, WrongKey, new_student


@pytest.fixture
def replicas(make_store):
    """Two server processes' stores on one backend."""
    return make_store(), make_store()


def test_the_room_counts_students_here_across_replicas_and_forgets_those_who_left(replicas, clock):
    a, b = replicas
    code, key = a.start()
    students = [new_student() for _ in range(5)]
    for i, s in enumerate(students):
        (a if i % 2 else b).heartbeat(code, s)
    assert b.room(code, key).present == 5
    clock.advance(seconds=20)
    for s in students[:3]:
        a.heartbeat(code, s)  # a heartbeat again is the same student, not a new one
    assert a.room(code, key).present == 5
    clock.advance(seconds=live.PRESENT_S - 20)  # the last two were seen 30 s ago: gone
    assert (a.room(code, key).present, b.room(code, key).present) == (3, 3)
    clock.advance(seconds=20)
    assert a.room(code, key).present == 0


def test_im_lost_is_a_count_that_drops_when_turned_off_or_when_the_student_leaves(replicas, clock):
    a, b = replicas
    code, key = a.start()
    s1, s2, s3 = (new_student() for _ in range(3))
    a.set_lost(code, s1, True)
    b.set_lost(code, s2, True)
    b.heartbeat(code, s3)
    room = a.room(code, key)
    assert (room.present, room.lost) == (3, 2)
    a.set_lost(code, s2, False)  # turned off, on another replica than it was turned on
    assert b.room(code, key).lost == 1
    clock.advance(seconds=25)
    b.heartbeat(code, s1)  # s1 stays, and stays lost; s2 and s3 go quiet
    clock.advance(seconds=10)
    room = b.room(code, key)
    assert (room.present, room.lost) == (1, 1)
    clock.advance(seconds=live.PRESENT_S)  # s1 left too: nobody lost
    assert a.room(code, key).lost == 0


def test_nothing_in_the_room_names_a_student_and_bad_tokens_are_refused(store):
    code, key = store.start()
    token = new_student()
    store.heartbeat(code, token)
    room = store.room(code, key)
    assert token not in repr(room) and token not in repr(store.state(code))
    for bad in ("", "short", "x" * 65, "<script>alert(1)</script>", "😀" * 10, None, 7):
        with pytest.raises(BadValue, match="reload"):
            store.heartbeat(code, bad)
    with pytest.raises(BadValue):
        store.set_lost(code, token, "yes")
    with pytest.raises(WrongKey):
        store.room(code, "a guess")
    store.end(code, key)
    with pytest.raises(SessionGone):
        store.heartbeat(code, token)


def test_answered_counts_answers_to_the_current_question(replicas):
    a, b = replicas
    code, key = a.start()
    assert a.room(code, key).answered == 0 and a.room(code, key).question == ()
    a.submit_answer(code, "layernorm", "std", True)
    b.ask(code, key, "layernorm", "std")
    a.submit_answer(code, "layernorm", "std", False, "variance")
    b.submit_answer(code, "layernorm", "mean", True)  # another box: not this question's
    room = a.room(code, key)
    assert (room.question, room.answered) == (("layernorm", "std"), 2)
    assert b.state(code).question == ("layernorm", "std")
    with pytest.raises(BadValue):
        a.ask(code, key, "layernorm", "no-such-box")
    a.ask(code, key, None)
    assert a.room(code, key).question == () and a.state(code).question == ()


def test_a_countdown_every_student_reads_and_the_late_answers_it_refuses_in_words(replicas, clock):
    a, b = replicas
    code, key = a.start()
    with pytest.raises(BadValue, match="Pick the question first"):
        a.start_countdown(code, key, 30)
    a.ask(code, key, "flying-arrows", "weights")
    for bad in (0, -5, 3601, True, "30", None):
        with pytest.raises(BadValue):
            a.start_countdown(code, key, bad)
    version = a.state(code).version
    state = a.start_countdown(code, key, 30)
    seen = b.state(code)  # another replica's student
    assert seen.version == version + 1 and seen.deadline == clock.now + 30
    assert b.seconds_left(seen) == 30 and a.room(code, key).seconds_left == 30
    clock.advance(seconds=29)
    b.submit_answer(code, "flying-arrows", "weights", True)  # in time
    clock.advance(seconds=1 + live.LATE_GRACE_S)  # zero, and the grace for the trip: still in
    b.submit_answer(code, "flying-arrows", "weights", True)
    assert b.seconds_left(b.state(code)) == 0
    clock.advance(seconds=0.5)
    with pytest.raises(TimeUp) as err:
        b.submit_answer(code, "flying-arrows", "weights", False, "no_scale")
    assert "Time was up" in str(err.value) and "not counted" in str(err.value)
    b.submit_answer(code, "flying-arrows", "scores", True)  # other boxes are not timed
    assert a.room(code, key).answered == 2
    assert [(s.step, s.answered) for s in a.summary(code, key)] == [("scores", 1), ("weights", 2)]
    a.start_countdown(code, key, 10)  # again: answers are taken again until the new zero
    b.submit_answer(code, "flying-arrows", "weights", True)
    clock.advance(seconds=20)
    a.stop_countdown(code, key)
    b.submit_answer(code, "flying-arrows", "weights", True)
    assert a.room(code, key).seconds_left is None and a.room(code, key).answered == 4
    assert state.deadline > 0 and a.state(code).deadline == 0


def test_results_are_hidden_until_revealed_and_a_new_question_hides_them(replicas):
    a, b = replicas
    code, key = a.start()
    a.ask(code, key, "layernorm", "std")
    assert b.state(code).revealed is False and a.room(code, key).revealed is False
    a.reveal(code, key)
    assert b.state(code).revealed is True and a.room(code, key).revealed is True
    a.reveal(code, key, shown=False)
    assert b.state(code).revealed is False
    a.reveal(code, key)
    a.ask(code, key, "layernorm", "mean")
    assert b.state(code).revealed is False
    with pytest.raises(WrongKey):
        b.reveal(code, "a guess")


def test_reset_forgets_one_boxs_answers_and_tells_the_pages(replicas, clock):
    a, b = replicas
    code, key = a.start()
    a.ask(code, key, "layernorm", "std")
    a.start_countdown(code, key, 60)
    a.reveal(code, key)
    for correct in (True, False, False):
        b.submit_answer(code, "layernorm", "std", correct, None if correct else "variance")
    b.submit_answer(code, "layernorm", "mean", True)
    assert b.state(code).resets_of("layernorm", "std") == 0
    assert a.reset_question(code, key, "layernorm", "std") == 3
    state = b.state(code)
    assert state.resets_of("layernorm", "std") == 1 and state.resets_of("layernorm", "mean") == 0
    assert (state.deadline, state.revealed, state.question) == (0.0, False, ("layernorm", "std"))
    assert [(s.step, s.answered) for s in a.summary(code, key)] == [("mean", 1)]
    assert a.room(code, key).answered == 0
    b.submit_answer(code, "layernorm", "std", False, "variance")  # a fresh first try
    (std,) = [s for s in a.summary(code, key) if s.step == "std"]
    assert (std.answered, std.right, [s.count for s in std.slips]) == (1, 0, [1])
    assert a.reset_question(code, key, "layernorm", "std") == 1
    assert b.state(code).resets_of("layernorm", "std") == 2
    with pytest.raises(WrongKey):
        b.reset_question(code, "a guess", "layernorm", "mean")
    with pytest.raises(BadValue):
        a.reset_question(code, key, "layernorm", "nope")


def test_not_downloaded_counts_answers_since_the_last_download(replicas):
    a, b = replicas
    code, key = a.start()
    assert a.not_downloaded(code, key) == 0
    for _ in range(3):
        b.submit_answer(code, "layernorm", "std", True)
    assert a.not_downloaded(code, key) == 3
    assert len(b.export_rows(code, key)) == 3
    assert a.not_downloaded(code, key) == 0
    b.submit_answer(code, "layernorm", "mean", True)
    b.submit_answer(code, "layernorm", "std", True)
    assert a.not_downloaded(code, key) == 2
    a.reset_question(code, key, "layernorm", "mean")  # one not downloaded, forgotten on purpose
    assert a.not_downloaded(code, key) == 1
    a.summary(code, key)  # reading the summary is not a download
    assert a.not_downloaded(code, key) == 1
    with pytest.raises(WrongKey):
        a.not_downloaded(code, key + "x")


def test_a_dashboard_poll_is_a_read(store, clock, monkeypatch):
    """Polling the room and the summary writes nothing (no transaction, no fsync), save the
    teacher's keep-alive at most once per TOUCH_S."""
    code, key = store.start()
    store.submit_answer(code, "layernorm", "std", True)
    writes = []
    real = store.backend.change
    monkeypatch.setattr(store.backend, "change", lambda *a, **k: writes.append(a) or real(*a, **k))
    for _ in range(5):
        clock.advance(seconds=2)
        store.room(code, key)
        store.summary(code, key)
    assert writes == []
    clock.advance(seconds=live.TOUCH_S)
    store.room(code, key)
    assert len(writes) == 1


def test_the_state_of_a_record_written_before_pacing_existed_reads_with_defaults():
    from tfviz.classroom.state import LiveState

    old = {"code": "K7QM4XPD", "lesson": "home", "version": 3, "checkin": ["q"]}
    state = LiveState.of(old)
    assert (state.question, state.deadline, state.revealed, state.resets) == ((), 0.0, False, ())
    assert dataclasses.replace(state, version=4).checkin == ("q",)
