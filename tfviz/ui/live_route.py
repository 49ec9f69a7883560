"""The one HTTP route of our own: ``GET /_tfviz/live/{code}?after=V``, which a following
student's page holds open until the teacher moves (``tfviz.classroom.watch``).

``server.py`` mounts it (``st.App(routes=...)``); the follower's small component
(``tfviz/ui/assets/live_watch.js``, drawn by ``tfviz.ui.live``) asks it, and when the reply
carries a newer version it starts one run of the follower, which applies the teacher's state.
Under ``streamlit run app.py`` there is no route: the follower's slow timer still moves the
class, every ``tfviz.ui.live.SAFETY_POLL_S`` seconds.
"""
from __future__ import annotations

import streamlit as st
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tfviz.classroom.watch import ClassWatch
from tfviz.ui.live_session import live_store

PATH = "/_tfviz/live/{code}"


@st.cache_resource(show_spinner=False)
def class_watch() -> ClassWatch:
    """This process's watcher, shared by the route and the pages (it only changes through its
    own methods, which are safe from any thread)."""
    return ClassWatch(live_store())


async def _live(request: Request) -> JSONResponse:
    raw = request.query_params.get("after", "0")
    after = int(raw) if raw.isdigit() and len(raw) <= 9 else 0
    reply = await class_watch().wait(request.path_params["code"], after)
    return JSONResponse(reply, headers={"Cache-Control": "no-store"})


routes = [Route(PATH, _live, methods=["GET"])]
