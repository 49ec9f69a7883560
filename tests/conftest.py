"""Nothing here seeds the random generators for every test: that would hide whether code is
deterministic by itself. Models seed their own weights (``ModelConfig.init_seed``), library
code takes explicit generators, and a test that draws random numbers seeds them itself.

Every test process keeps its data (the live-class store's default SQLite file) in a folder of
its own (``TFVIZ_DATA_DIR``), which the servers it starts inherit: nothing is written to the
home folder, and two workers never share a class."""

import os
import tempfile

import pytest
import torch

os.environ.setdefault("TFVIZ_DATA_DIR", tempfile.mkdtemp(prefix="tfviz-test-data-"))
os.environ.pop("TFVIZ_STORE", None)

from tfviz.classroom.live import Limits  # noqa: E402
from tfviz.classroom.store import open_store  # noqa: E402

# One thread per torch op, as the app's server runs them (tfviz.ui.server_threads.one_thread_per_op).
# Set before any test, so every number a worker computes comes from the same kernels: the
# first AppTest of a worker would otherwise switch it from two threads to one halfway. The
# suite runs two workers on two cores, so more threads per op would only compete.
# TFVIZ_TEST_THREADS=N gives the tests' own thread N instead, while every page run keeps the
# server's one: what a test recomputes then may sum in another order than the page did, as on
# another CPU, and a tolerance that only held because both sides ran the same kernels fails
# (scripts/test.sh reruns the numeric tests so).
THREADS = int(os.environ.get("TFVIZ_TEST_THREADS") or 1)
torch.set_num_threads(THREADS)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Back to THREADS before each test and its fixtures: the first load of a shared model
    (tfviz.ui.cache) or a warm-up sets the thread that calls it to one, as a page's run."""
    if torch.get_num_threads() != THREADS:
        torch.set_num_threads(THREADS)


class Clock:
    """A fake clock for code that takes a ``clock`` (a callable returning seconds), such as
    tfviz.classroom.live.LiveStore: time moves only when a test advances it."""

    def __init__(self):
        self.now = 1_800_000_000.0  # wall-clock seconds, as the store keeps them (2027)

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float = 0.0, seconds: float = 0.0) -> None:
        self.now += hours * 3600 + seconds


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A redis-server of this test process's own (tests/support/redis_server.py)."""
    from tests.support.redis_server import have_redis, redis_server

    if not have_redis():
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing: scripts/test.sh installs it")
        pytest.skip("redis-server is missing: run scripts/test.sh, which installs it")
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request, tmp_path):
    """The URL of an empty store, of each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'live.sqlite3'}"
    url = request.getfixturevalue("redis_url")
    from tests.support.redis_server import flush

    flush(url)
    return url


@pytest.fixture
def make_store(store_url, clock):
    """Opens the test's store as another server process would: same URL, same fake clock."""
    return lambda **limits: open_store(store_url, clock=clock, limits=Limits(**limits))


@pytest.fixture
def store(make_store):
    """The live-class tests' store, keeping time by ``clock``, on each backend in turn."""
    return make_store()
