"""The page a browser first loads at a lesson's URL: Streamlit's own ``index.html``, told where
the app's server is (``assets/backend_base.js``).

Streamlit answers every page URL with the same ``index.html``. Opened at ``/tour``, its
frontend cannot tell whether the app lives at ``/tour`` or at ``/``, so it tries
``/tour/_stcore/health`` first, gets a 404, waits 100 ms and tries ``/_stcore/health``: every
link straight to a lesson (the tour, a teacher's link, a reload) waited for that detour before
it could connect. We know our pages' URL names, so the script works out the base from the URL
and hands it to Streamlit as its ``BACKEND_BASE_URL`` (in ``__streamlit`` on the window), the
setting Streamlit reads for an app hosted under another page.

``server.py`` installs :class:`IndexPage` as an ASGI middleware of its ``st.App``: it answers
GET and HEAD for the home page and every page's URL (a query string changes nothing) and hands
every other request to Streamlit. Under ``streamlit run app.py`` there is no middleware and
the frontend finds its server the slow way, as before. If Streamlit's ``index.html`` ever
changes so that the script has no place to go, the original is served unchanged.
"""
from __future__ import annotations

import functools
from pathlib import Path

from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tfviz.ui.browser_code import in_index_page


def page_html(original: str, pages: list[str]) -> str:
    """Streamlit's ``index.html`` with ``assets/backend_base.js`` run before Streamlit's own
    script (``original`` itself if that script is not where we expect it)."""
    return in_index_page("backend_base.js", {"pages": pages}, original)


def page_paths(pages: list[str], base: str = "") -> frozenset[str]:
    """The URL paths that open a page: the base (home, with or without its slash) and
    base/name for each page. ``/tour/`` is not among them: Streamlit redirects it to ``/tour``,
    which is."""
    root = "/" + base.strip("/") if base.strip("/") else ""
    return frozenset({root or "/", root + "/", *(f"{root}/{name}" for name in pages)})


@functools.cache
def _streamlit_index() -> str:
    from streamlit import file_util

    return (Path(file_util.get_static_dir()) / "index.html").read_text(encoding="utf-8")


class IndexPage:
    """ASGI middleware: our ``index.html`` for the page URLs, everything else to Streamlit."""

    def __init__(self, app: ASGIApp, pages: list[str], base: str | None = None) -> None:
        """``base``: the app's URL prefix; by default Streamlit's ``server.baseUrlPath``
        (read here: Starlette builds its middleware once the server's settings are loaded)."""
        if base is None:
            from streamlit import config

            base = config.get_option("server.baseUrlPath") or ""
        self.app = app
        self.paths = page_paths(pages, base)
        self.pages = list(pages)

    @functools.cached_property
    def body(self) -> bytes:
        return page_html(_streamlit_index(), self.pages).encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["method"] in ("GET", "HEAD")
                and scope["path"] in self.paths):
            # no-cache, as Streamlit serves its index.html: a new release's script names change
            reply: Response = HTMLResponse(self.body, headers={"Cache-Control": "no-cache"})
            await reply(scope, receive, send)
            return
        await self.app(scope, receive, send)
