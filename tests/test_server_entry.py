"""What server.py adds to Streamlit: the page a browser first loads at a lesson's URL
(tfviz.ui.index_page: Streamlit's own index.html with our base-finding script before
Streamlit's, served for page URLs only), and the REPL check it spares the first page."""
from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor

from tfviz.ui.browser_code import STREAMLIT_SCRIPT as MAIN_SCRIPT
from tfviz.ui.index_page import IndexPage, _streamlit_index, page_html, page_paths
from tfviz.ui.lessons import available

PAGES = [lesson.url for lesson in available() if lesson.url]


def test_our_script_runs_before_streamlits_and_carries_the_page_names():
    original = _streamlit_index()
    html = page_html(original, PAGES)
    ours, theirs = html.find("export function backendBase"), html.find(MAIN_SCRIPT)
    assert 0 < ours < theirs, "Streamlit's index.html no longer has the script element we expect"
    config = re.search(r"start\(window, (\{.*?\})\);", html).group(1)
    assert json.loads(config) == {"pages": PAGES}
    assert "tour" in PAGES and "self-attention" in PAGES
    # everything else is Streamlit's page, untouched
    assert html.replace(html[html.find('<script type="module">\n'):theirs], "") == original


def test_an_index_html_without_the_expected_script_is_served_as_it_is():
    assert page_html("<html><body>other</body></html>", PAGES) == "<html><body>other</body></html>"


def test_page_paths_are_home_and_every_page_under_the_base():
    assert page_paths(["tour"]) == {"/", "/tour"}
    assert page_paths(["tour"], "/class/") == {"/class", "/class/", "/class/tour"}


def _call(middleware: IndexPage, method: str, path: str) -> tuple[int, dict, bytes]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    # in a thread of its own: a browser test in this worker may hold an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, middleware(scope, receive, send)).result()
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


async def _streamlit(scope, receive, send):
    """Stands in for Streamlit's app: answers 299 so a passed-on request is told apart."""
    await send({"type": "http.response.start", "status": 299, "headers": []})
    await send({"type": "http.response.body", "body": scope["path"].encode()})


def test_the_middleware_answers_page_urls_and_passes_everything_else_on():
    middleware = IndexPage(_streamlit, pages=PAGES, base="")
    for path in ("/", "/tour", "/self-attention"):
        status, headers, body = _call(middleware, "GET", path)
        assert status == 200 and headers["cache-control"] == "no-cache", path
        assert b"backendBase" in body and MAIN_SCRIPT.encode() in body
    assert _call(middleware, "HEAD", "/tour")[0] == 200
    for method, path in (("GET", "/_stcore/health"), ("GET", "/tour/_stcore/health"),
                         ("GET", "/tour/"),  # Streamlit redirects it to /tour
                         ("GET", "/static/js/x.js"), ("GET", "/no-such-lesson"),
                         ("POST", "/tour"), ("GET", "/_tfviz/live/ABCD")):
        assert _call(middleware, method, path) == (299, {}, path.encode()), (method, path)


def test_the_repl_check_server_py_skips_is_still_streamlits():
    """server.py marks Streamlit's "run it with streamlit run" warning as given, so that the
    first page does not pay for its inspect.stack(); the flag must still be the one Streamlit
    reads, or the saving is gone (the app works either way)."""
    import inspect

    import streamlit.delta_generator as dg

    assert "_use_warning_has_been_displayed" in inspect.getsource(dg._maybe_print_use_warning)
    assert isinstance(dg._use_warning_has_been_displayed, bool)
