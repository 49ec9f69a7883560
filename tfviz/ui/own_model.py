"""A learner's own model: a training-lab run opened in the lessons, for this session only.

The shared models live in ``st.cache_resource``, one copy for every learner on the server. A
run's model must never go there: no other session may see it, and it must go when its session
goes. So it lives in this session's ``st.session_state`` (key ``OWN_KEY``), under a readable name
("my run 2: sort, 2 layers × 2 heads"), with a small memo of what the lessons computed with it:

- ``tfviz.ui.cache.get_bundle(name)`` finds it here, not in the shared cache;
- every cached function that takes a model name (``tfviz.ui.cache.per_model``) answers a run's
  name from the memo below instead of Streamlit's server-wide caches, so nothing of the run is
  kept for other sessions, and everything of it is released with this session;
- one run is open at a time: opening another replaces it (and its memo).

The name is unique only within the session; another session may open a "my run 1" of its own.
Isolation does not rest on the name: no server-wide cache is ever asked about a run's name
(``tests/test_own_model.py`` checks that every cached function taking a model goes through
``per_model``), and ``get_bundle`` looks a run's name up in the asking session only.

The lessons' figures are still drawn through the shared figure caches, keyed by the numbers
they show, which hold no model and are bounded (``tfviz.ui.drawing``).
"""
from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import streamlit as st

from tfviz.bundle import Bundle
from tfviz.lab.opened import example_texts, is_run_name, run_bundle, run_title

if TYPE_CHECKING:  # tfviz.lab.train imports torch, which the first page does without
    from tfviz.lab.train import RunView

OWN_KEY = "_own_model"
# Traces and what-ifs of one small model, newest kept: a trace of a lab model is 0.17 MB (the
# reverse default, 14 tokens) to 0.54 MB (4 layers of width 128 with 8 experts, 18 tokens).
MEMO_ENTRIES = 16
SHARED_TEXT_KEY, TEXT_MODEL_KEY, OPENED_KEY = "_shared_text", "_text_model", "_own_opened"


@dataclass
class OwnModel:
    name: str  # "my run 2: sort, 2 layers × 2 heads": the sidebar's value, as every page names it
    bundle: Bundle
    examples: dict[str, str]  # the task's held-out examples, label -> the text the model reads
    memo: OrderedDict = field(default_factory=OrderedDict, repr=False)


def own() -> OwnModel | None:
    """This session's opened run, if any."""
    found = st.session_state.get(OWN_KEY)
    return found if isinstance(found, OwnModel) else None


def chosen() -> OwnModel | None:
    """The opened run, if it is the sidebar's model right now."""
    o = own()
    return o if o is not None and st.session_state.get("model") == o.name else None


def own_names() -> list[str]:
    """The model names only this session may use (zero or one)."""
    o = own()
    return [o.name] if o else []


def open_run(run: RunView) -> OwnModel:
    """Make ``run`` this session's own model (replacing any opened before) and choose it in the
    sidebar. Call it from a button's ``on_click``: the sidebar's model box is drawn before any
    page, so its value can only be set before the script runs."""
    if run.weights is None:
        raise ValueError("This run has no trained weights to open.")
    number = st.session_state.get(OPENED_KEY, 0) + 1
    st.session_state[OPENED_KEY] = number
    name = run_title(run.settings, number)
    manifest = {"eval": {"heldout_accuracy": run.accuracy}, "steps": run.step}
    opened = OwnModel(name, run_bundle(run.settings, run.weights, name, manifest),
                      example_texts(run.settings.spec))
    st.session_state[OWN_KEY] = opened
    st.session_state["model"] = name
    return opened


def bundle_of(name: str) -> Bundle:
    o = own()
    if o is None or o.name != name:
        raise LookupError("That model was trained in another session (or closed); it is not open here.")
    return o.bundle


def memo(fn: Callable, model: str, args: tuple, kwargs: dict, copies: bool):
    """``fn(model, *args, **kwargs)`` remembered in this session's opened run, newest
    ``MEMO_ENTRIES`` kept. With ``copies`` every caller gets its own copy (as from
    ``st.cache_data``); without, the one object (as from ``st.cache_resource``)."""
    o = own()
    if o is None or o.name != model:
        return fn(model, *args, **kwargs)  # get_bundle then says it is not open here
    try:
        key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:  # an argument that cannot be a key: compute without remembering
        return fn(model, *args, **kwargs)
    if key in o.memo:
        o.memo.move_to_end(key)
        value = o.memo[key]
    else:
        value = fn(model, *args, **kwargs)
        o.memo[key] = value
        while len(o.memo) > MEMO_ENTRIES:
            o.memo.popitem(last=False)
    return copy.deepcopy(value) if copies else value


def fit_text_to_model(default_model: str) -> str | None:
    """Give the text to the model: choosing the run's model puts one of its task's held-out
    examples in the text box (it reads its task's symbols, not English), and choosing a shared
    model again brings back the text from before. A model name this session cannot use (a run
    from another session, or one closed) falls back to ``default_model``; the sentence saying
    so is returned. Called before the sidebar's widgets are drawn."""
    state = st.session_state
    note = None
    model = state.get("model")
    o = own()
    if is_run_name(model) and (o is None or o.name != model):
        state["model"] = model = default_model
        note = f"That model was trained in another session's lab and stays there; showing {default_model}."
    last = state.get(TEXT_MODEL_KEY)
    if model == last:
        return note
    state[TEXT_MODEL_KEY] = model
    if o is not None and model == o.name:
        if not is_run_name(last):
            state[SHARED_TEXT_KEY] = state.get("text", "")
        state["text"] = next(iter(o.examples.values()))
    elif is_run_name(last) and state.get(SHARED_TEXT_KEY):
        state["text"] = state.pop(SHARED_TEXT_KEY)
    return note
