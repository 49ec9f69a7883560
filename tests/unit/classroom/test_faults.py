"""The live-class store under faults, each reproduced by injecting it: an eviction that races a
teacher's action (an interleaving forced by a hook), a COMMIT that fails (SQLite), a crash
between the two writes of a create (Redis), and classes that closed while nobody started a new
one (the sweeper thread). A fake clock stands in for time."""
from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from tfviz.classroom import live
from tfviz.classroom.guard import ServerFull, StoreDown


# -- the eviction race (start) --------------------------------------------------------------

def test_a_teacher_who_acts_while_start_picks_an_eviction_keeps_the_class(make_store, clock):
    """start() reads the oldest idle class, then expires it. A teacher who acts in between
    (here, forced: the hook runs right after the read) has made the class busy again; it must
    not be evicted, and the new teacher is told the server is full."""
    store = make_store(max_sessions=1)
    code, key = store.start()
    clock.advance(seconds=live.EVICT_IDLE_MINUTES * 60 + 1)  # idle long enough to give way
    read = store.backend.live_count

    def then_the_teacher_acts(since):
        seen = read(since)
        store.update(code, key, layer=3)  # between the read and the eviction
        return seen

    store.backend.live_count = then_the_teacher_acts
    with pytest.raises(ServerFull):
        store.start()
    store.backend.live_count = read
    assert store.state(code).layer == 3 and store.update(code, key, layer=4).layer == 4
    assert len(store) == 1


def test_an_idle_class_still_gives_way_to_a_new_one(make_store, clock):
    store = make_store(max_sessions=1)
    code, key = store.start()
    store.submit_answer(code, "layernorm", "std", True)
    clock.advance(seconds=live.EVICT_IDLE_MINUTES * 60 + 1)
    new_code, _ = store.start()
    assert new_code != code and len(store) == 1
    assert len(store.export_rows(code, key)) == 1  # evicted, its answers kept for the day


# -- a COMMIT that fails (SQLite) -----------------------------------------------------------

class _FailingCommit:
    """A connection whose next COMMIT fails as a full disk would; everything else passes."""

    def __init__(self, db: sqlite3.Connection):
        self.db, self.armed = db, True

    def execute(self, sql, *args):
        if self.armed and sql == "COMMIT":
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_a_failed_commit_leaves_the_connection_usable(tmp_path, clock):
    """The COMMIT of a write fails. Before the fix, the connection stayed inside the open
    transaction, so every later BEGIN IMMEDIATE on that thread failed ("cannot start a
    transaction within a transaction") and the thread reported the store down for good."""
    from tfviz.classroom.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'live.sqlite3'}", clock=clock)
    code, key = store.start()
    real = store.backend._db
    store.backend._local.db = _FailingCommit(real)
    with pytest.raises(StoreDown):
        store.submit_answer(code, "layernorm", "std", True)
    assert not real.in_transaction
    store.submit_answer(code, "layernorm", "std", False)  # the same thread, the next write
    store.backend._local.db = real
    (row,) = store.summary(code, key)
    assert (row.answered, row.right) == (1, 0)  # the failed one was not stored, this one was


# -- a crash between the two writes of a create (Redis) --------------------------------------

def test_a_crash_inside_create_leaves_no_class_uncounted(redis_url, clock):
    """create() wrote the class with SET NX, then added it to the live set with ZADD. A crash
    between the two (forced: the connection dies after the first command) left a class that no
    count or sweep could see. Every live record must be in the live set, whatever the crash."""
    import redis

    from tests.support.redis_server import flush
    from tfviz.classroom.store import open_store

    flush(redis_url)
    store = open_store(redis_url, clock=clock)
    r = store.backend.r
    real, sent = r.execute_command, []

    def dies_after_one_command(*args, **kwargs):
        if sent:
            raise redis.exceptions.ConnectionError("the replica was killed")
        sent.append(args[0])
        return real(*args, **kwargs)

    r.execute_command = dies_after_one_command
    try:
        store.backend.create({"code": "K7QM4XPD", "key": "k", "state": {}, "last_teacher": clock(),
                              "started": clock(), "status": "live", "gone_at": None})
    except StoreDown:
        pass
    finally:
        r.execute_command = real
    records = {k.removeprefix("tfviz:class:") for k in r.scan_iter("tfviz:class:*")}
    counted = set(r.zrange("tfviz:live", 0, -1))
    assert records == counted
    assert len(store) == len(records)


# -- the sweeper: clean-up without a start ---------------------------------------------------

def test_each_process_sweeps_on_a_timer_without_waiting_for_a_start(make_store, clock):
    from tfviz.classroom.sweeper import Sweeper

    store = make_store()
    code, key = store.start()
    store.submit_answer(code, "layernorm", "std", True)
    store.end(code, key)
    clock.advance(seconds=live.REMEMBER_GONE_S + 1)  # the class's day is over
    sweeper = Sweeper(store, every_s=0.01)
    sweeper.start()
    try:
        assert sweeper.name.startswith("tfviz-") and sweeper.daemon
        deadline = time.monotonic() + 10
        while store.backend.get(code) is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.backend.get(code) is None and store.backend.answers(code) == []
    finally:
        sweeper.stop()
    assert not sweeper.is_alive()


def test_the_sweeper_survives_a_store_that_is_down(make_store, monkeypatch):
    from tfviz.classroom.sweeper import Sweeper

    store = make_store()
    calls = threading.Semaphore(0)

    def down(*_args):
        calls.release()
        raise StoreDown()

    monkeypatch.setattr(store.backend, "sweep", down)
    sweeper = Sweeper(store, every_s=0.01)
    sweeper.start()
    try:
        for _ in range(3):  # it keeps trying after a failure
            assert calls.acquire(timeout=10)
        assert sweeper.is_alive()
    finally:
        sweeper.stop()


def test_the_server_starts_one_sweeper_per_process(tmp_path, monkeypatch):
    from tfviz.classroom.store import STORE_ENV, check_at_start
    from tfviz.classroom.sweeper import Sweeper

    monkeypatch.setenv(STORE_ENV, f"sqlite:///{tmp_path / 'live.sqlite3'}")
    check_at_start()
    check_at_start()  # the server entry run again
    sweepers = [t for t in threading.enumerate() if isinstance(t, Sweeper)]
    try:
        assert len(sweepers) == 1 and sweepers[0].name == "tfviz-sweep"
    finally:
        for s in sweepers:
            s.stop()
