"""Small replies leave the server at once: Nagle's algorithm off on every connection.

Streamlit binds its listening socket itself (``socket.socket(family)``) and hands it to
uvicorn. Such a socket gives its protocol as 0 rather than TCP, and asyncio switches Nagle's
algorithm off only on connections whose socket says TCP; so on a Streamlit server it stays on.
Uvicorn writes a response's headers and its body separately, and on a kept-alive connection
Nagle holds the body back until the browser has acknowledged the headers, which a browser
delays by up to 40 ms (its delayed acknowledgement). Every script file of Streamlit's frontend
came late that way, and the files a page loads lazily (its widgets' and charts' code) come in chains of such requests. The
websocket that carries every run's messages is one of these connections too.

:func:`send_small_writes_at_once` wraps the ``connection_made`` of uvicorn's HTTP protocol (the
asyncio method each new connection passes through; a websocket starts as an HTTP request)
so that it sets ``TCP_NODELAY`` on the connection's socket. ``server.py`` calls it when
Streamlit imports it, before the server accepts its first connection. The first page becomes
interactive sooner (``bench/bench_browser.py``; bench/history/browser.md has the figures).
"""
from __future__ import annotations

import functools
import socket


def no_delay(transport) -> None:
    """Nagle's algorithm off on the TCP socket under an asyncio transport (other sockets, such
    as a Unix socket, are left as they are)."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # the browser may already have closed it: nothing to speed up
        pass


def send_small_writes_at_once() -> type:
    """Make every new connection of the HTTP protocol uvicorn picks for Streamlit ("auto": h11,
    or httptools when it is installed) switch Nagle off, and return that protocol class.
    Calling it again changes nothing; the original method stays reachable as
    ``connection_made.__wrapped__``."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol as protocol

    made = protocol.connection_made
    if not getattr(made, "sets_no_delay", False):
        @functools.wraps(made)
        def connection_made(self, transport):
            no_delay(transport)
            made(self, transport)

        connection_made.sets_no_delay = True
        protocol.connection_made = connection_made
    return protocol
