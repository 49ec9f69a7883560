"""The live-class store across processes, on both backends: several processes share one class,
a SIGKILL mid-stream loses no acknowledged answer, a restart keeps the class, a store that goes
away is reported as "reconnecting" and nothing is said saved that was not; plus the teacher's
export, the check-in, bad URLs, the file's mode and the SQL's parameters."""
from __future__ import annotations

import ast
import inspect
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support.redis_server import RedisServer, have_redis
from tfviz.classroom import sqlite_store
from tfviz.classroom.guard import BadStoreURL, BadValue, SessionGone, StoreDown, WrongKey
from tfviz.classroom.store import open_store
from tfviz.exercises.quiz import QUESTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

pytestmark = pytest.mark.slow


def python(code: str, *args: str, **popen) -> subprocess.Popen:
    """Another server process: a fresh Python that opens the store by URL, as a replica does."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run(code: str, *args: str) -> str:
    proc = python(code, *args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


# -- several processes, one class -----------------------------------------------------------

def test_two_processes_teach_and_answer_one_class(store_url):
    store = open_store(store_url)
    code, key = store.start(lesson="self-attention", text="flying arrows")
    # Another process moves the class and answers; this one reads it, and the other way round.
    out = run("""
        import sys
        from tfviz.classroom.store import open_store
        url, code, key = sys.argv[1:]
        s = open_store(url)
        print(s.update(code, key, lesson="masking", layer=2).version)
        s.submit_answer(code, "layernorm", "std", False, "variance")
        print(s.state(code).lesson)
    """, store_url, code, key)
    assert out.split() == ["2", "masking"]
    state = store.state(code)
    assert (state.lesson, state.layer, state.text, state.version) == ("masking", 2, "flying arrows", 2)
    store.submit_answer(code, "layernorm", "std", True)
    (row,) = store.summary(code, key)
    assert (row.answered, row.right, [s.slip for s in row.slips]) == (2, 1, ["variance"])
    assert run("""
        import sys
        from tfviz.classroom.store import open_store
        s = open_store(sys.argv[1])
        print(len(s.export_rows(sys.argv[2], sys.argv[3])))
    """, store_url, code, key).strip() == "2"


def test_concurrent_processes_keep_every_answer_and_one_version_order(store_url):
    store = open_store(store_url)
    code, key = store.start()
    writer = """
        import sys
        from tfviz.classroom.store import open_store
        url, code, key, me = sys.argv[1:]
        s = open_store(url)
        versions = [s.update(code, key, text=f"p{me} {i}").version for i in range(25)]
        for i in range(40):
            s.submit_answer(code, "bpe-merges", "counts", i % 4 == 0)
        print(*versions)
    """
    procs = [python(writer, store_url, code, key, str(i)) for i in range(3)]
    versions = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        versions += [int(v) for v in out.split()]
    assert sorted(versions) == list(range(2, 2 + 75))  # every update got its own version
    (row,) = store.summary(code, key)
    assert (row.answered, row.right) == (120, 30)


# -- nothing acknowledged is lost -----------------------------------------------------------

STREAM = """
    import sys
    from tfviz.classroom.store import open_store
    url, code = sys.argv[1:]
    s = open_store(url)
    i = 0
    while True:
        s.submit_answer(code, "flying-arrows", "scores", i % 2 == 0)
        i += 1
        print(i, flush=True)  # acknowledged: the student is told it is saved
"""


def _printed_after(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """Everything ``proc`` printed that was not read yet, once it has ended. Read through the
    same file objects as ``readline``: their buffers can already hold lines the process
    printed (``communicate`` reads the pipes underneath them and would miss those)."""
    proc.wait(timeout=timeout)
    return proc.stdout.read(), proc.stderr.read()


def _acknowledged_then_kill(proc: subprocess.Popen, at_least: int) -> int:
    acked = 0
    while acked < at_least:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        acked = int(line)
    proc.send_signal(signal.SIGKILL)
    rest, _ = _printed_after(proc, timeout=30)
    return max([acked] + [int(v) for v in rest.split()])


def test_sigkill_of_a_server_mid_stream_loses_no_acknowledged_answer(store_url):
    store = open_store(store_url)
    code, key = store.start()
    acked = _acknowledged_then_kill(python(STREAM, store_url, code), at_least=60)
    (row,) = store.summary(code, key)
    # The killed process may have committed one answer it had no time to print.
    assert acked <= row.answered <= acked + 1
    assert row.right == (row.answered + 1) // 2


def test_sigkill_of_redis_itself_loses_no_acknowledged_answer(tmp_path):
    if not have_redis():
        pytest.skip("redis-server is missing: scripts/test.sh installs it")
    server = RedisServer(tmp_path / "redis")  # appendonly yes, appendfsync always
    try:
        store = open_store(server.url)
        code, key = store.start(text="the cat sat")
        proc = python(STREAM, server.url, code)
        acked = 0
        while acked < 60:
            acked = int(proc.stdout.readline())
        server.kill()  # Redis dies mid-stream; the writer's next answer is refused
        out, err = _printed_after(proc, timeout=60)
        acked = max([acked] + [int(v) for v in out.split()])
        assert "StoreDown" in err and "reconnecting" in err  # refused loudly, not "saved"
        server.start()  # the same folder: Redis reads its append-only file back
        again = open_store(server.url)
        assert again.state(code).text == "the cat sat"
        (row,) = again.summary(code, key)
        # every acknowledged answer is there; the one in flight when Redis died may be too
        # (written and fsynced, its reply lost with the server)
        assert acked <= row.answered <= acked + 1
    finally:
        server.stop()


def test_a_restart_of_every_server_keeps_code_key_and_answers(store_url):
    out = run("""
        import sys
        from tfviz.classroom.store import open_store
        s = open_store(sys.argv[1])
        code, key = s.start(lesson="masking", text="how are you")
        s.submit_answer(code, "causal-mask", "masked", False, "zero_fill")
        s.open_checkin(code, key, sys.argv[2:], "before")
        print(code, key)
    """, store_url, *[q.id for q in QUESTIONS[:3]])
    code, key = out.split()
    # That process is gone; a new one opens the same URL.
    store = open_store(store_url)
    state = store.state(code)
    assert (state.lesson, state.text, state.checkin_phase) == ("masking", "how are you", "before")
    (row,) = store.summary(code, key)  # the same key still drives
    assert (row.exercise_id, row.answered, row.slips[0].slip) == ("causal-mask", 1, "zero_fill")
    assert store.update(code, key, step=3).step == 3


# -- a store that goes away -----------------------------------------------------------------

def test_a_redis_that_goes_away_is_reconnecting_and_nothing_is_said_saved(tmp_path):
    if not have_redis():
        pytest.skip("redis-server is missing: scripts/test.sh installs it")
    server = RedisServer(tmp_path / "redis")
    try:
        store = open_store(server.url)
        code, key = store.start()
        store.submit_answer(code, "layernorm", "mean", True)
        server.kill()
        for call in (lambda: store.state(code), lambda: store.update(code, key, step=1),
                     lambda: store.submit_answer(code, "layernorm", "mean", False, "no_center"),
                     lambda: store.summary(code, key)):
            with pytest.raises(StoreDown, match="reconnecting"):
                call()
        server.start()
        (row,) = store.summary(code, key)  # the same handle reconnects by itself
        assert (row.answered, row.right) == (1, 1)  # the refused answer was not stored
        assert store.state(code).step == 0
    finally:
        server.stop()


def test_a_locked_sqlite_file_is_reconnecting_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.2)
    url = f"sqlite:///{tmp_path / 'live.sqlite3'}"
    store = open_store(url)
    code, key = store.start()
    import sqlite3

    holder = sqlite3.connect(tmp_path / "live.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holding the write lock too long
    try:
        with pytest.raises(StoreDown, match="reconnecting"):
            store.submit_answer(code, "layernorm", "mean", True)
    finally:
        holder.execute("ROLLBACK")
    assert store.summary(code, key) == ()  # nothing was stored
    store.submit_answer(code, "layernorm", "mean", True)
    assert store.summary(code, key)[0].answered == 1


# -- what the teacher takes home ------------------------------------------------------------

def test_export_rows_are_anonymous_ordered_and_need_the_key(store, clock):
    code, key = store.start()
    store.submit_answer(code, "flying-arrows", "scores", True, client="session:abc")
    clock.advance(seconds=61)
    store.submit_answer(code, "flying-arrows", "weights", False, "no_scale", client="session:def")
    rows = store.export_rows(code, key)
    assert rows == [
        {"exercise": "flying-arrows", "box": "scores", "correct": True, "slip": "",
         "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock() - 61))},
        {"exercise": "flying-arrows", "box": "weights", "correct": False, "slip": "no_scale",
         "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))}]
    assert "session:" not in repr(rows)
    with pytest.raises(WrongKey):
        store.export_rows(code, "guess")


def test_checkin_before_and_after_side_by_side(store):
    code, key = store.start()
    asked = [q.id for q in QUESTIONS[:4]]
    state = store.open_checkin(code, key, asked, "before")
    assert (state.checkin, state.checkin_phase) == (tuple(asked), "before")
    for right in (True, False, False, False):
        store.submit_checkin(code, "before", asked[0], right)
    store.submit_checkin(code, "before", asked[1], True)
    with pytest.raises(BadValue, match="closed"):  # the phase not open now
        store.submit_checkin(code, "after", asked[0], True)
    store.open_checkin(code, key, asked, "after")
    for right in (True, True, False):
        store.submit_checkin(code, "after", asked[0], right)
    store.close_checkin(code, key)
    with pytest.raises(BadValue, match="closed"):
        store.submit_checkin(code, "after", asked[0], True)
    rows = {r.question_id: r for r in store.checkin_summary(code, key)}
    assert (rows[asked[0]].before, rows[asked[0]].after) == ((1, 4), (2, 3))
    assert rows[asked[0]].change_text() == "25% → 67%"
    assert (rows[asked[1]].before, rows[asked[1]].after) == ((1, 1), (0, 0))
    assert store.summary(code, key) == ()  # check-ins are not exercise boxes
    assert len(store.export_rows(code, key)) == 8


@pytest.mark.parametrize("questions, phase", [
    (["x", "y", "z"], "before"), ([q.id for q in QUESTIONS[:2]], "before"),
    ([q.id for q in QUESTIONS[:6]], "after"), ([q.id for q in QUESTIONS[:3]], "during"),
    ("abc", "before"), (None, "after")])
def test_a_bad_checkin_is_refused_with_a_reason(store, questions, phase):
    code, key = store.start()
    with pytest.raises(BadValue):
        store.open_checkin(code, key, questions, phase)
    assert store.state(code).checkin_phase == ""


def test_an_ended_class_is_downloadable_by_its_teacher_from_another_process(store_url):
    store = open_store(store_url)
    code, key = store.start()
    store.submit_answer(code, "layernorm", "mean", True)
    store.end(code, key)  # a mis-click: the answers stay for the day
    out = run("""
        import sys
        from tfviz.classroom.store import open_store
        s = open_store(sys.argv[1])
        print(s.not_downloaded(sys.argv[2], sys.argv[3]), len(s.export_rows(sys.argv[2], sys.argv[3])),
              s.not_downloaded(sys.argv[2], sys.argv[3]))
    """, store_url, code, key)
    assert out.split() == ["1", "1", "0"]
    with pytest.raises(SessionGone):
        store.state(code)


# -- security -------------------------------------------------------------------------------

def test_the_sqlite_file_and_its_wal_are_private(tmp_path):
    path = tmp_path / "live.sqlite3"
    store = open_store(f"sqlite:///{path}")
    store.start()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for extra in ("-wal", "-shm"):
        if os.path.exists(f"{path}{extra}"):
            assert stat.S_IMODE(os.stat(f"{path}{extra}").st_mode) == 0o600, extra


def test_hostile_strings_are_data_not_sql(store):
    code, key = store.start()
    evil = "x'); DROP TABLE classes; --"
    with pytest.raises(Exception):
        store.state(evil, client=evil)
    store.submit_answer(code, "layernorm", "mean", True, client=evil)
    assert store.state(code).code == code and store.summary(code, key)[0].answered == 1


def test_every_sql_statement_is_a_constant_with_parameters():
    """No SQL is built from values: every execute() gets a string literal."""
    tree = ast.parse(inspect.getsource(sqlite_store))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "execute"]
    assert len(calls) >= 20
    for call in calls:
        arg = call.args[0]
        literal = isinstance(arg, ast.Constant) or (isinstance(arg, ast.Name) and arg.id == "statement")
        assert literal, ast.unparse(call)


@pytest.mark.parametrize("url, named", [
    ("mysql://db/classes", "mysql://db/classes"),
    ("sqlite:////no/such/folder/live.db", "/no/such/folder"),
    ("redis://127.0.0.1:1/0", "redis://127.0.0.1:1/0"),
    ("redis://127.0.0.1:notaport/0", "redis://127.0.0.1:notaport/0")])
def test_a_bad_store_url_fails_at_start_naming_it(url, named):
    with pytest.raises(BadStoreURL) as err:
        open_store(url)
    assert named in str(err.value)
    proc = subprocess.run([sys.executable, "-m", "tfviz.classroom.store", url], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr


def test_the_store_check_says_what_each_backend_promises(tmp_path, redis_url):
    out = run("from tfviz.classroom.store import main; main()",)
    assert "live-class store: sqlite:///" in out and "synchronous=FULL" in out
    proc = subprocess.run([sys.executable, "-m", "tfviz.classroom.store", redis_url], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert f"live-class store: {redis_url}" in proc.stdout
    assert "fsync before every reply" in proc.stdout
