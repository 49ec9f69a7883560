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
    import gc

    # Importing tfviz imports torch (keep it off the start path). Its ~150 000 new objects set
    # off the garbage collector again and again while they load: 0.2-0.4 s here. So the
    # collector stays off through the import and warm_up, which freezes what it loaded.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from tfviz.ui.warmup import warm_up

        warm_up()
    finally:
        if collecting:
            gc.enable()


@asynccontextmanager
async def _lifespan(_app):
    threading.Thread(target=_warm_up, name="tfviz-warm-up", daemon=True).start()
    yield


app = st.App("app.py", lifespan=_lifespan)
