"""Pages that load ahead: while one parametrized lesson is checked, the next one's page is
already loading in a tab of its own (a page load is most of a lesson's time: Streamlit's
frontend, the script run, the charts). tests/browser/test_presenter.py loads ahead;
test_every_page.py uses its guarded ``Tab``."""
from __future__ import annotations

import time

from tests.browser.conftest import OutboundGuard


class Tab:
    """A page in a browser context of its own, guarded like conftest's ``page``; with ``url``,
    already loading. ``prepare(tab)``, if given, runs before the page opens (to watch its
    websocket from the first frame, say)."""

    def __init__(self, browser, url: str | None = None, viewport: dict | None = None,
                 prepare=None):
        self.context = browser.new_context(viewport=viewport or {"width": 1400, "height": 1000})
        self.guard = OutboundGuard()
        self.context.route("**/*", self.guard)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        if prepare:
            prepare(self)
        self.opened = time.perf_counter()
        if url:
            self.page.goto(url, wait_until="commit")  # the rest loads while we do other things

    def close(self) -> None:
        self.context.close()
        assert not self.guard.outside, f"requests left localhost: {self.guard.outside[:5]}"


class TabsAhead:
    """Each lesson's tab, and the next selected lesson's opened now. ``address(server,
    lesson)`` is the URL a lesson is checked at; ``prepare`` goes to each ``Tab``."""

    def __init__(self, address, viewport: dict | None = None, prepare=None):
        self.address, self.viewport, self.prepare = address, viewport, prepare
        self._open: dict[str, Tab] = {}

    def take(self, browser, server, request) -> Tab:
        """The tab of the test ``request`` runs (its parameter ``lesson``)."""
        lesson = request.node.callspec.params["lesson"]
        tab = self._open.pop(lesson.url, None) or Tab(browser, self.address(server, lesson),
                                                      self.viewport, self.prepare)
        items = request.session.items
        later = [item for item in items[items.index(request.node) + 1:]
                 if getattr(item, "originalname", None) == request.node.originalname]
        if later:
            upcoming = later[0].callspec.params["lesson"]
            if upcoming.url not in self._open:
                self._open[upcoming.url] = Tab(browser, self.address(server, upcoming),
                                               self.viewport, self.prepare)
        return tab

    def close_all(self) -> None:
        while self._open:
            self._open.popitem()[1].context.close()
