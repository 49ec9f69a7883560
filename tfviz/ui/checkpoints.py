"""Hugging Face model folders in the app: found once, opened once for every learner, on demand.

The folders come from :func:`tfviz.hf.discover.discover` (``TFVIZ_MODELS`` and the Hugging
Face cache), read again at most once a minute (config.json and a safetensors header each, no
weights), so the sidebar's picker stays cheap.

**The model's name.** A found folder is named by discovery (``gpt2``, ``bert-base-uncased``,
``my-gpt2-2``...; never a bundled model's name, never a lab run's). That name is what
``st.session_state["model"]`` holds when a learner picks it, what ``?model=`` carries in a link,
and what ``tfviz.ui.cache.get_bundle(name)`` and every per-model cache are asked for, exactly
like ``gpt-tiny``. :func:`found` says whether a name is one (and which folder, family and size);
``get_bundle(name).manifest["family"]`` is "GPT-2" (or "BERT") for such a model and absent for
the bundled ones.

**Opening.** Nothing is read until a learner picks the model. Then :func:`settle`, called by the
sidebar before it draws the picker, opens it under a spinner that says what it costs, once for
the whole server (``st.cache_resource``; every later learner gets the same copy at once), or
refuses before reading a weight when the machine's free memory is smaller than the cost
(:mod:`tfviz.hf.memory`). A refusal, or a folder that fails to open (its
:class:`~tfviz.hf.CheckpointError` message, never a traceback), puts the sidebar back on the
default model with that message. A failure is remembered for that state of the folder (its
files' sizes and times), so a fixed folder is tried again and a broken one is not re-read by
every learner.

**No paths on the pages.** Every learner of a shared server reads the sidebar, and the server's
file system is none of their business: a folder is shown by its name and its place
(``Found.place``: "TFVIZ_MODELS entry 2, folder gpt2", which tells the lecturer who set
TFVIZ_MODELS which of two gpt2 folders it is), and a message about one has its paths cut to
their last name (:func:`tfviz.hf.discover.without_paths`). The full paths go to the server's
log, once each, where the person who started the server reads them: which folder each name
is, and each folder not offered or failing to open with its reason.
"""
from __future__ import annotations

import dataclasses
import logging
import os

import streamlit as st

import tfviz
from tfviz.bundle import Bundle, bundled_names
from tfviz.config import KV_PRESET_NAMES, POS_PRESET_NAMES, PRESET_NAMES, VIT_PRESET_NAMES
from tfviz.hf import CheckpointError
from tfviz.hf.discover import ENV_VAR, Discovery, Found, discover, hub_cache, short_count, without_paths
from tfviz.hf.memory import available_bytes, opening_cost, refusal
from tfviz.lab.opened import RUN_LINK, is_run_name

RESCAN_SECONDS = 60  # a folder downloaded while the server runs appears within a minute
log = logging.getLogger(__name__)
_logged: set[str] = set()  # each line once per server process, not at every rescan


def _log_once(line: str) -> None:
    if line not in _logged:
        _logged.add(line)
        log.warning(line)


def human_bytes(n: float) -> str:
    """``tfviz.decoding.memory.human_bytes``, imported when a folder is shown: the decoding
    package imports torch, which a server without folders does not need for its first page."""
    from tfviz.decoding.memory import human_bytes as words

    return words(n)


def taken_names() -> set[str]:
    """Names a folder may not take: every model tfviz ships or builds (the sidebar's, lesson
    3's and 18's comparison models, vit-tiny, whatever has files in assets/), and "my-run", a
    shared link's stand-in for a learner's own training-lab run."""
    return {*PRESET_NAMES, *KV_PRESET_NAMES, *POS_PRESET_NAMES, *VIT_PRESET_NAMES, *bundled_names(), RUN_LINK}


class NotOpened(Exception):
    """The model was not opened; the message says why, in words for the learner."""


@st.cache_resource(ttl=RESCAN_SECONDS, show_spinner=False)
def _discovered(paths: str, hub: str) -> Discovery:
    found = discover({ENV_VAR: paths, "HF_HUB_CACHE": hub}, reserved=taken_names())
    for f in found.models:  # the pages name a folder by its place; the log by its path
        _log_once(f"model folder {f.name}: {f.folder} ({f.place})")
    for s in found.skipped:
        _log_once(f"model folder not offered: {s.folder} ({s.place}): {s.reason}")
    return found


def discovery() -> Discovery:
    """Every model folder this server can offer, and the ones it cannot with their reasons."""
    return _discovered(os.environ.get(ENV_VAR, ""), str(hub_cache(os.environ)))


def found(name: object) -> Found | None:
    """The found folder called ``name``, or None (a bundled model, a lab run, anything else)."""
    return discovery().get(name) if isinstance(name, str) else None


def _stamp(f: Found) -> tuple:
    """The folder's files as they are now: a changed file makes a new cache key."""
    out = []
    for part in ("config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json",
                 "tokenizer_config.json", "generation_config.json"):
        try:
            s = (f.folder / part).stat()
            out.append((part, s.st_size, s.st_mtime_ns))
        except OSError:
            out.append((part, None, None))
    return tuple(out)


@st.cache_resource(show_spinner=False)
def _opened(name: str, folder: str, stamp: tuple) -> Bundle | str:
    """The opened model, shared by every learner (never edited), or the reason it cannot be
    opened (kept, so a broken folder is read once per state of its files). A refusal for
    memory is raised instead, so it is not kept: memory may be free later."""
    f = found(name)
    if f is None or str(f.folder) != folder:
        raise NotOpened(f"{name} is no longer among the model folders this server finds.")
    why = refusal(name, opening_cost(f.info.memory_bytes), available_bytes())
    if why:
        raise NotOpened(why)
    try:
        bundle = tfviz.load(f.folder)
    except CheckpointError as e:
        return _failed(f, e.problem, str(e))
    except MemoryError:  # the estimate fell short: say so, and let a later try find more free
        raise NotOpened(f"{name} is not opened: this server ran out of memory opening it. "
                        "The lessons go on with a bundled model.") from None
    except (OSError, RuntimeError, ValueError) as e:  # unreadable files, a tensor torch refuses
        return _failed(f, f"{type(e).__name__}: {e}", f"{f.folder}: {type(e).__name__}: {e}")
    for p in bundle.model.parameters():  # a shared model must never train by accident
        p.requires_grad_(False)
    # Named as the app names it (a cached snapshot's folder is its revision's hash), and with
    # the place it was found instead of its path, which a page could otherwise show.
    return dataclasses.replace(bundle, name=name, config=dataclasses.replace(bundle.config, name=name),
                               manifest={**bundle.manifest, "source": f.place})


def _failed(f: Found, problem: str, logged: str) -> str:
    """What the sidebar says when ``f`` fails to open: its name, place and the problem with
    paths cut short; the server's log gets ``logged``, paths whole."""
    _log_once(f"model folder {f.name} failed to open: {logged}")
    return f"Cannot open {f.name} ({f.place}): {without_paths(problem, [f.folder])}"


def cost_line(f: Found) -> str:
    """ "about 1.50 GiB of memory (135M parameters as float32; 257 MiB on disk), once for every
    learner": the disk's figure says why a bfloat16 file takes twice its size and more."""
    return (f"about {human_bytes(opening_cost(f.info.memory_bytes))} of memory "
            f"({short_count(f.info.n_params)} parameters as float32; "
            f"{human_bytes(f.info.bytes_on_disk)} on disk), once for every learner")


def open_bundle(name: str) -> Bundle:
    """The opened model called ``name``, opening it if no learner has yet. Raises
    :class:`NotOpened` with the reason when it cannot be (memory, a bad folder, gone)."""
    f = found(name)
    if f is None:
        raise NotOpened(f"{name} is not among the model folders this server finds.")
    with st.spinner(f"Opening {f.label}: {cost_line(f)}…"):
        result = _opened(name, str(f.folder), _stamp(f))
    if isinstance(result, str):
        raise NotOpened(result)
    return result


def settle(default_model: str, known: list[str]) -> str | None:
    """Before the sidebar draws the picker: if the chosen model is a found folder, open it (or
    find it open); if it cannot be, or it is a name no longer in ``known`` (a folder gone since
    the session chose it), choose ``default_model`` instead and return the reason."""
    name = st.session_state.get("model")
    if found(name) is None:
        if isinstance(name, str) and name not in known and not is_run_name(name):
            st.session_state["model"] = default_model
            return f"{name} is no longer among the models this server finds. Showing {default_model}."
        return None
    try:
        open_bundle(name)
    except NotOpened as e:
        st.session_state["model"] = default_model
        return f"{e} Showing {default_model}."
    return None


def picker_label(name: str) -> str:
    """How the picker shows ``name``: a found folder with its family and size."""
    f = found(name)
    return f.label if f is not None else name


def chosen_note() -> None:
    """Under the picker, when a found folder is the model: its whole label (the picker may cut
    it), where it came from and that it is shared."""
    f = found(st.session_state.get("model"))
    if f is not None:
        st.caption(f"{f.size}, from {f.source}. It takes about "
                   f"{human_bytes(opening_cost(f.info.memory_bytes))} of this server's memory, once "
                   "for every learner.")


def folders_note() -> None:
    """Under the picker: each found folder with what opening it costs, and each folder that is
    not offered with the reason, so a lecturer sees why theirs is missing."""
    d = discovery()
    if not d.models and not d.skipped:
        return
    free = available_bytes()
    title = (f"Model folders: {len(d.models)} offered"
             + (f", {len(d.skipped)} not" if d.skipped else ""))
    with st.expander(title):
        for f in d.models:
            st.markdown(f"**{f.name}**: {f.size}, from {f.place}. Opening it takes {cost_line(f)}.")
        if free is not None and d.models:
            st.caption(f"This server has {human_bytes(free)} of memory free now.")
        for s in d.skipped:
            st.markdown(f"Not offered: {s.place}: {without_paths(s.reason, [s.folder])}")
        st.caption("Folders are named by where they were found, not by their paths: the "
                   "server's log lists those.")
