"""The "Looking inside" charts and the lab's induction curves: valid Vega-Lite (altair's
schema), carrying the numbers they were given, with their views switched by parameters."""
from __future__ import annotations

import numpy as np
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.experiments.inside import attribution_view, induction_view, lens_view, patch_view, coref_pair
from tfviz.viz import interpret as iv

SCHEMA = load_schema()


def _valid(spec: dict) -> dict:
    validate_jsonschema(spec, SCHEMA)
    return spec


def test_induction_training_curves():
    ind = [np.array([[0.1, 0.0], [0.2, 0.9]]), np.array([[0.1, 0.05], [0.6, 0.95]])]
    c = _valid(iv.induction_training([0, 20], ind, [3.3, 3.2], [3.4, 0.4]))
    rows = c["datasets"]["rows"]
    assert {(r["step"], r["head"], r["score"]) for r in rows} >= {(0, "L1H1", 0.9), (20, "L1H0", 0.6)}
    assert [r["loss"] for r in c["datasets"]["losses"]] == [3.3, 3.4, 3.2, 0.4]
    assert c["datasets"]["threshold"] == [{"t": 0.5}]


def test_lesson_charts_on_a_bundle():
    b = tfviz.load("llama-tiny")
    text = "the dog didn't cross the road because it was too tired"
    tr = b.trace(text)
    lens = lens_view(b, tr)
    c = _valid(iv.lens_map(lens.tokens, lens.layers, lens.top, lens.top_prob, lens.final_prob))
    assert len(c["datasets"]["rows"]) == len(lens.layers) * len(lens.tokens)
    assert c["params"][0]["bind"]["input"] == "radio"  # the view switches in the browser
    dla = attribution_view(b, tr)
    c = _valid(iv.attribution_bars(dla.tokens, dla.answers, dla.parts, dla.kinds, dla.logits,
                                   position=len(dla.tokens) - 1))
    last = [r["share"] for r in c["datasets"]["rows"] if r["position"] == len(dla.tokens) - 1]
    assert abs(sum(last) - dla.logits[-1]) < 5e-5 * len(last) + 1e-4
    p = patch_view(b, *coref_pair())
    _valid(iv.patch_map(p.by_position.restored(), p.by_position.values, p.by_position.tokens))
    _valid(iv.head_patch_map(p.by_head.restored()))
    v = induction_view(b, 10, 0)
    _valid(iv.induction_heads(v.report.scores, v.report.previous))
    c = _valid(iv.repeated_pattern(v.patterns, [str(h) for h in v.heads], v.report.tokens, v.report.losses))
    l, h = v.heads[0]  # the map of the first shown head, every cell sent (or under 0.02)
    sent = {(r["q"], r["k"]): r["w"] for r in c["datasets"]["rows"] if r["head"] == 0}
    T = len(v.report.tokens)
    labels = [f"{i} {t}" for i, t in enumerate(v.report.tokens)]
    for a in range(T):
        for k in range(a + 1):
            assert abs(sent.get((labels[a], labels[k]), 0.0) - v.patterns[0][a, k]) < 0.02


def test_each_score_map_draws_only_its_own_scores():
    """The induction and previous-token maps each show their own numbers: every layer of each
    map keeps the rows of its 'which' (a faceted layer that named the dataset itself drew both
    scores over each other in each map, seen in chromium)."""
    scores, previous = np.array([[0.9, 0.1]]), np.array([[0.2, 0.7]])
    c = _valid(iv.induction_heads(scores, previous))
    assert "facet" not in c
    rows = c["datasets"]["rows"]
    for panel, want in zip(c["hconcat"], (scores, previous)):
        for layer in panel["layer"]:
            (keep,) = [t["filter"] for t in layer["transform"]]
            which = keep.split("== ")[1].strip("'")
            assert which == panel["title"]
            shown = {(r["layer"], r["head"]): r["score"] for r in rows if r["which"] == which}
            assert shown == {(0, 0): want[0, 0], (0, 1): want[0, 1]}


def test_diverging_maps_are_symmetric_about_zero():
    """A patching map's colours run from -b to +b: a small negative cell is as faint as a small
    positive one (with only domainMid, -0.03 took the darkest blue next to a 0.9)."""
    c = _valid(iv.head_patch_map(np.array([[0.9, -0.03]])))
    heat = c["layer"][0]
    assert heat["encoding"]["color"]["scale"]["domain"] == [-1.0, 1.0]
    c = _valid(iv.patch_map([[0.5, 1.2]], [[-10.0, 3.0]], ["a", "b"]))
    assert c["encoding"]["color"]["scale"]["domain"] == {"expr": "[-(show == 0 ? 1.2 : 10.0), show == 0 ? 1.2 : 10.0]"}
