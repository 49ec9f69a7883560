"""How students join the teacher's class, drawn for the projector: the class's address as a QR
code, the join code in large type, and the address itself, for a phone that cannot scan.

The address is the one the teacher's browser shows (``st.context.url``: behind a proxy, the
public one), with ``?join=CODE``; ``TFVIZ_PUBLIC_URL`` names another (a server whose teacher
opens it as ``localhost``). An address that only this computer can open is drawn with a
warning: students' phones would not reach it.

On the teacher's page the card is a step of its own, so in presenter view it is a slide.
"""
from __future__ import annotations

import base64
import html
import os

import streamlit as st

from tfviz.classroom.codes import format_code
from tfviz.classroom.qr import class_link, only_here, qr_svg
from tfviz.ui.browser_code import stylesheet
from tfviz.ui.live_session import TEACHER_PAGE

PUBLIC_ENV = "TFVIZ_PUBLIC_URL"


def join_link(code: str) -> str | None:
    """The address a student opens to join class ``code``; None when this run cannot know the
    app's address (no browser, as in a test without ``TFVIZ_PUBLIC_URL``)."""
    public = os.environ.get(PUBLIC_ENV, "").strip()
    if public:
        return class_link(public, code)
    here = getattr(st.context, "url", None)
    return class_link(here, code, page=TEACHER_PAGE) if here else None


def join_card(code: str) -> None:
    """The QR code, the code and the address, side by side (stacked on a narrow screen)."""
    link = join_link(code)
    shown = format_code(code)
    if link is None:
        st.markdown(f"<div style='font-size:4rem;font-weight:700;letter-spacing:0.1em;"
                    f"font-family:monospace'>{shown}</div>", unsafe_allow_html=True)
        st.markdown(f"Students type **{shown}** under *Join a live class* in the sidebar, or "
                    f"open this app's address with `?join={code}` at the end.")
        return
    label = f"QR code: open {link} to join class {shown}"
    # An image of the SVG: Streamlit's HTML sanitiser drops inline SVG, and an image carries
    # its text alternative in alt.
    svg = base64.b64encode(qr_svg(link, label=label).encode()).decode()
    st.html(f"""<div class="tfviz-join">
  <div class="tfviz-join-qr"><img src="data:image/svg+xml;base64,{svg}"
    alt="{html.escape(label)}"></div>
  <div class="tfviz-join-text">
    <div class="tfviz-join-say">Scan, or type the code under <em>Join a live class</em></div>
    <div class="tfviz-join-code" aria-label="Join code {' '.join(shown)}">{shown}</div>
    <div class="tfviz-join-url">{html.escape(link)}</div>
  </div>
</div>""" + stylesheet("live_join.css"))
    if only_here(link):
        st.warning(f"This address opens only on this computer, so students' phones cannot reach "
                   f"it. Open the app by its network address (or start the server with "
                   f"{PUBLIC_ENV} set to it), and the QR code follows.")
