"""What the tour shows of one text, and the same numbers stored beside the weights for the
sentence every learner sees first.

The tour's first two steps need only a few numbers of a forward pass: the token ids and
strings, each stage's array shape, and the model's five most likely next tokens.
:func:`tour_numbers` takes them from a finished trace. On a freshly started server, tracing
means importing torch first: seconds of CPU on our two cores, shared with the browser that is
loading Streamlit's frontend at that moment. So the numbers of the default sentence on the
default model are computed once, when the model is built, and kept in
``assets/<model>/tour_numbers.json``; :func:`stored` reads them back, without torch.

They can never drift from the model unnoticed: the file records the SHA-256 of the files it was
computed from, and :func:`stored` gives nothing (so the tour traces live) when any of them
changed since. ``tests/test_tour_numbers.py`` recomputes every number from the live model.
``python -m tfviz.train --preset gpt-tiny`` writes the file with the weights
(``tfviz.training.tour``); after a change to what the tour computes,
``python -m tfviz.training.tour`` rewrites it from the weights in assets/.

No streamlit and no torch here (the trace and the bundle are handed in).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfviz.analysis.pipeline import Stage, pipeline_stages, top_predictions
from tfviz.config import ModelConfig

if TYPE_CHECKING:
    from tfviz.trace import Trace

#: The sentence and model every learner meets first (``tfviz.ui.state.DEFAULT_TEXT`` and
#: ``DEFAULT_MODEL``; the test checks they are the same).
TEXT = "The animal didn't cross the street because it was too tired."
MODEL = "gpt-tiny"
FILE = "tour_numbers.json"
#: The files the numbers are computed from (the manifest holds the training vocabulary, which
#: the sidebar's notice reads).
SOURCES = ("config.json", "model.safetensors", "tokenizer.json", "manifest.json")
TOP = 5  # guesses the tour draws


@dataclass(frozen=True)
class TourNumbers:
    """One text on one model, as the tour (and the sidebar's notices) show it."""

    name: str  # the model's, as the sidebar shows it
    text: str
    config: ModelConfig
    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    reading_notice: str | None  # the notice when the text was cut to the context
    vocabulary_notice: str | None  # the words the model never read in training
    stages: tuple[Stage, ...]
    predictions: tuple[tuple[int, str, float], ...] | None  # None: no next-token guess
    trained: bool


def tour_numbers(model: str, text: str, bundle, trace: Trace,
                 reading_notice: str | None, vocabulary_notice: str | None) -> TourNumbers:
    """The tour's numbers from a live trace of ``text`` on ``bundle``. Predictions are the
    last position's next token, for a model with a head that predicts one (a decoder, or an
    encoder-decoder's decoder); an encoder's guess depends on the token it hides. ``bundle``
    (a :class:`tfviz.bundle.Bundle`) gives the token strings and whether it was trained."""
    cfg = trace.config
    guesses = None
    if cfg.lm_head and cfg.arch != "encoder":
        guesses = tuple(top_predictions(trace.logits[-1], TOP, bundle.tokenizer.id_to_token))
    ids = tuple(int(i) for i in trace.ids) if trace.ids is not None else ()
    return TourNumbers(model, text, cfg, ids, tuple(trace.tokens), reading_notice,
                       vocabulary_notice, tuple(pipeline_stages(trace)), guesses, bundle.trained)


def _digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
            for name in SOURCES if (folder / name).exists()}


def write(folder: str | Path, numbers: TourNumbers) -> Path:
    """Store ``numbers`` in ``folder/tour_numbers.json`` with the digests of the files they
    came from (the config is not stored: it is the folder's config.json)."""
    folder = Path(folder)
    data = {
        "model": numbers.name, "text": numbers.text, "sources": _digests(folder),
        "ids": list(numbers.ids), "tokens": list(numbers.tokens),
        "reading_notice": numbers.reading_notice, "vocabulary_notice": numbers.vocabulary_notice,
        "stages": [{"key": s.key, "title": s.title, "shape": list(s.shape), "note": s.note}
                   for s in numbers.stages],
        "predictions": None if numbers.predictions is None else [list(p) for p in numbers.predictions],
        "trained": numbers.trained,
    }
    path = folder / FILE
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def stored(folder: str | Path) -> TourNumbers | None:
    """The numbers stored in ``folder``, or None when there are none, or when a file they were
    computed from has changed since (a retrained model, a new tokenizer)."""
    folder = Path(folder)
    try:
        data = json.loads((folder / FILE).read_text(encoding="utf-8"))
        if data["sources"] != _digests(folder) or set(data["sources"]) != set(SOURCES):
            return None
        cfg = ModelConfig.from_dict(json.loads((folder / "config.json").read_text()))
    except (OSError, ValueError, KeyError):
        return None
    preds = data["predictions"]
    return TourNumbers(
        data["model"], data["text"], cfg, tuple(data["ids"]), tuple(data["tokens"]),
        data["reading_notice"], data["vocabulary_notice"],
        tuple(Stage(s["key"], s["title"], tuple(s["shape"]), s["note"]) for s in data["stages"]),
        None if preds is None else tuple((int(i), str(t), float(p)) for i, t, p in preds),
        bool(data["trained"]))


def vocabulary_notice(bundle, model: str, text: str) -> str | None:
    """Names the words of ``text`` the model never read in training (None if it has no record);
    a lab run's model names the symbols it skipped, and what it does read. ``bundle`` gives
    its tokenizer and its manifest's training vocabulary."""
    from tfviz.data.vocabulary import unknown_words, unknown_words_notice

    if hasattr(bundle.tokenizer, "unknown_notice"):
        return bundle.tokenizer.unknown_notice(text)
    words = bundle.manifest.get("vocabulary", {}).get("words")
    return unknown_words_notice(model, unknown_words(text, words)) if words else None
