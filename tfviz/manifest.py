"""What a bundled model's manifest records, typed: what its training run measured on held-out
data (:class:`Evaluation`) and how it was trained (:class:`Recipe`).

``assets/<name>/manifest.json`` is written by ``python -m tfviz.train`` (its ``eval``, ``data``,
``train`` and ``command`` keys). Pages read these two dataclasses through ``bundle.evaluation``
and ``bundle.recipe`` instead of the JSON's keys, so a renamed key fails here, in one place,
and a page never meets a KeyError. A field is None where this model was not measured that way
(vit-tiny has no validation loss; an untrained model has nothing at all).

>>> ev = Evaluation.from_manifest({"eval": {"val_loss": 0.9053, "coref_head": {
...     "layer": 2, "head": 1, "share": 0.98}}})
>>> ev.val_loss, ev.coref_head, ev.exact_match
(0.9053, HeadRecord(layer=2, head=1, score=0.98), None)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class HeadRecord:
    """One head a training run singled out, and its score there (a share or a mean weight)."""

    layer: int
    head: int
    score: float

    @classmethod
    def read(cls, record: Mapping | None, score: str) -> HeadRecord | None:
        if not record:
            return None
        return cls(int(record["layer"]), int(record["head"]), float(record[score]))


def _number(kind, value):
    return None if value is None else kind(value)


def _frozen_shares(shares: Mapping | None) -> Mapping[str, float]:
    return MappingProxyType({k: float(v) for k, v in (shares or {}).items()})


@dataclass(frozen=True)
class Evaluation:
    """The manifest's measured metrics that the lessons show."""

    val_loss: float | None = None  # mean held-out loss per token (next token, or masked LM)
    val_sentences: int | None = None  # held-out sentences it was measured on
    coref_accuracy: float | None = None  # share of the "it refers to the" probe answered right
    coref_items: int | None = None  # held-out word combinations of the coreference tests
    coref_selection_items: int | None = None  # combinations the coreference head was picked on
    coref_head: HeadRecord | None = None  # the head that links "it" to its noun (share right)
    coref_head_by_answer: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    coref_head_shares: tuple[tuple[float, ...], ...] = ()  # (layer, head): share right
    masked_accuracy: float | None = None  # share of [MASK] positions guessed exactly
    selected_share: float | None = None  # share of tokens the masked-LM draw selected
    positions_trained: int | None = None  # longest sentence in training: positions beyond are untrained
    exact_match: float | None = None  # share of held-out sources reversed exactly
    heldout_examples: int | None = None  # held-out sources of the reversal task
    anti_diagonal_head: HeadRecord | None = None  # the cross-attention head that reads backwards
    heldout_accuracy: float | None = None  # share of held-out images named right
    heldout_accuracy_by_class: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({}))
    heldout_images: int | None = None

    @classmethod
    def from_manifest(cls, manifest: Mapping) -> Evaluation:
        ev = manifest.get("eval") or {}
        return cls(
            val_loss=_number(float, ev.get("val_loss")),
            val_sentences=_number(int, ev.get("val_sentences")),
            coref_accuracy=_number(float, ev.get("coref_accuracy")),
            coref_items=_number(int, ev.get("coref_items")),
            coref_selection_items=_number(int, ev.get("coref_selection_items")),
            coref_head=HeadRecord.read(ev.get("coref_head"), "share"),
            coref_head_by_answer=_frozen_shares(ev.get("coref_head_by_answer")),
            coref_head_shares=tuple(tuple(float(v) for v in row)
                                    for row in ev.get("coref_head_shares") or ()),
            masked_accuracy=_number(float, ev.get("masked_accuracy")),
            selected_share=_number(float, ev.get("selected_share")),
            positions_trained=_number(int, ev.get("positions_trained")),
            exact_match=_number(float, ev.get("exact_match")),
            heldout_examples=_number(int, ev.get("heldout_examples")),
            anti_diagonal_head=HeadRecord.read(ev.get("anti_diagonal_head"), "weight"),
            heldout_accuracy=_number(float, ev.get("heldout_accuracy")),
            heldout_accuracy_by_class=_frozen_shares(ev.get("heldout_accuracy_by_class")),
            heldout_images=_number(int, ev.get("heldout_images")),
        )


@dataclass(frozen=True)
class Recipe:
    """How the model was trained, as far as the lessons tell it."""

    command: str | None = None  # the command that rebuilds it
    train_seconds: float | None = None  # wall-clock seconds of the training run
    row: str | None = None  # what one training row held ("sentence (no [CLS]/[SEP])")
    coref_statements: int | None = None  # extra "it" sentences with the noun as a target
    head_dropout_layer: int | None = None  # the layer whose heads were dropped at random
    head_dropout_p: float | None = None  # ... with this probability each, on those sentences

    @classmethod
    def from_manifest(cls, manifest: Mapping) -> Recipe:
        data = manifest.get("data") or {}
        statements, dropout = data.get("coref_statements"), data.get("head_dropout")
        return cls(
            command=manifest.get("command"),
            train_seconds=_number(float, (manifest.get("train") or {}).get("wall_seconds")),
            row=data.get("row"),
            coref_statements=int(statements["rows"]) if statements else None,
            head_dropout_layer=int(dropout["layer"]) if dropout else None,
            head_dropout_p=float(dropout["p"]) if dropout else None,
        )


class Measured:
    """``evaluation`` and ``recipe``, typed, for a bundle that holds its ``manifest`` (the text
    models' Bundle and vit-tiny's VisionBundle)."""

    manifest: Mapping

    @property
    def evaluation(self) -> Evaluation:
        """What training measured on held-out data (the manifest's ``eval``), typed."""
        return Evaluation.from_manifest(self.manifest)

    @property
    def recipe(self) -> Recipe:
        """How it was trained: the command that rebuilds it, its seconds, its data's shape."""
        return Recipe.from_manifest(self.manifest)
