"""Cached loaders. Models are shared by every learner (cache_resource) and never edited;
traces are cached per input (cache_data), so each caller gets its own copy.

A Hugging Face folder found on the server (``tfviz.ui.checkpoints``) is named like a bundled
model and shared the same way: ``get_bundle`` opens it once for every learner, on demand.

A learner's own model (a training-lab run opened in the lessons, ``tfviz.ui.own_model``) is
never put in these server-wide caches: ``get_bundle`` finds it in the learner's session, and
every function decorated with ``per_model`` answers it from that session's memo.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import streamlit as st

import tfviz
from tfviz.analysis import tour_numbers as tn
from tfviz.bundle import ASSETS, Bundle, Reading, bundled_names
from tfviz.config import MODERN_PRESET_NAMES, PRESET_NAMES, RunOptions
from tfviz.data.vocabulary import pattern_gap_notice, pattern_gaps
from tfviz.lab.opened import is_run_name
from tfviz.ui import checkpoints, own_model
from tfviz.ui.large_models import LARGE_MODEL_BYTES, LARGE_MODEL_ENTRIES, is_large
from tfviz.ui.server_threads import one_thread_per_op

if TYPE_CHECKING:  # tfviz.trace imports torch, which the tour's first view does without
    from tfviz.trace import Trace


@st.cache_resource(show_spinner="Loading the model…")
def _shared_bundle(name: str) -> Bundle:
    bundle = tfviz.load(name)
    for p in bundle.model.parameters():  # a shared model must never train by accident
        p.requires_grad_(False)
    one_thread_per_op()  # torch is loaded now, perhaps by this run (tfviz.ui.server_threads)
    return bundle


def get_bundle(name: str) -> Bundle:
    """The model called ``name``: a shared one (one copy on the server, never edited), or this
    session's own opened run (``tfviz.ui.own_model``; LookupError in any other session), or a
    Hugging Face folder found on the server (``tfviz.ui.checkpoints``: opened once, on demand;
    ``checkpoints.NotOpened`` if it cannot be, which the sidebar has already said and avoided)."""
    if is_run_name(name):
        return own_model.bundle_of(name)
    if checkpoints.found(name) is not None:
        return checkpoints.open_bundle(name)
    return _shared_bundle(name)


def held_bytes(value, seen: set[int] | None = None) -> int:
    """About how many bytes ``value`` holds: its arrays' own bytes, plus the size of every other
    object it reaches (dataclasses, mappings, sequences, objects' attributes), each counted once.

    >>> import numpy as np
    >>> x = np.zeros(1000)
    >>> 8000 + 96 <= held_bytes({"a": x, "b": (np.ones(24, np.float32), x)}) < 8000 + 96 + 1000
    True
    """
    import sys

    import numpy as np

    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):  # a view counts as its own bytes too: never too few
        return value.nbytes
    size = sys.getsizeof(value)
    if isinstance(value, (str, bytes, bytearray, int, float, bool, type(None))):
        return size
    if isinstance(value, dict):
        parts = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        parts = list(value)
    else:
        slots = getattr(type(value), "__slots__", ())
        parts = [*getattr(value, "__dict__", {}).values(),
                 *(getattr(value, n) for n in ([slots] if isinstance(slots, str) else slots)
                   if hasattr(value, n))]
    return size + sum(held_bytes(part, seen) for part in parts)


class ByteBoundCache:
    """A server-wide cache of ``fn``'s results that, like ``st.cache_data``, gives every caller
    its own copy (a deep copy, as ``own_model.memo`` does), and keeps at most ``entries``
    results and ``budget`` bytes of them (``held_bytes``), forgetting the least recently used
    first. A result larger than the budget is computed and returned but not kept. An argument
    that cannot be a key is computed without being kept."""

    def __init__(self, fn, entries: int, budget: int):
        import collections
        import threading

        self.fn, self.entries, self.budget = fn, entries, budget
        self._kept: collections.OrderedDict[tuple, tuple[object, int]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        import copy

        key = (args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            return self.fn(*args, **kwargs)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is None:
            value = self.fn(*args, **kwargs)
            kept = (value, held_bytes(value))
            self._keep(key, kept)
        return copy.deepcopy(kept[0])

    def _keep(self, key: tuple, kept: tuple[object, int]) -> None:
        if kept[1] > self.budget:
            return
        with self._lock:
            self._kept[key] = kept
            self._kept.move_to_end(key)
            while len(self._kept) > self.entries or self.held() > self.budget:
                self._kept.popitem(last=False)

    def held(self) -> int:
        """Bytes of the results kept."""
        return sum(size for _, size in self._kept.values())

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self, *args, **kwargs) -> None:
        with self._lock:
            self._kept.clear()


def per_model(shared, *, copies: bool = True):
    """``@per_model(st.cache_data(...))`` on a function whose first argument is a model name:
    a shared model's calls go through ``shared`` (a Streamlit cache decorator, server-wide);
    a large model's (a model folder: ``tfviz.ui.large_models``) through a cache of its own that
    keeps only ``LARGE_MODEL_ENTRIES`` results, each one many times a tiny model's, and (for results that
    are copied, ``ByteBoundCache``) at most ``LARGE_MODEL_BYTES`` of them; a session's own
    model's calls are remembered in that session only (``own_model.memo``).
    ``copies=False`` for ``st.cache_resource`` functions, whose callers share one object."""
    def wrap(fn):
        cached = shared(fn)
        if copies:
            large = ByteBoundCache(fn, LARGE_MODEL_ENTRIES, LARGE_MODEL_BYTES)
        else:
            large = st.cache_resource(max_entries=LARGE_MODEL_ENTRIES, show_spinner=False)(
                _renamed(fn, "large"))

        @functools.wraps(fn)
        def call(model, *args, **kwargs):
            if is_run_name(model):
                return own_model.memo(fn, model, args, kwargs, copies)
            if is_large(model):
                return large(model, *args, **kwargs)
            return cached(model, *args, **kwargs)

        def clear(*args, **kwargs):
            cached.clear(*args, **kwargs)
            large.clear(*args, **kwargs)

        call.clear = clear
        return call

    return wrap


def _renamed(fn, suffix: str):
    """``fn`` under a name of its own: Streamlit keys a cache by the function's qualified name,
    so a second cache of the same function needs another."""
    @functools.wraps(fn)
    def same(*args, **kwargs):
        return fn(*args, **kwargs)

    same.__qualname__ = f"{fn.__qualname__}.{suffix}"
    return same


def shipped_model_names() -> list[str]:
    """The sidebar's bundled models: gpt-tiny, moe-tiny, bert-tiny, reverse-encdec, then the
    modern block's llama-tiny, which joins only with the files its training wrote (weights,
    tokenizer and manifest in assets/): fresh seeded weights would teach nothing."""
    trained = bundled_names()
    ours = [n for n in PRESET_NAMES if n in trained] or list(PRESET_NAMES)
    return ours + [n for n in MODERN_PRESET_NAMES if n in trained and (ASSETS / n / "manifest.json").exists()]


def model_names() -> list[str]:
    """The sidebar's models: the bundled ones, then the Hugging Face folders found on this
    server (``tfviz.ui.checkpoints``; listed without being opened)."""
    return shipped_model_names() + checkpoints.discovery().names


@per_model(st.cache_data(max_entries=512, show_spinner=False))
def read_text(model: str, text: str) -> Reading:
    """The ids ``model`` reads of ``text`` and the notice if it was cut: tokenised once, for
    the sidebar's notice and for every trace of that text."""
    first = stored_tour_numbers(model, text)
    if first is not None:  # the default sentence: read without loading the model
        return Reading(first.ids, first.reading_notice)
    return get_bundle(model).read(text)


@st.cache_resource(show_spinner=False)
def _stored_tour_numbers(model: str) -> tn.TourNumbers | None:
    return tn.stored(ASSETS / model)


def stored_tour_numbers(model: str, text: str) -> tn.TourNumbers | None:
    """The tour's numbers of ``text`` on a bundled ``model`` as they were stored when the model
    was built (``tfviz.analysis.tour_numbers``): there are some for the default sentence only,
    and only while the files they came from are unchanged. With them, a fresh server's first
    page (the tour, with the sidebar's notices) needs no torch, which the warm-up imports
    after that page has run (``tfviz.ui.warmup``)."""
    if is_run_name(model) or checkpoints.found(model) is not None:
        return None
    first = _stored_tour_numbers(model)
    return first if first is not None and first.name == model and first.text == text else None


def get_tour_numbers(model: str, text: str) -> tn.TourNumbers:
    """What the tour shows of ``text`` on ``model``: stored for the default sentence, else
    from the (cached) trace."""
    first = stored_tour_numbers(model, text)
    if first is not None:
        return first
    reading = read_text(model, text)
    return tn.tour_numbers(model, text, get_bundle(model), get_trace(model, text), reading.notice,
                           vocabulary_notice(model, text))


def get_trace(model: str, text: str, options: RunOptions = RunOptions()) -> Trace:
    """The trace of ``text`` on ``model`` under the what-if ``options``; each caller gets its
    own copy. The options are made canonical first (a switch that repeats the model's own
    choice counts as unset), so equal runs share one cache entry."""
    o = options.canonical(get_bundle(model).config)
    return _trace(model, text, o.scale, o.causal, o.temperature, tuple(sorted(o.ablate_heads)),
                  o.moe_top_k)


@per_model(st.cache_data(max_entries=512, show_spinner=False))
def _trace(model: str, text: str, scale: bool | None, causal: bool | None, temperature: float,
           ablate: tuple[tuple[int, int], ...], top_k: int | None) -> Trace:
    options = RunOptions(scale=scale, causal=causal, temperature=temperature,
                         ablate_heads=frozenset(ablate), moe_top_k=top_k)
    return get_bundle(model).trace(read_text(model, text), options=options)


NOT_OUR_CORPUS = ("{model} was trained by others, on text we have not seen: it reads any text "
                  "with its own tokenizer, and the example sentences and word lists of these "
                  "pages were written for our own small models.")


@per_model(st.cache_data(max_entries=512, show_spinner=False))
def vocabulary_notice(model: str, text: str) -> str | None:
    """Names the words of ``text`` the model never read in training (None if it has no record);
    a lab run's model names the symbols it skipped, and what it does read."""
    if checkpoints.found(model) is not None:
        return NOT_OUR_CORPUS.format(model=model)
    first = stored_tour_numbers(model, text)
    if first is not None:  # the default sentence: without loading the model
        return first.vocabulary_notice
    return tn.vocabulary_notice(get_bundle(model), model, text)


@per_model(st.cache_data(max_entries=512, show_spinner=False))
def coref_gap_notice(model: str, text: str) -> str | None:
    """Names the words of an "it" sentence that never filled that role in the model's training;
    for a model folder, says that the "it" sentences were written for our models."""
    if checkpoints.found(model) is not None:
        return (f"The “it” sentences here were written for the models we trained on our own "
                f"corpus; {model} learned from text we have not seen, so whether a head links "
                "“it” to its noun shows what that model learned, not a lesson's promise.")
    roles = get_bundle(model).manifest.get("vocabulary", {}).get("coref")
    return pattern_gap_notice(pattern_gaps(text, roles)) if roles else None
