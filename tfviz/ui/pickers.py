"""What a learner picks or types on a page: select boxes whose stored value is always one of
their options (``stable_select``), token positions (``token_select``), and a page's own prompt
box. The sidebar's model and text are in ``tfviz.ui.sidebar``."""
from __future__ import annotations

import re

import streamlit as st

from tfviz.textinput import MAX_TYPED_CHARS, clean_text
from tfviz.viz.kit.style import token_labels


def leading_number(label) -> int | None:
    """The whole number a stale label starts with, else None: pickers put the option's
    number first, so an old label still names the option the learner chose.

    >>> [leading_number(v) for v in ("3 ␣sat", "12. Logits", "4 x y", "sat", "", None, 7, True)]
    [3, 12, 4, None, None, None, None, None]
    """
    found = re.match(r"(\d{1,6})(?!\d)", label) if isinstance(label, str) else None
    return int(found.group(1)) if found else None


def _is_option(value, options) -> bool:
    """``value in options`` without True == 1 or 2.0 == 2 passing for an option."""
    return any(type(value) is type(o) and value == o for o in options)


def stable_select(label: str, options, key: str, *, format_func=str, default=None, recover=None,
                  slider: bool = False, where=None, **kwargs):
    """A select box (or, with ``slider``, a select slider) whose stored value is always one of
    ``options``; returns the chosen option.

    Every picker whose labels can change between runs (a token of the learner's text, a ✓ on
    a solved exercise) goes through here, because such a widget keeps bad state whenever
    its labels change. Streamlit (1.67) stores a select box's value in the browser as its
    *label* (``SelectboxSerde.serialize`` is ``format_func``), and it pushes a new label to
    the browser only when the value itself changes (``set_value``). So when the learner
    types a new sentence and the chosen option still exists, the value (3) is unchanged,
    the browser keeps the old label ("3 ␣sat"), and on the *next* rerun it sends that
    label back. It is deserialised against the options drawn for the previous run, matches
    none, and ``SelectboxSerde.deserialize`` returns the raw string: ``session_state[key]``
    is then "3 ␣sat", and ``session_state[key] >= n`` would raise TypeError. A rerun
    interrupted by fast typing can leave the same mismatch.

    So the state is made valid by construction before the widget is drawn: one of
    ``options`` (a stale label goes through ``recover``, which may name the option it
    meant; anything else unusable becomes ``default``, or the first option), and it is
    always written back to ``session_state``. Writing it counts as a change of value, so
    Streamlit sends the label for *this* run to the browser every time and the browser
    never holds a label from an older one.
    """
    options = list(options)
    value = st.session_state.get(key)
    if not _is_option(value, options):
        value = recover(value) if recover is not None else None
        if not _is_option(value, options):
            value = default if _is_option(default, options) else options[0]
    st.session_state[key] = value
    where = where or st
    widget = where.select_slider if slider else where.selectbox
    return widget(label, options, key=key, format_func=format_func, **kwargs)


def keep_within(key: str, upper: int, *, default: int) -> None:
    """Before a slider over 0..``upper`` keyed ``key`` is drawn: keep its stored value (``default``
    when it has none) at most ``upper``, since a range shorter than last run's would otherwise
    hold a value it cannot show."""
    st.session_state[key] = min(st.session_state.get(key, default), upper)


def token_select(label: str, tokens, key: str, *, default: int | None = None, first: int = 0,
                 where=None, help: str | None = None) -> int | None:
    """A select box of token positions ``first..len(tokens)-1``, shown as "3 ␣sat"; returns
    the chosen position as an int (None only when there is no position to choose). A stale
    label is read back by its leading number; see ``stable_select`` for why that happens."""
    n = len(tokens)
    if n <= first:
        return None
    fallback = min(max(first if default is None else int(default), first), n - 1)
    labels = token_labels(tokens)  # widgets show text as typed
    return int(stable_select(label, range(first, n), key, default=fallback, where=where, help=help,
                             recover=leading_number, format_func=labels.__getitem__))


def prompt_box(prefix: str, text: str) -> tuple[str, str | None]:
    """A page's own prompt box (key ``{prefix}_prompt``), cleaned like the sidebar's text.

    It starts as the sidebar's ``text`` and follows it when the sidebar's text changes, unless
    the learner has typed a prompt of their own; coming back from another page, it holds the
    box's last text. Returns the cleaned prompt and the cleaning's note (None when untouched).
    """
    key, keep, came_from = f"{prefix}_prompt", f"_{prefix}_prompt_keep", f"_{prefix}_prompt_from"
    state = st.session_state
    if state.get(came_from) != text:  # a new sidebar text: offer it, unless
        if state.get(keep) in (None, state.get(came_from)):  # not when the learner typed
            state[keep] = text  # a prompt of their own
            if key in state:  # the box on the screen follows too, not only its next visit
                state[key] = text
        state[came_from] = text
    if key not in state:  # back from another page: the box's last text
        state[key] = state.get(keep, text)

    def remember() -> None:
        st.session_state[keep] = st.session_state.get(key, "")

    raw = st.text_area("Prompt", key=key, max_chars=MAX_TYPED_CHARS, height=80, on_change=remember,
                       help="It starts as the sidebar's text; type anything. Press Ctrl+Enter to run.")
    return clean_text(raw)


def prompt_ids(bundle, prompt: str, prompt_note: str | None, new_tokens: int,
               waiting: str) -> tuple[int, ...] | None:
    """The ids of a page's prompt (``prompt_box``'s text and note) with room for
    ``new_tokens`` more, or None: ``waiting`` says what waits for an empty prompt, and a prompt
    the model cannot read gets a warning. Notes about cleaning or cutting it go under the box."""
    from tfviz.decoding import prompt_with_room

    if not prompt:
        st.info(f"Type a prompt above for the model to continue (any text at all). {waiting}")
        return None
    if prompt_note:
        st.caption(prompt_note)
    try:
        ids, room_note = prompt_with_room(bundle, prompt, new_tokens)
    except ValueError as err:
        st.warning(f"The model cannot read this prompt: {err}.")
        return None
    if room_note:
        st.caption(room_note)
    return ids
