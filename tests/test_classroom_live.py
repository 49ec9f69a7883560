"""Live class sessions (tfviz.classroom.live): who may drive, isolation, expiry, caps, the
slip dashboard's counts, and thread safety. A fake clock stands in for time everywhere."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from tfviz.classroom import catalog, live
from tfviz.classroom.codes import CODE_ALPHABET, format_code, parse_code
from tfviz.classroom.live import (BadValue, LiveStore, ServerFull, SessionFull, SessionGone,
                                  TooManyTries, UnknownCode, WrongKey)
from tfviz.exercises.fmt import fmt_values
from tfviz.exercises.registry import EXERCISES
from tfviz.textinput import MAX_TEXT_CHARS


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float = 0.0, seconds: float = 0.0) -> None:
        self.now += hours * 3600 + seconds


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(clock):
    return LiveStore(clock=clock)


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
    first = LiveStore().start()
    second = LiveStore().start()
    assert first[0] == second[0] == "K7QM4XPD" and first[1] != second[1]


def test_code_is_read_back_however_a_student_types_it():
    assert parse_code("k7qm-4xpd") == parse_code(" K7QM 4XPD ") == "K7QM4XPD"
    for bad in ("", "K7QM4XP", "K7QM4XPDD", "K7QM4XP0", "K7QM4XPI", "<b>K7QM4XPD</b>", "😀" * 8,
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


def test_ending_drops_everything(store, clock):
    code, key = store.start()
    store.submit_answer(code, "layernorm", "mean", True)
    store.end(code, key)
    with pytest.raises(SessionGone, match="ended"):
        store.state(code)
    with pytest.raises(SessionGone):
        store.summary(code, key)
    assert code not in store._sessions  # noqa: SLF001 - the answers are gone, not hidden
    clock.advance(seconds=live.REMEMBER_GONE_S)
    with pytest.raises(UnknownCode):  # a day later the code is simply unknown
        store.state(code)


def test_unknown_and_malformed_codes_get_friendly_messages(store):
    with pytest.raises(UnknownCode, match="No live class has the code K7QM-4XPD"):
        store.state("k7qm4xpd")
    for junk in ("", "hello", "<script>", "😀", None, 42, "x" * 100_000):
        with pytest.raises(UnknownCode, match="like K7QM-4XPD"):
            store.state(junk)


# -- caps -----------------------------------------------------------------------------------

def test_session_cap_refuses_then_evicts_the_oldest_idle(clock):
    store = LiveStore(clock=clock, max_sessions=3)
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


def test_a_busy_session_is_not_evicted(clock):
    store = LiveStore(clock=clock, max_sessions=2)
    (a, ka), (b, kb) = store.start(), store.start()
    clock.advance(hours=1)
    store.update(a, ka, step=1)
    store.update(b, kb, step=1)
    with pytest.raises(ServerFull):
        store.start()


def test_answer_cap_per_session(clock):
    store = LiveStore(clock=clock, max_answers=5)
    code, key = store.start()
    other, other_key = store.start()
    for _ in range(5):
        store.submit_answer(code, "moe-gate", "gates", True)
    with pytest.raises(SessionFull):
        store.submit_answer(code, "moe-gate", "gates", True)
    store.submit_answer(other, "moe-gate", "gates", True)  # per session, not per server
    assert store.summary(code, key)[0].answered == 5


def test_slip_kinds_per_box_are_bounded(store, monkeypatch):
    monkeypatch.setattr(live, "MAX_SLIP_KINDS", 2)
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
    assert not store._failed.exhausted("10.0.0.8", clock())  # noqa: SLF001


def test_starts_are_rate_limited_per_client(store, clock):
    for _ in range(live.MAX_STARTS):
        store.start(client="teacher-pc")
    with pytest.raises(TooManyTries):
        store.start(client="teacher-pc")
    store.start(client="other-pc")
    clock.advance(seconds=live.START_WINDOW_S)
    store.start(client="teacher-pc")


# -- the slip dashboard ---------------------------------------------------------------------

def test_summary_aggregates_scripted_answers(store):
    code, key = store.start()
    # Sent out of order on purpose; the summary follows the exercises' order.
    script = (
        [("causal-mask", "masked", False, "zero_fill")] * 2
        + [("causal-mask", "masked", False, "wrong_triangle+diagonal")]
        + [("flying-arrows", "weights", True, None)] * 5
        + [("flying-arrows", "weights", False, "no_scale")] * 12
        + [("flying-arrows", "weights", False, "divide_dk")] * 2
        + [("flying-arrows", "weights", False, None)] * 3
        + [("flying-arrows", "weights", True, "no_scale")]  # right: a slip sent along is ignored
        + [("flying-arrows", "scaled", False, "no_scale+divide_dk")] * 2
        + [("flying-arrows", "scaled", False, "divide_dk+no_scale")]
    )
    for exercise_id, step, correct, slip in script:
        store.submit_answer(code, exercise_id, step, correct, slip)
    for bad in (("no-such", "weights", True, None), ("flying-arrows", "pos9", True, None),
                ("flying-arrows", "weights", 1, None), ("flying-arrows", "weights", False, "oops"),
                ("flying-arrows", "weights", False, "no_scale+no_scale")):
        with pytest.raises(BadValue):
            store.submit_answer(code, *bad)
    rows = {(r.exercise_id, r.step): r for r in store.summary(code, key)}
    assert list(rows) == [("flying-arrows", "scaled"), ("flying-arrows", "weights"),
                          ("causal-mask", "masked")]
    weights = rows["flying-arrows", "weights"]
    # Hand count: 5 + 12 + 2 + 3 + 1 = 23 answers; 5 + 1 = 6 right; slips 12 and 2.
    assert (weights.answered, weights.right) == (23, 6)
    assert weights.lines() == ["23 answered, 6 right", "12 forgot to divide by √d_k",
                               "2 divided by d_k instead of √d_k"]
    scaled = rows["flying-arrows", "scaled"]
    assert (scaled.answered, scaled.right) == (3, 0)
    assert [(s.slip, s.count) for s in scaled.slips] == [("divide_dk+no_scale", 3)]
    masked = rows["causal-mask", "masked"]
    assert (masked.answered, masked.right) == (3, 0)
    assert [(s.count, s.label) for s in masked.slips] == [
        (2, "filled hidden scores with 0 instead of −∞"),
        (1, "masked the diagonal too, or hid the past instead of the future")]


# -- threads --------------------------------------------------------------------------------

def test_concurrent_updates_keep_a_consistent_version(store):
    code, key = store.start()
    n_threads, n_updates = 8, 150
    seen: list[list[int]] = [[] for _ in range(n_threads)]
    torn: list[object] = []
    stop = threading.Event()

    def teacher(t: int) -> None:
        for i in range(n_updates):
            v = (t * n_updates + i) % 64
            # Every call changes the text, so every call is one new version; layer and head
            # always move together, so a reader seeing them differ saw half an update.
            seen[t].append(store.update(code, key, text=f"t{t} i{i}", layer=v, head=v).version)

    sent, right = [0] * 3, [0] * 3

    def student(k: int) -> None:
        last = 0
        while not stop.is_set():
            s = store.state(code)
            if s.layer != s.head or s.version < last:
                torn.append(s)
            last = s.version
            if sent[k] < 500:  # well under the session's answer cap
                store.submit_answer(code, "bpe-merges", "counts", s.layer % 2 == 0)
                sent[k] += 1
                right[k] += s.layer % 2 == 0

    students = [threading.Thread(target=student, args=(k,)) for k in range(3)]
    teachers = [threading.Thread(target=teacher, args=(t,)) for t in range(n_threads)]
    for th in students + teachers:
        th.start()
    for th in teachers:
        th.join()
    stop.set()
    for th in students:
        th.join()
    versions = [v for vs in seen for v in vs]
    assert not torn
    assert sorted(versions) == list(range(2, 2 + n_threads * n_updates))  # each exactly once
    assert all(a < b for vs in seen for a, b in zip(vs, vs[1:]))
    assert store.state(code).version == 1 + n_threads * n_updates
    (row,) = store.summary(code, key)
    assert (row.answered, row.right) == (sum(sent), sum(right)) and row.answered > 0
