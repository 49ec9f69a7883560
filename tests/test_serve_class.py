"""scripts/serve-class.sh: two replicas behind Debian's nginx, on free loopback ports, sharing
one live-class store.

Through nginx the page arrives and carries the tfviz_replica cookie; new visitors are spread
over both replicas while a visitor with a cookie always reaches the same one (nginx names the
replica and the address it really connected to in two response headers); chromium renders a
lesson through it, which needs the websocket upgrade, and every request of that browser lands
on one replica; one live class spans both replicas (a teacher on one, students on both, the
page's long poll answered through nginx), and when a replica is SIGKILLed the script serves on
and its learners reach the other one and rejoin; stopping the script leaves no process behind.
"""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import time
import urllib.request

import psutil
import pytest

from bench.headless import Session
from bench.live_class import STAMP, get_json
from tests.support.serve import CHROMIUM, CHROMIUM_ARGS, is_local, in_own_thread
from tests.support.serve_class import NO_NGINX, ServedClass

pytestmark = pytest.mark.slow


def nginx_reachable() -> bool:
    """nginx is there, or the script can try to install it."""
    return bool(shutil.which("nginx") or os.path.exists("/usr/sbin/nginx") or shutil.which("apt-get"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not nginx_reachable():
        pytest.skip("nginx is not installed and there is no apt-get to install it")
    served = ServedClass(2, tmp_path_factory.mktemp("serve_class") / "class")
    try:
        if NO_NGINX in served.output:
            pytest.skip(f"serve-class.sh could not find or install nginx: {served.output[-500:]}")
        assert served.ready, f"serve-class.sh failed:\n{served.output[-3000:]}"
        served.processes = [psutil.Process(served.proc.pid)]
        served.processes += served.processes[0].children(recursive=True)
        served.commands = [" ".join(p.cmdline()) for p in served.processes]
        yield served
    finally:
        served.stop()


def get(url: str, cookie: str | None = None):
    """(status, headers, body) of one request, with or without a tfviz_replica cookie."""
    request = urllib.request.Request(url, headers={"Cookie": f"tfviz_replica={cookie}"} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.status, r.headers, r.read().decode()


def test_page_through_nginx_sets_the_replica_cookie(served):
    assert sorted(served.replica_ports) == ["r0", "r1"]
    status, headers, body = get(served.url + "/")
    assert status == 200
    assert '<div id="root">' in body and "streamlit" in body.lower()
    replica = headers["X-Tfviz-Replica"]
    assert f"tfviz_replica={replica}; Path=/; HttpOnly; SameSite=Lax" in headers.get_all("Set-Cookie")
    assert headers["X-Tfviz-Upstream"] == f"127.0.0.1:{served.replica_ports[replica]}"


def test_new_visitors_spread_and_a_cookie_sticks(served):
    # Without a cookie each visitor is placed at random: in 40 visits both replicas appear
    # (the chance that they do not is 2 in 2^40).
    placed = [get(served.url + "/_stcore/health")[1]["X-Tfviz-Replica"] for _ in range(40)]
    assert set(placed) == {"r0", "r1"}
    for replica, port in served.replica_ports.items():
        for _ in range(10):
            status, headers, body = get(served.url + "/_stcore/health", cookie=replica)
            assert (status, body) == (200, "ok")
            assert headers["X-Tfviz-Replica"] == replica
            assert headers["X-Tfviz-Upstream"] == f"127.0.0.1:{port}"
            assert not any("tfviz_replica" in c for c in headers.get_all("Set-Cookie", []))
    # A cookie naming no replica of this class (say, from a bigger one) is replaced.
    _, headers, _ = get(served.url + "/_stcore/health", cookie="r7")
    set_cookies = [c.split(";")[0] for c in headers.get_all("Set-Cookie")]
    assert [c for c in set_cookies if c.startswith("tfviz_replica=")] == [
        f"tfviz_replica={headers['X-Tfviz-Replica']}"]


@pytest.mark.browser
def test_chromium_renders_a_lesson_through_nginx_on_one_replica(served):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: run `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def guard(route):
        if is_local(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def visit():  # its own thread: the browser tests' session playwright holds this one
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                context.route("**/*", guard)
                page = context.new_page()
                page.goto(served.url + "/multi-head")
                # The title is drawn by the script run, which reaches the browser only through the
                # websocket: seeing it proves nginx upgraded /_stcore/stream.
                title = page.locator('[data-testid="stMain"] h1', has_text="Multi-head attention")
                title.wait_for(timeout=90_000)
                assert page.locator('[data-testid="stException"]').count() == 0
                cookies = {c["name"]: c["value"] for c in context.cookies()}
                user_agent = page.evaluate("navigator.userAgent")
            finally:
                browser.close()
        return cookies, user_agent

    cookies, user_agent = in_own_thread(visit)
    assert not outside, f"requests left localhost: {outside[:5]}"
    replica = cookies["tfviz_replica"]
    port = served.replica_ports[replica]
    # nginx logs the websocket when it closes, just after the browser did.
    log, logged = served.dir / "logs" / "access.log", []
    for _ in range(150):
        logged = [line for line in log.read_text().splitlines() if user_agent in line]
        if any('"GET /_stcore/stream HTTP/1.1" 101' in line for line in logged):
            break
        time.sleep(0.1)
    assert any('"GET /_stcore/stream HTTP/1.1" 101' in line for line in logged)
    assert any('"GET /multi-head HTTP/1.1" 200' in line for line in logged)
    assert any('"GET /media/' in line for line in logged)  # the page icon, a media file
    # The page, its scripts, the websocket and any media: all on the replica of the cookie.
    assert {re.search(r"replica=(\S+)", line)[1] for line in logged} == {replica}
    assert {re.search(r"upstream=(\S+)", line)[1] for line in logged} == {f"127.0.0.1:{port}"}


# -- a live class across the replicas -------------------------------------------------------

async def _teacher_on(url: str, replica: str):
    """A teacher's headless browser on ``replica`` starts a class: (session, code)."""
    teacher, _ = await Session.open(url, "teacher", cookies={"tfviz_replica": replica})
    run = await teacher.change(teacher.find("Start a live class", "button"))
    assert not run.error, run.error
    found = re.search(r"\b([0-9A-HJKMNP-TV-Z]{4})-([0-9A-HJKMNP-TV-Z]{4})\b", "\n".join(run.texts))
    assert found, run.texts
    return teacher, found[1] + found[2]


async def _student_on(url: str, replica: str, code: str):
    """A student's headless browser on ``replica`` opens the ?join= link: (session, follower)."""
    student, run = await Session.open(url, "", query=f"join={code}",
                                      cookies={"tfviz_replica": replica})
    assert not run.error, run.error
    assert any(f"Following class **{code[:4]}-{code[4:]}**" in t for t in run.texts), run.texts
    return student, next(iter(student.auto_reruns))


async def _follows(student, follower: str, version: int) -> None:
    """The student's follower shows the teacher's move ``version`` within a few polls."""
    for _ in range(20):
        run = await student.rerun(fragment_id=follower, auto=True)
        if any((m := STAMP.search(t)) and int(m[1]) == version for t in run.texts):
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"version {version} never reached the student")


def test_one_live_class_spans_both_replicas_and_survives_one_dying(served):
    """The teacher on r0, students on r0 and r1, one class in the shared store; then r0 is
    SIGKILLed: the script serves on, nginx sends r0's learners to r1, and a student who was on
    r0 opens the same link and is back in the class."""
    from tfviz.classroom.store import open_store

    assert served.store_url.startswith("sqlite:///")
    store = open_store(served.store_url)

    async def scenario():
        teacher, code = await _teacher_on(served.url, "r0")
        on_r0, f0 = await _student_on(served.url, "r0", code)
        on_r1, f1 = await _student_on(served.url, "r1", code)
        # The key stays in the teacher's browser; the test reads it from the store to move the
        # class as the teacher's page does on every move.
        key = store.backend.get(code)["key"]
        # The page's long poll, through nginx to r1: held open until the teacher moves.
        now = store.state(code).version
        poll = asyncio.create_task(get_json(served.url, f"/_tfviz/live/{code}?after={now}",
                                            {"tfviz_replica": "r1"}, 30))
        await asyncio.sleep(1.0)
        assert not poll.done()
        version = store.update(code, key, lesson="exercises", layer=2, head=1).version
        status, said = await poll
        assert (status, said["version"], said["layer"], said["lesson"]) == (200, version, 2, "exercises")
        await _follows(on_r1, f1, version)
        await _follows(on_r0, f0, version)
        os.kill(served.replica_pids["r0"], signal.SIGKILL)
        for s in (teacher, on_r0, on_r1):
            await s.close()
        back, f_back = await _student_on(served.url, "r0", code)  # same cookie, same link
        version = store.update(code, key, layer=1).version
        await _follows(back, f_back, version)
        await back.close()

    asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while not any("replica r0 exited" in line for line in served.lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("replica r0 exited" in line and "1 replicas serve on" in line for line in served.lines)
    assert served.proc.poll() is None  # still serving
    status, headers, body = get(served.url + "/_stcore/health", cookie="r0")
    assert (status, body) == (200, "ok")
    assert headers["X-Tfviz-Upstream"].endswith(f"127.0.0.1:{served.replica_ports['r1']}")
    # ... and names r1 in the cookie, so the learner's websocket and long polls all go there.
    assert "tfviz_replica=r1; Path=/; HttpOnly; SameSite=Lax" in headers.get_all("Set-Cookie")


def test_stop_leaves_no_process(served):
    commands = served.commands
    assert sum("streamlit run server.py" in c for c in commands) == 2
    assert sum(c.startswith("nginx: master process") for c in commands) == 1
    assert served.stop() == 128 + signal.SIGTERM
    _, left = psutil.wait_procs(served.processes, timeout=10)  # the script waited for them already
    # (one replica may be gone already: the live-class test SIGKILLs r0)
    assert not left, f"still running after the stop: {left}"
    for port in [served.port, *served.replica_ports.values()]:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_on_redis_two_replicas_teach_one_class_and_a_restart_keeps_it(tmp_path):
    """serve-class.sh --redis: the teacher on r0 and a student on r1 share the class through
    the Redis the script started; stopping the script and starting it again (its Redis reads
    its append-only file from the data folder) keeps code, key and answers."""
    from tests.support.redis_server import have_redis
    from tfviz.classroom.store import open_store

    if not (nginx_reachable() and have_redis()):
        pytest.skip("nginx or redis-server is missing: scripts/test.sh installs them")
    env = {"TFVIZ_DATA_DIR": str(tmp_path / "data")}
    first = ServedClass(2, tmp_path / "first", extra=("--redis",), env=env)
    try:
        assert first.ready, first.output[-3000:]
        assert first.store_url.startswith("redis://127.0.0.1:")
        store = open_store(first.store_url)

        async def teach():
            teacher, code = await _teacher_on(first.url, "r0")
            student, follower = await _student_on(first.url, "r1", code)
            key = store.backend.get(code)["key"]
            version = store.update(code, key, layer=2).version
            await _follows(student, follower, version)
            for s in (teacher, student):
                await s.close()
            return code, key

        code, key = asyncio.run(teach())
        store.submit_answer(code, "layernorm", "std", False, "variance")
    finally:
        assert first.stop() == 128 + signal.SIGTERM
    again = ServedClass(1, tmp_path / "again", extra=("--redis",), env=env)
    try:
        assert again.ready, again.output[-3000:]
        store = open_store(again.store_url)
        assert store.state(code).layer == 2
        (row,) = store.summary(code, key)  # the same key drives; the answer is there
        assert (row.exercise_id, row.step, row.answered) == ("layernorm", "std", 1)

        async def rejoin():
            student, _ = await _student_on(again.url, "r0", code)
            await student.close()

        asyncio.run(rejoin())
    finally:
        again.stop()
