"""A folder built once for the whole test session, whichever pytest-xdist worker asks first."""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path


def session_folder(tmp_path_factory, name: str, build) -> Path:
    """``base/name``, written by ``build(folder)`` once per session.

    Under pytest-xdist each worker has a base temporary directory of its own, all under one
    parent that belongs to this run; the folder lives in that parent, and a lock file makes a
    worker that needs it while another is building it wait for that build instead of making a
    second copy (a checkpoint of GPT-2 small's or BERT-base's size costs half a minute of CPU
    and half a gigabyte of disk). The build goes to ``name.part`` and is renamed when complete,
    so a folder that exists is whole."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not folder.is_dir():
            part = base / f"{name}.part"
            shutil.rmtree(part, ignore_errors=True)
            build(part)
            part.rename(folder)
    return folder
