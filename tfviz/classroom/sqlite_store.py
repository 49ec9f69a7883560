"""The live-class store in one SQLite file: the embedded default, shared by every server process
on one machine.

Five tables: ``classes`` (one row per session: its status and last teacher action as columns,
the rest as JSON), ``answers`` (one row per answer, no names), ``counts`` (per class, box and
slip: answered and right, updated in the transaction that adds the answer, read with
``GROUP BY``), ``presence`` (a student page's random token, when it was
last seen, "I'm lost" or not) and ``budget`` (the times a client spent a rate-limited try).
Every statement is parameterised. The schema's version is ``PRAGMA user_version``; an older
file is upgraded when it is opened (``MIGRATIONS``).

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

from tfviz.classroom.backend import NoSuchClass, Outcome, Presence, Tally
from tfviz.classroom.guard import BadStoreURL, StoreDown

BUSY_TIMEOUT_S = 5.0  # a writer waits this long for the lock, then the call reports StoreDown

#: The tables as the first release wrote them ("schema 0", no version recorded). A new file gets
#: them too, then every step of MIGRATIONS: one path, so the upgrade of an old file is the path
#: every new file takes.
SCHEMA_0 = """
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

#: Schema n-1 -> n, by n; each step ends by recording its n in ``PRAGMA user_version``.
MIGRATIONS: dict[int, str] = {
    # 1: the room (who is here, who is lost: opaque tokens, no names); a covering index the
    # counts are read from with GROUP BY; when the teacher last downloaded the answers (kept in
    # the JSON of ``classes.data``, nothing to add for it).
    1: """
CREATE TABLE IF NOT EXISTS presence (
    code TEXT NOT NULL,
    student TEXT NOT NULL,           -- a random token the student's page made, nothing else
    seen REAL NOT NULL,
    lost INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (code, student)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS presence_seen ON presence (code, seen);
CREATE INDEX IF NOT EXISTS answers_tally ON answers (code, exercise, box, correct, slip);
DROP INDEX IF EXISTS answers_by_box;
PRAGMA user_version = 1
""",
    # 2: each class's counts per box and slip, kept with each answer in its transaction, so
    # the dashboard's poll reads a few dozen rows, not a GROUP BY over 20,000 answers.
    2: """
CREATE TABLE IF NOT EXISTS counts (
    code TEXT NOT NULL,
    exercise TEXT NOT NULL,
    box TEXT NOT NULL,
    slip TEXT NOT NULL,              -- '' for the answers without a slip
    answered INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    PRIMARY KEY (code, exercise, box, slip)
) WITHOUT ROWID;
INSERT INTO counts (code, exercise, box, slip, answered, correct)
    SELECT code, exercise, box, COALESCE(slip, ''), COUNT(*), SUM(correct) FROM answers
    GROUP BY code, exercise, box, COALESCE(slip, '');
PRAGMA user_version = 2
""",
}
SCHEMA_VERSION = max(MIGRATIONS)


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
            self._upgrade()
        except sqlite3.Error as err:
            raise BadStoreURL(f"The live-class store {self.url} cannot be opened: {err}.") from err

    def _upgrade(self) -> None:
        """Bring the file to SCHEMA_VERSION, each step in one transaction with its version
        number, so two processes opening an old file at once upgrade it once."""
        with self._write() as db:  # executescript would commit on its own
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise BadStoreURL(f"The live-class store {self.url} was written by a newer tfviz "
                                  f"(schema {version}; this one knows up to {SCHEMA_VERSION}).")
            steps = [SCHEMA_0] if version == 0 else []
            steps += [MIGRATIONS[n] for n in range(version + 1, SCHEMA_VERSION + 1)]
            for script in steps:
                for statement in script.split(";"):
                    if statement.strip():
                        db.execute(statement)

    def durability(self) -> str:
        """What an acknowledged write survives, in words."""
        if self.path is None:
            return "none: an in-memory database, gone with the process"
        return "each answer is committed to disk (synchronous=FULL) before it is acknowledged"

    def _connect(self, durable: bool = True) -> sqlite3.Connection:
        db = sqlite3.connect(self._target, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                             uri=self._uri, check_same_thread=False)
        if self.path is not None:
            db.execute("PRAGMA journal_mode=WAL")
        # "Here" marks need no fsync: losing the last seconds of them in a crash costs nothing,
        # and a student's page sends one every few seconds. In WAL mode the next FULL commit
        # syncs them along with itself, so an answer's durability does not depend on this.
        if durable:
            db.execute("PRAGMA synchronous=FULL")
        else:
            db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _conn(self, durable: bool = True) -> sqlite3.Connection:
        name = "db" if durable else "light"
        db = getattr(self._local, name, None)
        if db is None:
            db = self._connect(durable)
            setattr(self._local, name, db)
        return db

    @property
    def _db(self) -> sqlite3.Connection:
        return self._conn()

    @contextlib.contextmanager
    def _write(self, durable: bool = True):
        """One transaction holding the write lock from its first read (BEGIN IMMEDIATE).

        The COMMIT is inside the ``try``: a COMMIT that fails (disk full, I/O error) leaves the
        transaction open, and without the ROLLBACK every later BEGIN on this thread's
        connection would fail. Should the ROLLBACK fail too, the connection is dropped and the
        thread's next call opens a fresh one."""
        db = self._conn(durable)
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            try:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            except sqlite3.Error:
                self._forget(durable)
            raise

    def _forget(self, durable: bool) -> None:
        """Close this thread's connection; the next call opens another."""
        name = "db" if durable else "light"
        db = getattr(self._local, name, None)
        setattr(self._local, name, None)
        with contextlib.suppress(sqlite3.Error):
            db.close()

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

    @staticmethod
    def _read(db: sqlite3.Connection, code: str) -> dict | None:
        return _record(db.execute("SELECT status, last_teacher, gone_at, data FROM classes "
                                  "WHERE code = ?", (code,)).fetchone())

    @_down
    def change(self, code: str, fn) -> dict:
        with self._write() as db:
            rec = self._read(db, code)
            if rec is None:
                raise NoSuchClass(code)
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
    def sweep(self, now: float, idle_s: float, remember_s: float, budget_s: float,
              present_s: float) -> None:
        """Close idle sessions; forget closed ones, with their answers, ``remember_s`` after
        they closed; forget old tries and old "here" marks."""
        with self._write() as db:
            db.execute("UPDATE classes SET status = 'expired', gone_at = last_teacher + ? "
                       "WHERE status = 'live' AND last_teacher <= ?", (idle_s, now - idle_s))
            db.execute("DELETE FROM answers WHERE code IN (SELECT code FROM classes WHERE "
                       "status != 'live' AND gone_at <= ?)", (now - remember_s,))
            db.execute("DELETE FROM counts WHERE code IN (SELECT code FROM classes WHERE "
                       "status != 'live' AND gone_at <= ?)", (now - remember_s,))
            db.execute("DELETE FROM classes WHERE status != 'live' AND gone_at <= ?",
                       (now - remember_s,))
            db.execute("DELETE FROM budget WHERE t <= ?", (now - budget_s,))
            db.execute("DELETE FROM presence WHERE seen <= ? OR code NOT IN (SELECT code FROM "
                       "classes WHERE status = 'live')", (now - present_s,))

    # -- answers --
    @_down
    def add_answer(self, code: str, row: dict, *, alive_since: float, max_answers: int,
                   max_slip_kinds: int, late_after: float) -> Outcome:
        with self._write() as db:
            rec = self._read(db, code)
            if rec is None or rec["status"] != "live" or rec["last_teacher"] <= alive_since:
                return Outcome.GONE
            state = rec["state"]
            deadline = state.get("deadline") or 0.0
            if deadline and list(state.get("question") or ()) == [row["exercise"], row["box"]] \
                    and row["t"] > deadline + late_after:
                return Outcome.LATE
            (n,) = db.execute("SELECT COALESCE(SUM(answered), 0) FROM counts WHERE code = ?",
                              (code,)).fetchone()
            if n >= max_answers:
                return Outcome.FULL
            slip = row["slip"]
            box = (code, row["exercise"], row["box"])
            if slip is not None:
                seen = db.execute("SELECT 1 FROM counts WHERE code = ? AND exercise = ? AND "
                                  "box = ? AND slip = ?", (*box, slip)).fetchone()
                if seen is None:
                    (kinds,) = db.execute("SELECT COUNT(*) FROM counts WHERE code = ? AND "
                                          "exercise = ? AND box = ? AND slip != ''", box).fetchone()
                    slip = slip if kinds < max_slip_kinds else None
            db.execute("INSERT INTO answers (code, exercise, box, correct, slip, t) VALUES "
                       "(?, ?, ?, ?, ?, ?)", (*box, int(row["correct"]), slip, row["t"]))
            db.execute("INSERT INTO counts (code, exercise, box, slip, answered, correct) VALUES "
                       "(?, ?, ?, ?, 1, ?) ON CONFLICT (code, exercise, box, slip) DO UPDATE SET "
                       "answered = answered + 1, correct = correct + excluded.correct",
                       (*box, slip or "", int(row["correct"])))
            return Outcome.OK

    @staticmethod
    def _rows(db: sqlite3.Connection, code: str) -> list[dict]:
        rows = db.execute("SELECT exercise, box, correct, slip, t FROM answers WHERE "
                          "code = ? ORDER BY id", (code,)).fetchall()
        return [{"exercise": e, "box": b, "correct": bool(c), "slip": s, "t": t}
                for e, b, c, s, t in rows]

    @_down
    def answers(self, code: str) -> list[dict]:
        return self._rows(self._db, code)

    @_down
    def export(self, code: str) -> list[dict]:
        with self._write() as db:
            rec = self._read(db, code)
            (last,) = db.execute("SELECT MAX(id) FROM answers WHERE code = ?", (code,)).fetchone()
            if rec is not None and last is not None:
                db.execute("UPDATE classes SET data = ? WHERE code = ?",
                           (self._row({**rec, "downloaded_upto": last})[3], code))
            return self._rows(db, code)

    @_down
    def tally(self, code: str) -> Tally:
        db = self._db
        db.execute("BEGIN")  # one snapshot for the three reads (WAL: no lock taken)
        try:
            rec = self._read(db, code)
            upto = (rec or {}).get("downloaded_upto") or 0
            boxes = {(e, b): (n, r) for e, b, n, r in db.execute(
                "SELECT exercise, box, SUM(answered), SUM(correct) FROM counts WHERE code = ? "
                "GROUP BY exercise, box", (code,))}
            slips = {(e, b, s): n for e, b, s, n in db.execute(
                "SELECT exercise, box, slip, answered FROM counts WHERE code = ? AND slip != ''",
                (code,))}
            (fresh,) = db.execute("SELECT COUNT(*) FROM answers WHERE code = ? AND id > ?",
                                  (code, upto)).fetchone()
        finally:
            db.execute("COMMIT")
        return Tally(boxes, slips, sum(n for n, _ in boxes.values()), fresh)

    @_down
    def drop_answers(self, code: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM answers WHERE code = ?", (code,))
            db.execute("DELETE FROM counts WHERE code = ?", (code,))

    @_down
    def drop_box(self, code: str, exercise: str, box: str) -> int:
        with self._write() as db:
            db.execute("DELETE FROM counts WHERE code = ? AND exercise = ? AND box = ?",
                       (code, exercise, box))
            return db.execute("DELETE FROM answers WHERE code = ? AND exercise = ? AND box = ?",
                              (code, exercise, box)).rowcount

    # -- the room --
    @_down
    def seen(self, code: str, student: str, now: float, lost: bool | None) -> None:
        with self._write(durable=False) as db:
            if lost is None:
                db.execute("INSERT INTO presence (code, student, seen) VALUES (?, ?, ?) "
                           "ON CONFLICT (code, student) DO UPDATE SET seen = excluded.seen",
                           (code, student, now))
            else:
                db.execute("INSERT INTO presence (code, student, seen, lost) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (code, student) DO UPDATE SET seen = excluded.seen, "
                           "lost = excluded.lost", (code, student, now, int(lost)))

    @_down
    def presence(self, code: str, since: float, box: tuple[str, str] | None) -> Presence:
        db = self._db
        present, lost = db.execute("SELECT COUNT(*), COALESCE(SUM(lost), 0) FROM presence "
                                   "WHERE code = ? AND seen > ?", (code, since)).fetchone()
        answered = 0
        if box:
            (answered,) = db.execute("SELECT COALESCE(SUM(answered), 0) FROM counts WHERE "
                                     "code = ? AND exercise = ? AND box = ?", (code, *box)).fetchone()
        return Presence(present, lost, answered)

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
