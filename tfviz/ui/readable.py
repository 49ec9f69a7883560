"""What every page needs to be readable for everyone (WCAG 2.2 AA), drawn once by the frame:
the rules of ``tfviz/ui/assets/readable.css`` (captions dark enough to read, 4.5:1 or more).

Presenter view (``tfviz.ui.present``) draws its own larger, black-on-white rules on top."""
from __future__ import annotations

import streamlit as st

from tfviz.ui.browser_code import stylesheet


def readable_frame() -> None:
    """The page's readable rules, as a style element: it takes no room on the page."""
    st.html(stylesheet("readable.css"))
