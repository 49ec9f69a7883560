"""One random checkpoint of GPT-2 small's shape per test session (bench.make_gpt2_folder),
for the tests that run the lessons at real size. Building it takes about half a minute and
0.5 GB of disk, so every test module of a session, on every xdist worker, shares the one
folder (tests/support/session_folder.py); transformers (dev-only) is needed to write it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.session_folder import session_folder


def gpt2_small_folder(tmp_path_factory) -> Path:
    """The session's GPT-2-small-shaped folder, built on first use."""
    pytest.importorskip("transformers")
    from bench.make_gpt2_folder import make_gpt2_folder

    return session_folder(tmp_path_factory, "gpt2-small-random", make_gpt2_folder)
