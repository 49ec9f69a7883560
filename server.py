"""The server entry: `streamlit run server.py` serves app.py and warms it up at start.

Importing torch and the chart libraries takes seconds on a 2-core machine; without this
the learner's second page would wait for it. Streamlit's `st.App` lifespan hook starts a
thread that does the work once the first page has run (the tour and the home page need no
torch: tfviz/ui/warmup.py says why it waits). Nothing heavy is imported here, so the server
answers as soon as it can.
It also answers the page URLs with Streamlit's own page plus a line that tells the frontend
where the server is (tfviz/ui/index_page.py), and the live class's long poll (live_route.py),
and it sends small replies at once (tfviz/ui/no_delay.py).
`streamlit run app.py` serves the same app, only with a cold start.
"""
import threading
from contextlib import asynccontextmanager

import streamlit as st

from tfviz.classroom.store import check_at_start
from tfviz.threads import thread_name
from tfviz.ui.no_delay import send_small_writes_at_once

check_at_start()  # a store URL that cannot be opened stops the server now, naming the URL


def _skip_the_repl_check() -> None:
    """Streamlit's first element of a process asks whether it runs in a Python REPL, to warn
    that an app needs `streamlit run`: it calls `inspect.stack()`, which reads the source of
    every frame on the stack. The first page's first element sits deep in the frame (the live
    class's box), and that check was a visible part of its run (``python -m bench.first_page_ab``;
    bench/history/browser.md). Here we are served by `streamlit run`,
    so the answer is known: mark the warning as given. (Private to Streamlit: if the name ever
    goes, this sets an unused attribute and the check simply runs; tests/test_server_entry.py
    says so.)"""
    import streamlit.delta_generator

    streamlit.delta_generator._use_warning_has_been_displayed = True


_skip_the_repl_check()
send_small_writes_at_once()  # Nagle off on every connection: tfviz/ui/no_delay.py says why


def _warm_up() -> float:
    """Import tfviz (and torch), load and trace what the first page needs, with the garbage
    collector kept out of the way: the one place the server's start-up handles it.

    The import and the warm-up create about 300 000 objects that live as long as the server
    (modules, models, the first trace). With the collector on, its full passes rescan them
    again and again while they load, so it stays off until they are loaded. Then they are
    frozen out of its reach, so each later full collection scans a few thousand objects
    instead of all of them (bench/history/browser.md has the measurements). Returns the
    seconds the warm-up took.
    """
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        from tfviz.ui.warmup import warm_up

        return warm_up()
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


@asynccontextmanager
async def _lifespan(_app):
    threading.Thread(target=_warm_up, name=thread_name("warm-up"), daemon=True).start()
    yield


def _middleware():
    from starlette.middleware import Middleware

    from tfviz.ui.index_page import IndexPage  # the page tells the frontend where we are
    from tfviz.ui.lessons import available

    return [Middleware(IndexPage, pages=[lesson.url for lesson in available() if lesson.url])]


def _routes():
    from tfviz.ui.live_route import routes  # the long poll of a live class's students

    return routes


app = st.App("app.py", lifespan=_lifespan, routes=_routes(), middleware=_middleware())
