"""A learner without a browser: one Streamlit session driven over its websocket protocol.

The class benchmark (bench/bench_class.py) runs dozens of these against one server, so the
server's own cost is measured without browsers drawing charts on the same two cores. A
``Session`` does what Streamlit's frontend does (read from the installed streamlit 1.67:
``web/server/starlette`` and the minified ``static/js/index.*.js``):

- an HTTP GET of the page, then ``/_stcore/health`` (which sets the ``_streamlit_xsrf``
  cookie) and ``/_stcore/host-config``, keeping every cookie (a proxy in front may add a
  sticky-session one) and sending them again on the websocket request;
- a websocket to ``/_stcore/stream`` offering the subprotocols ``streamlit, <xsrf token>``
  with an ``Origin`` header, as ``new WebSocket(url, ["streamlit", token])`` does;
- ``BackMsg.rerun_script`` with a ``ClientState``: the query string, the widget states, the
  page (``page_name`` = URL path on the first load, ``page_script_hash`` on a sidebar click),
  the fragment to rerun and the browser's ``context_info``. No ``cached_message_hashes`` are
  sent, so the server sends every element in full, never a ``ref_hash``.

Replies are ``ForwardMsg``s: ``new_session`` opens a run (its metadata carries the run id),
``navigation`` lists the pages with their script hashes, ``delta``s carry the elements (a
widget carries its id, label, options, default and, when the server sets it, its value),
``page_info_changed`` the new query string, and ``script_finished`` (same run id) ends the run.

Widget state is kept the way the frontend keeps it: every widget drawn in the last run keeps
its value (the server's when it sends ``set_value``, else the one already held, else its
default), all of them go with each rerun, and widgets no longer drawn are dropped. A sidebar
click sends only the frame's widgets (those whose element came from the main script). Widgets
are found by label, never by id: ids change with the page's code.
What each element means (texts, errors, widgets and their values): bench/headless_elements.py.
"""
from __future__ import annotations

import asyncio
import urllib.parse
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from bench.headless_elements import Widget, read_element

__all__ = ["Run", "Session", "Widget"]

XSRF_COOKIE = "_streamlit_xsrf"


async def http_get(base: str, path: str, cookies: dict, timeout: float,
                   body: bool = False) -> tuple[int, dict] | tuple[int, dict, bytes]:
    """One GET through the proxy on the event loop: (status, the cookies it set[, the body]).

    >>> _set_cookies([b"Set-Cookie: tfviz_replica=r1; Path=/; HttpOnly", b"X: y"])
    {'tfviz_replica': 'r1'}
    """
    u = urllib.parse.urlsplit(base)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(u.hostname, u.port), timeout)
    try:
        cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
        writer.write((f"GET {u.path.rstrip('/')}{path} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                      + (f"Cookie: {cookie}\r\n" if cookie else "")
                      + "Connection: close\r\n\r\n").encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    return (status, _set_cookies(lines[1:])) + ((rest,) if body else ())


def _set_cookies(header_lines) -> dict:
    out = {}
    for line in header_lines:
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "set-cookie":
            k, _, v = value.strip().split(";")[0].partition("=")
            if k:
                out[k.strip()] = v.strip()
    return out
OK = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
STATUS = {v: k for k, v in ForwardMsg.ScriptFinishedStatus.items()}


@dataclass
class Run:
    """One script run as this session saw it: from the BackMsg to its script_finished."""

    sent: float
    fragment_id: str = ""
    run_id: str | None = None
    finished: float | None = None
    status: str = ""
    error: str | None = None
    texts: list[str] = field(default_factory=list)  # markdown, headings, alerts, chart specs ...
    headings: list[tuple[str, str]] = field(default_factory=list)  # (tag, body)
    widgets: dict[str, Widget] = field(default_factory=dict)
    elements: int = 0
    restarts: int = 0  # runs the script itself cut short with st.rerun()
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def seconds(self) -> float:
        return (self.finished or time.perf_counter()) - self.sent

    def fail(self, why: str) -> None:
        self.error = self.error or why


class Session:
    """One learner's connection. ``await Session.open(url, "self-attention")`` loads a page;
    then ``find`` a widget by label and ``change`` it, or ``goto`` another page."""

    def __init__(self, base_url: str, timeout: float = 30.0, cookies: dict | None = None):
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.cookies = dict(cookies or {})  # sent on every request; a Set-Cookie replaces one
        self.ws = None
        self.reader: asyncio.Task | None = None
        self.widgets: dict[str, Widget] = {}
        self.pages: dict[str, tuple[str, str]] = {}  # url path -> (script hash, title)
        self.main_hash = ""
        self.page_hash = ""
        self.query_string = ""
        self.current: Run | None = None
        self.closed: str | None = None  # why the websocket closed, once it has
        self.auto_reruns: dict[str, float] = {}  # fragment id -> seconds (st.fragment(run_every))

    # -- connecting ---------------------------------------------------------------------
    async def _http_get(self, path: str) -> int:
        """GET ``path`` as a browser does, on the event loop (a thread pool of a few workers
        would queue a room's reconnects behind each other: a cost of the benchmark, not of
        the server), keeping every cookie it sets; its status."""
        status, cookies = await http_get(self.base, path, self.cookies, self.timeout)
        self.cookies.update(cookies)
        return status

    async def connect(self, path: str = "") -> None:
        """Fetch the page like a browser (keeping cookies), then open the websocket."""
        for p in (f"/{path}", "/_stcore/health", "/_stcore/host-config"):
            status = await self._http_get(p)
            if status != 200:  # as urllib raised for the browser-like fetch this replaces
                raise OSError(f"GET {p}: HTTP {status}")
        cookies = dict(self.cookies)
        headers = {"Origin": self.base}
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        url = self.base.replace("http", "ws", 1) + "/_stcore/stream"
        token = cookies.get(XSRF_COOKIE, "PLACEHOLDER_AUTH_TOKEN")  # what the frontend sends
        self.ws = await connect(url, subprotocols=["streamlit", token], additional_headers=headers,
                                max_size=None, open_timeout=self.timeout)
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, base_url: str, path: str = "", query: str = "", timeout: float = 30.0,
                   cookies: dict | None = None):
        """A new session on page ``path`` (a URL path such as "self-attention"), first run done.
        Returns (session, run); the run's ``sent`` is when the websocket's first rerun went."""
        s = cls(base_url, timeout, cookies)
        await s.connect(path)
        s.query_string = query
        run = await s.rerun(page_name=path)
        return s, run

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            try:
                await self.reader
            except (asyncio.CancelledError, Exception):
                pass

    # -- widgets ------------------------------------------------------------------------
    def find(self, label: str, kind: str | None = None) -> Widget | None:
        """The widget drawn in the last run whose label is ``label`` (else starts with it)."""
        widgets = [w for w in self.widgets.values() if kind is None or w.kind == kind]
        return (next((w for w in widgets if w.label == label), None)
                or next((w for w in widgets if w.label.startswith(label)), None))

    def page_widgets(self) -> list[Widget]:
        """The widgets the current page drew (not the frame's sidebar)."""
        return [w for w in self.widgets.values() if w.script_hash != self.main_hash]

    # -- running ------------------------------------------------------------------------
    def _client_state(self, msg: BackMsg, widgets) -> None:
        cs = msg.rerun_script
        for w in widgets:
            state = w.state()
            if state is not None:
                cs.widget_states.widgets.append(state)
        ci = cs.context_info
        ci.timezone, ci.timezone_offset, ci.locale = "UTC", 0, "en-US"
        ci.url = f"{self.base}/?{self.query_string}" if self.query_string else self.base + "/"
        ci.is_embedded, ci.color_scheme = False, "light"

    async def rerun(self, *, page_name: str = "", page_hash: str = "", fragment_id: str = "",
                    widgets=None, trigger: Widget | None = None, auto: bool = False) -> Run:
        """Send a rerun with this session's widget state (or ``widgets``) and wait for the
        run's script_finished. A timeout or a dropped websocket is the run's error."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        if not (page_name or page_hash):  # a rerun of the page on show, as the frontend sends it
            page_hash = self.page_hash
        cs.page_name, cs.page_script_hash, cs.fragment_id = page_name, page_hash, fragment_id
        cs.is_auto_rerun = auto  # a fragment's timer, as the frontend marks it
        self._client_state(msg, self.widgets.values() if widgets is None else widgets)
        if trigger is not None:  # a button click: true for this run only
            cs.widget_states.widgets.append(WidgetState(id=trigger.id, trigger_value=True))
        run = Run(sent=time.perf_counter(), fragment_id=fragment_id)
        if self.closed:
            run.fail(f"websocket closed before sending ({self.closed})")
            return run
        self.current = run
        try:
            await self.ws.send(msg.SerializeToString())
            await asyncio.wait_for(run.done.wait(), self.timeout)
        except asyncio.TimeoutError:
            run.fail(f"no script_finished within {self.timeout:.0f} s")
        except ConnectionClosed as exc:
            run.fail(f"websocket dropped: {exc}")
        finally:
            self.current = None
        if self.closed and not run.done.is_set():
            run.fail(f"websocket dropped: {self.closed}")
        return run

    async def goto(self, url_path: str) -> Run:
        """A click on the page's link in the sidebar: the same session, only the frame's
        widgets go along, and the query string is dropped (no widget here binds to it)."""
        page_hash = self.pages[url_path][0]
        self.query_string = ""
        frame = [w for w in self.widgets.values() if w.script_hash == self.main_hash]
        return await self.rerun(page_hash=page_hash, widgets=frame)

    async def change(self, widget: Widget, value=None) -> Run:
        """Set ``widget`` to ``value`` (a click for a button) and rerun what the frontend
        would: the widget's fragment if it has one, else the page."""
        if widget.kind == "button":
            return await self.rerun(fragment_id=widget.fragment_id, trigger=widget)
        widget.value = value
        return await self.rerun(fragment_id=widget.fragment_id)

    # -- receiving ----------------------------------------------------------------------
    async def _read(self) -> None:
        try:
            async for data in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._handle(msg)
        except ConnectionClosed as exc:
            self.closed = f"code {exc.rcvd.code if exc.rcvd else 'none'}"
        except Exception as exc:  # a bug here must not hang the learner silently
            self.closed = f"{type(exc).__name__}: {exc}"
        else:
            self.closed = "closed by the server"
        if self.current is not None:
            self.current.fail(f"websocket dropped: {self.closed}")
            self.current.done.set()

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        run = self.current
        if kind == "navigation":
            self.pages = {p.url_pathname: (p.page_script_hash, p.page_name)
                          for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash  # the page st.navigation runs
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "auto_rerun":  # the frontend would rerun this fragment on a timer
            self.auto_reruns[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "new_session":
            self.main_hash = msg.new_session.main_script_hash
            if run is not None and run.run_id is None:
                run.run_id = msg.metadata.run.script_run_id
        if run is None or run.run_id is None:
            return  # another run's message (one that timed out, say)
        if kind == "delta":
            read_element(run, msg, self.widgets)
        elif kind == "ref_hash":
            run.fail("the server sent a cached reference although none was offered")
        elif kind == "page_not_found":
            run.fail(f"page not found: {msg.page_not_found.page_name}")
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            error = msg.session_event.script_compilation_exception
            run.fail(f"script compilation error: {error.message}")
        elif kind == "script_finished":
            finished_id = msg.metadata.run.script_run_id
            if finished_id and finished_id != run.run_id:
                return
            status = msg.script_finished
            if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                # the script called st.rerun(): the learner waits for the run that follows
                run.run_id, run.restarts = None, run.restarts + 1
                run.texts.clear(), run.headings.clear(), run.widgets.clear()
                return
            run.status = STATUS.get(status, str(status))
            if status not in OK:
                run.fail(f"script finished with {run.status}")
            run.finished = time.perf_counter()
            self._settle(run)
            run.done.set()

    def _settle(self, run: Run) -> None:
        """After a run, the session holds exactly the widgets it drew (a fragment run only
        replaces that fragment's widgets)."""
        if run.fragment_id:
            kept = {i: w for i, w in self.widgets.items() if w.fragment_id != run.fragment_id}
            self.widgets = kept | run.widgets
        elif run.status == "FINISHED_SUCCESSFULLY":
            self.widgets = dict(run.widgets)
