"""Live class sessions (tfviz.classroom.live): the caps on sessions, answers and slip kinds, the
cleaning of what the teacher sends, and the rate limits on wrong codes and on starts. A fake
clock stands in for time everywhere."""
from __future__ import annotations

import pytest

from tfviz.classroom import live
from tfviz.classroom.live import (BadValue, ServerFull, SessionFull, SessionGone, TooManyTries,
                                  UnknownCode)
from tfviz.textinput import MAX_TEXT_CHARS


# -- caps -----------------------------------------------------------------------------------

def test_session_cap_refuses_then_evicts_the_oldest_idle(make_store, clock):
    store = make_store(max_sessions=3)
    codes = []
    for _ in range(3):
        codes.append(store.start()[0])
        clock.advance(seconds=60)
    with pytest.raises(ServerFull, match="Try again"):
        store.start()
    clock.advance(hours=live.EVICT_IDLE_MINUTES / 60)
    fresh, _ = store.start()
    assert len(store) == 3 and fresh not in codes
    with pytest.raises(SessionGone):
        store.state(codes[0])  # the oldest idle one gave way
    assert store.state(codes[1]).code == codes[1]


def test_a_busy_session_is_not_evicted(make_store, clock):
    store = make_store(max_sessions=2)
    (a, ka), (b, kb) = store.start(), store.start()
    clock.advance(hours=1)
    store.update(a, ka, step=1)
    store.update(b, kb, step=1)
    with pytest.raises(ServerFull):
        store.start()


def test_answer_cap_per_session(make_store):
    store = make_store(max_answers=5)
    code, key = store.start()
    other, other_key = store.start()
    for _ in range(5):
        store.submit_answer(code, "moe-gate", "gates", True)
    with pytest.raises(SessionFull):
        store.submit_answer(code, "moe-gate", "gates", True)
    store.submit_answer(other, "moe-gate", "gates", True)  # per session, not per server
    assert store.summary(code, key)[0].answered == 5


def test_slip_kinds_per_box_are_bounded(make_store):
    store = make_store(max_slip_kinds=2)
    code, key = store.start()
    for slip in ("no_scale", "divide_dk", "wrong_axis", "no_scale"):
        store.submit_answer(code, "flying-arrows", "output", False, slip)
    (row,) = store.summary(code, key)
    assert row.answered == 4 and [(s.slip, s.count) for s in row.slips] == [
        ("no_scale", 2), ("divide_dk", 1)]


def test_text_is_cleaned_and_capped_and_small_ints_clamped(store):
    code, key = store.start()
    s = store.update(code, key, text="x" * 100_000, layer=10**9, head=-5, step=64)
    assert len(s.text) == MAX_TEXT_CHARS and (s.layer, s.head, s.step) == (63, 0, 63)
    for text in ("the cat 😀", "שלום עולם", "<b>bold</b> & <script>x</script>"):
        assert store.update(code, key, text=text).text == text  # kept as typed; pages escape it
    assert store.update(code, key, text="a\x00b\n\tc").text == "a b c"
    bad = [dict(text=""), dict(text="\x00 "), dict(text=None), dict(layer="3"), dict(head=True),
           dict(step=1.5), dict(lesson="nowhere"), dict(lesson=None), dict(model="gpt-huge"),
           dict(colour="red"), dict(version=99)]
    version = store.state(code).version
    for change in bad:
        with pytest.raises(BadValue):
            store.update(code, key, **change)
    assert store.state(code).version == version
    with pytest.raises(BadValue):
        store.start(lesson="../../etc/passwd")


def test_a_class_may_follow_any_model_of_the_sidebar(store):
    """llama-tiny is in the sidebar after the four PRESET_NAMES; a lesson's own comparison
    model (gqa-tiny, lesson 18's) is not, and a class cannot be sent to it."""
    code, key = store.start()
    assert store.update(code, key, model="llama-tiny").model == "llama-tiny"
    with pytest.raises(BadValue):
        store.update(code, key, model="gqa-tiny")


def test_wrong_codes_are_rate_limited_per_client(store, clock):
    code, _ = store.start()
    for i in range(live.MAX_FAILED_JOINS):
        with pytest.raises(UnknownCode):
            store.state(f"ZZZZ{i:04d}".replace("0", "2").replace("1", "3"), client="10.0.0.9")
    with pytest.raises(TooManyTries):
        store.state(code, client="10.0.0.9")  # even the right code, until the window passes
    assert store.state(code, client="10.0.0.7").code == code  # another client is not blocked
    assert store.state(code).code == code
    clock.advance(seconds=live.FAILED_WINDOW_S)
    assert store.state(code, client="10.0.0.9").code == code
    for _ in range(50):  # a follower polling a live code never spends its budget
        store.state(code, client="10.0.0.8")
    for i in range(live.MAX_FAILED_JOINS - 1):  # and keeps all of it for its typos
        with pytest.raises(UnknownCode):
            store.state(f"ZZZZ{i:04d}".replace("0", "2").replace("1", "3"), client="10.0.0.8")
    assert store.state(code, client="10.0.0.8").code == code


def test_starts_are_rate_limited_per_client(store, clock):
    for _ in range(live.MAX_STARTS):
        store.start(client="teacher-pc")
    with pytest.raises(TooManyTries):
        store.start(client="teacher-pc")
    store.start(client="other-pc")
    clock.advance(seconds=live.START_WINDOW_S)
    store.start(client="teacher-pc")
