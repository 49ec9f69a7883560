"""The server entry: `streamlit run server.py` serves app.py and warms it up at start.

Importing torch and the chart libraries takes about 4 s on our 2-core machine; without this
the first learner to connect would wait for it. Streamlit's `st.App` lifespan hook starts a
thread that does the work while the browser is still loading Streamlit's frontend. Nothing
heavy is imported here, so the server answers as soon as it can.
`streamlit run app.py` serves the same app, only with a cold start.
"""
import threading
from contextlib import asynccontextmanager

import streamlit as st


def _warm_up() -> None:
    from tfviz.ui.warmup import warm_up  # importing tfviz imports torch: keep it off the start path

    warm_up()


@asynccontextmanager
async def _lifespan(_app):
    threading.Thread(target=_warm_up, name="tfviz-warm-up", daemon=True).start()
    yield


app = st.App("app.py", lifespan=_lifespan)
