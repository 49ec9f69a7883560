"""A lesson the sidebar's model cannot show offers a model it can: one button that switches the
sidebar's model.

The model a page runs on is ``st.session_state["model"]``: a bundled model's name, a found
Hugging Face folder's (``tfviz.ui.checkpoints``) or this session's lab run's. The sidebar's
picker is drawn before the page, so the switch happens in the button's ``on_click``, which runs
before the next script run draws the picker with the new value.

A page that cannot use the sidebar's model says so in one line of its own words (a dense model
on the mixture-of-experts page, an encoder on the decoding pages) and calls :func:`offer`:

>>> # st.info("**bert** is not a decoder ..."); offer("gpt-tiny", key="dec_switch")
"""
from __future__ import annotations

import streamlit as st

from tfviz.ui.cache import model_names


def switch_model(to: str) -> None:
    """Make ``to`` the sidebar's model (a button's ``on_click``)."""
    st.session_state["model"] = to


def offer(to: str, *, key: str, label: str | None = None) -> bool:
    """A button that switches the sidebar's model to ``to``, if this server has it (else
    nothing is drawn). Returns whether the button was drawn."""
    if to not in model_names():
        return False
    st.button(label or f"Switch the sidebar to {to}", key=key, on_click=switch_model, args=(to,),
              type="primary")
    return True
