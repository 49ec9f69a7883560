"""Lesson 3's RoPE charts on the model's own layout: the turn planes in Llama's halves pairing,
the frequencies plain and stretched, a far position as each pair reads it. Each spec is valid
Vega-Lite (altair's schema) and carries exactly the numbers it was given."""
from __future__ import annotations

import json

import numpy as np
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.experiments.rope import RopeLayout, example_scalings, position_reads, stretched_frequencies
from tfviz.viz import positions as vp

LAYOUT = RopeLayout(16, 16, 10000.0, "halves")


def _valid(spec: dict) -> dict:
    validate_jsonschema(json.loads(json.dumps(spec)), load_schema())  # as the browser receives it
    return spec


def test_the_turn_planes_read_the_halves_pairs():
    q, k = np.arange(16.0), -np.arange(16.0)
    shown = (0, 3)
    spec = _valid(vp.rope_turn_figure(q, q + 1, k, k * 0.5, 5, 2, pairs=shown,
                                      planes=tuple(LAYOUT.dims(i) for i in shown)))
    assert [(p["title"]["text"], p["title"]["subtitle"]) for p in spec["hconcat"]] == [
        ("pair 0", "dimensions 0 and 8"), ("pair 3", "dimensions 3 and 11")]
    rows = spec["datasets"]["rows"]
    pair3 = {r["series"]: (r["x"], r["y"]) for r in rows if r["pair"] == 3}
    assert pair3 == {"q before": (3.0, 11.0), "q turned": (4.0, 12.0),
                     "k before": (-3.0, -11.0), "k turned": (-1.5, -5.5)}
    assert "pair 3 is dimensions 3 and 11" in spec["description"]


def test_the_frequency_and_reach_charts_carry_the_rows():
    scalings = example_scalings(128, 4.0)
    freq_rows = stretched_frequencies(LAYOUT, scalings)
    spec = _valid(vp.rope_frequency_chart(freq_rows, title="T"))
    assert spec["datasets"]["rows"] == freq_rows
    assert spec["encoding"]["y"]["scale"] == {"type": "log"}
    assert spec["encoding"]["color"]["scale"]["domain"] == ["plain", "linear ×4", "llama3 ×4"]
    reach = position_reads(LAYOUT, scalings, 511)
    spec = _valid(vp.rope_reach_chart(reach, 511, 128, edge_label="its context: 128 positions"))
    assert spec["datasets"]["rows"] == reach
    assert spec["datasets"]["edge"] == [{"edge": 127, "what": "its context: 128 positions"}]
    assert spec["title"] == "Position 511, as each pair reads it"
