"""Fixtures of the live-class tests: a fake ``clock`` and a ``store`` (tfviz.classroom.live's
LiveStore) that keeps time by it. A test module imports both names to use them."""
from __future__ import annotations

import pytest

from tests.support.fake_clock import Clock
from tfviz.classroom.live import LiveStore


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(clock):
    return LiveStore(clock=clock)
