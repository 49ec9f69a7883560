"""The live-class store in one SQLite file: the embedded default, shared by every server process
on one machine.

Three tables: ``classes`` (one row per session: its status and last teacher action as columns,
the rest as JSON), ``answers`` (one row per answer, no names) and ``budget`` (the times a client
spent a rate-limited try). Every statement is parameterised.

Why it is safe across processes: the file is in WAL mode, so readers (students polling every
second) never wait for a writer, and every read-modify-write runs inside ``BEGIN IMMEDIATE``,
which takes the one write lock before reading; two replicas moving one class cannot both read
the old version. ``synchronous=FULL``: a commit returns only after the WAL is on disk, so an
answer acknowledged to a student survives a crash of the process and of the machine.

The file is created with mode 0600 (SQLite gives its -wal and -shm files the same mode).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
import uuid

from tfviz.classroom.guard import BadStoreURL, SessionGone, StoreDown

BUSY_TIMEOUT_S = 5.0  # a writer waits this long for the lock, then the call reports StoreDown

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY,
    status TEXT NOT NULL,            -- live, ended, expired
    last_teacher REAL NOT NULL,
    gone_at REAL,
    data TEXT NOT NULL               -- the teacher key, the state, when it started (JSON)
);
CREATE INDEX IF NOT EXISTS classes_live ON classes (status, last_teacher);
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL,
    exercise TEXT NOT NULL,
    box TEXT NOT NULL,
    correct INTEGER NOT NULL,
    slip TEXT,
    t REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS answers_by_box ON answers (code, exercise, box);
CREATE TABLE IF NOT EXISTS budget (kind TEXT NOT NULL, client TEXT NOT NULL, t REAL NOT NULL);
CREATE INDEX IF NOT EXISTS budget_by_client ON budget (kind, client, t);
"""


def _down(method):
    """Any failure of the database (locked too long, disk full, file gone) is StoreDown."""
    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as err:
            raise StoreDown() from err
    return wrapped


def _record(row) -> dict | None:
    if row is None:
        return None
    status, last_teacher, gone_at, data = row
    return {**json.loads(data), "status": status, "last_teacher": last_teacher, "gone_at": gone_at}


class SQLiteStore:
    """One SQLite file (``path``), or ``None`` for a private in-memory database (doctests)."""

    def __init__(self, path: str | None):
        self.path = path
        self.url = f"sqlite:///{path}" if path else "sqlite://"
        self._local = threading.local()  # one connection per thread (sqlite3's rule)
        if path is None:
            self._target, self._uri = f"file:tfviz-{uuid.uuid4().hex}?mode=memory&cache=shared", True
            self._keep = self._connect()  # an in-memory database lives while a connection does
        else:
            self._target, self._uri = path, False
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise BadStoreURL(f"The live-class store {self.url} cannot be opened: the folder "
                                  f"{folder} does not exist.")
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # 0600 from the first byte
                os.close(fd)
            except OSError as err:
                raise BadStoreURL(f"The live-class store {self.url} cannot be opened: "
                                  f"{err.strerror}.") from err
        try:
            with self._write() as db:  # executescript would commit on its own
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
        except sqlite3.Error as err:
            raise BadStoreURL(f"The live-class store {self.url} cannot be opened: {err}.") from err

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._target, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                             uri=self._uri, check_same_thread=False)
        if self.path is not None:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    @contextlib.contextmanager
    def _write(self):
        """One transaction holding the write lock from its first read (BEGIN IMMEDIATE)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- sessions --
    @_down
    def get(self, code: str) -> dict | None:
        return _record(self._db.execute(
            "SELECT status, last_teacher, gone_at, data FROM classes WHERE code = ?",
            (code,)).fetchone())

    @staticmethod
    def _row(rec: dict) -> tuple:
        data = {k: v for k, v in rec.items() if k not in ("status", "last_teacher", "gone_at")}
        return rec["status"], rec["last_teacher"], rec["gone_at"], json.dumps(data)

    @_down
    def create(self, rec: dict) -> bool:
        with self._write() as db:
            cur = db.execute("INSERT OR IGNORE INTO classes (status, last_teacher, gone_at, data, "
                             "code) VALUES (?, ?, ?, ?, ?)", (*self._row(rec), rec["code"]))
            return cur.rowcount == 1

    @_down
    def change(self, code: str, fn) -> dict:
        with self._write() as db:
            rec = _record(db.execute("SELECT status, last_teacher, gone_at, data FROM classes "
                                     "WHERE code = ?", (code,)).fetchone())
            if rec is None:
                raise SessionGone("This live session has closed. Ask your teacher for a new code.")
            rec = fn(rec)
            db.execute("UPDATE classes SET status = ?, last_teacher = ?, gone_at = ?, data = ? "
                       "WHERE code = ?", (*self._row(rec), code))
            return rec

    @_down
    def live_count(self, since: float) -> tuple[int, tuple[str, float] | None]:
        db = self._db
        (count,) = db.execute("SELECT COUNT(*) FROM classes WHERE status = 'live' AND "
                              "last_teacher > ?", (since,)).fetchone()
        oldest = db.execute("SELECT code, last_teacher FROM classes WHERE status = 'live' AND "
                            "last_teacher > ? ORDER BY last_teacher LIMIT 1", (since,)).fetchone()
        return count, (tuple(oldest) if oldest else None)

    @_down
    def sweep(self, now: float, idle_s: float, remember_s: float, budget_s: float) -> None:
        """Close idle sessions, drop the answers of closed ones, forget old codes and tries."""
        with self._write() as db:
            db.execute("UPDATE classes SET status = 'expired', gone_at = last_teacher + ? "
                       "WHERE status = 'live' AND last_teacher <= ?", (idle_s, now - idle_s))
            db.execute("DELETE FROM answers WHERE code IN (SELECT code FROM classes WHERE "
                       "status != 'live')")
            db.execute("DELETE FROM classes WHERE status != 'live' AND gone_at <= ?",
                       (now - remember_s,))
            db.execute("DELETE FROM budget WHERE t <= ?", (now - budget_s,))

    # -- answers --
    @_down
    def add_answer(self, code: str, row: dict, *, alive_since: float, max_answers: int,
                   max_slip_kinds: int) -> str:
        """Store one answer row if the session is live and not full: "ok", "gone" or "full".
        A slip beyond the box's ``max_slip_kinds`` distinct ones is stored as none."""
        with self._write() as db:
            live = db.execute("SELECT 1 FROM classes WHERE code = ? AND status = 'live' AND "
                              "last_teacher > ?", (code, alive_since)).fetchone()
            if live is None:
                return "gone"
            (n,) = db.execute("SELECT COUNT(*) FROM answers WHERE code = ?", (code,)).fetchone()
            if n >= max_answers:
                return "full"
            slip = row["slip"]
            if slip is not None:
                box = (code, row["exercise"], row["box"])
                seen = db.execute("SELECT 1 FROM answers WHERE code = ? AND exercise = ? AND "
                                  "box = ? AND slip = ? LIMIT 1", (*box, slip)).fetchone()
                if seen is None:
                    (kinds,) = db.execute("SELECT COUNT(DISTINCT slip) FROM answers WHERE "
                                          "code = ? AND exercise = ? AND box = ?", box).fetchone()
                    slip = slip if kinds < max_slip_kinds else None
            db.execute("INSERT INTO answers (code, exercise, box, correct, slip, t) VALUES "
                       "(?, ?, ?, ?, ?, ?)", (code, row["exercise"], row["box"],
                                              int(row["correct"]), slip, row["t"]))
            return "ok"

    @_down
    def answers(self, code: str) -> list[dict]:
        rows = self._db.execute("SELECT exercise, box, correct, slip, t FROM answers WHERE "
                                "code = ? ORDER BY id", (code,)).fetchall()
        return [{"exercise": e, "box": b, "correct": bool(c), "slip": s, "t": t}
                for e, b, c, s, t in rows]

    @_down
    def drop_answers(self, code: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM answers WHERE code = ?", (code,))

    # -- rate limits --
    @_down
    def recent(self, kind: str, client, since: float) -> int:
        (n,) = self._db.execute("SELECT COUNT(*) FROM budget WHERE kind = ? AND client = ? AND "
                                "t > ?", (kind, str(client), since)).fetchone()
        return n

    @_down
    def spend(self, kind: str, client, now: float, window: float) -> None:
        with self._write() as db:
            db.execute("DELETE FROM budget WHERE kind = ? AND client = ? AND t <= ?",
                       (kind, str(client), now - window))
            db.execute("INSERT INTO budget (kind, client, t) VALUES (?, ?, ?)",
                       (kind, str(client), now))

    def ping(self) -> None:
        self.get("")
