"""Opening the live-class store: a URL names the backend (``tfviz.classroom.backend.Backend``)
where every server process finds the classes; :func:`open_backend` opens it and checks it,
:func:`open_store` puts the rules (``tfviz.classroom.live.LiveStore``) over it.

- ``sqlite:///FILE``: one SQLite file, shared by every replica on one machine (the default).
  A relative FILE is relative to the working folder; ``sqlite:////abs/path.db`` is absolute.
- ``redis://HOST:PORT/DB``: a Redis server, for replicas on several machines.
- ``sqlite://`` alone: a private in-memory database (doctests; it dies with the process).

With no URL, ``TFVIZ_STORE`` is read, and without it the file ``live-classes.sqlite3`` in the
data folder: ``TFVIZ_DATA_DIR``, else ``$XDG_DATA_HOME/tfviz``, else ``~/.local/share/tfviz``
(created with mode 0700).

>>> store_url("sqlite:///x.db"), store_url("redis://10.0.0.5:6379/0")
('sqlite:///x.db', 'redis://10.0.0.5:6379/0')
>>> store_url("mysql://db/x")
Traceback (most recent call last):
...
tfviz.classroom.guard.BadStoreURL: The live-class store mysql://db/x is not one tfviz can open: \
write sqlite:///FILE or redis://HOST:PORT/DB.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from tfviz.classroom.backend import Backend
from tfviz.classroom.guard import BadStoreURL
from tfviz.classroom.live import Limits, LiveStore

STORE_ENV, DATA_ENV = "TFVIZ_STORE", "TFVIZ_DATA_DIR"
DEFAULT_FILE = "live-classes.sqlite3"


def data_dir() -> Path:
    """The folder tfviz keeps its data in (created, mode 0700, when missing)."""
    if os.environ.get(DATA_ENV):
        folder = Path(os.environ[DATA_ENV])
    else:
        base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
        folder = Path(base) / "tfviz"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def store_url(url: str | None = None) -> str:
    """The URL to open: ``url``, else ``TFVIZ_STORE``, else the default SQLite file. A URL of
    no scheme we know raises BadStoreURL naming it."""
    url = (url or os.environ.get(STORE_ENV) or "").strip()
    if not url:
        return f"sqlite:///{data_dir() / DEFAULT_FILE}"
    if url == "sqlite://" or url.startswith(("sqlite:///", "redis://", "rediss://")):
        return url
    raise BadStoreURL(f"The live-class store {url} is not one tfviz can open: write "
                      "sqlite:///FILE or redis://HOST:PORT/DB.")


def open_backend(url: str | None = None) -> Backend:
    """The backend of ``url`` (see :func:`store_url`), opened, checked and brought to its
    schema's version."""
    url = store_url(url)
    if url.startswith("sqlite:"):
        from tfviz.classroom.sqlite_store import SQLiteStore

        path = url.removeprefix("sqlite://").removeprefix("/")
        return SQLiteStore(path or None)
    from tfviz.classroom.redis_store import RedisStore

    return RedisStore(url)


def open_store(url: str | None = None, *, clock: Callable[[], float] = time.time,
               limits: Limits = Limits()) -> LiveStore:
    """The live-class store at ``url`` (see :func:`store_url`). Raises BadStoreURL, naming the
    URL, when it cannot be opened: a server checks this once, when it starts."""
    return LiveStore(open_backend(url), clock=clock, limits=limits)


def check_at_start() -> None:
    """Open the store a server will use (``TFVIZ_STORE``, else the default file) once, when
    the server starts: a URL that cannot be opened stops it with a message naming the URL,
    rather than failing later in a learner's page. Then sweep it on a timer from this process
    (``tfviz.classroom.sweeper``)."""
    import sys

    from tfviz.classroom.sweeper import sweep_in_background

    try:
        backend = open_backend()
    except BadStoreURL as err:
        print(f"tfviz: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    sweep_in_background(LiveStore(backend))


def main(argv=None) -> None:
    """``python -m tfviz.classroom.store [URL]``: open the store as a server would, and say
    where it is and what it promises (exit 2, naming the URL, when it cannot be opened)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    try:
        backend = open_backend(args[0] if args else None)
    except BadStoreURL as err:
        print(f"tfviz: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"live-class store: {backend.url}; durability: {backend.durability()}")


if __name__ == "__main__":
    main()
