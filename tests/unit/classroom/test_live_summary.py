"""Live class sessions (tfviz.classroom.live): the slip dashboard's counts against a hand count,
and a consistent state and summary under concurrent teachers and students. A fake clock stands in
for time everywhere."""
from __future__ import annotations

import threading

import pytest

from tfviz.classroom.live import BadValue


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
    n_threads, n_updates = 6, 40  # every write is fsynced: kept small
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
