"""Nagle's algorithm off on every connection of our server (tfviz/ui/no_delay.py), checked on a
real uvicorn server that serves from the kind of listening socket Streamlit binds."""
from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from streamlit.web.server.starlette import starlette_server

from tfviz.ui.no_delay import send_small_writes_at_once

ROOT = Path(__file__).resolve().parents[1]


async def _ok(scope, receive, send):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _served_connection(protocol: type) -> tuple[int, int]:
    """(the socket's protocol number, its TCP_NODELAY) on the server's side of a kept-alive
    connection, served by ``protocol`` from a socket bound as Streamlit binds its own."""
    listening = starlette_server._bind_socket("127.0.0.1", 0, 16)
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(_ok, http=protocol, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        for _ in range(2):  # the second request comes over the same connection
            client.request("GET", "/")
            assert client.getresponse().read() == b"ok"
        (connection,) = server.server_state.connections
        sock = connection.transport.get_extra_info("socket")
        return sock.proto, sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        client.close()
        server.should_exit = True
        thread.join(10)
        listening.close()


@pytest.fixture(scope="module")
def protocol() -> type:
    return send_small_writes_at_once()


def test_our_server_switches_nagle_off_on_each_connection(protocol):
    proto, no_delay = _served_connection(protocol)
    assert proto == 0 and no_delay != 0  # still Streamlit's kind of socket, and Nagle is off


def test_without_it_streamlits_socket_leaves_nagle_on(protocol):
    """The reason for tfviz/ui/no_delay.py: Streamlit's listening socket gives protocol 0, so
    asyncio leaves Nagle on (uvicorn issue #3149 describes the same for uvicorn's own
    pre-bound sockets). If this fails, Streamlit or uvicorn now switch it off themselves and
    no_delay.py can go."""
    plain = type("Plain", (protocol,), {"connection_made": protocol.connection_made.__wrapped__})
    assert _served_connection(plain) == (0, 0)


def test_it_wraps_once_however_often_it_is_called(protocol):
    assert send_small_writes_at_once() is protocol
    assert not getattr(protocol.connection_made.__wrapped__, "sets_no_delay", False)


def test_server_py_switches_it_on_before_serving():
    """Streamlit imports server.py before uvicorn accepts a connection; the import alone must
    leave uvicorn's protocol wrapped (in a fresh interpreter: nothing else has done it)."""
    code = ("import runpy; runpy.run_path('server.py', run_name='server'); "
            "from uvicorn.protocols.http.auto import AutoHTTPProtocol as p; "
            "print(getattr(p.connection_made, 'sets_no_delay', False))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split()[-1:] == ["True"], done.stderr[-2000:]
