"""A check every length-free instant chart passes (``tfviz.viz.kit.instant_length``).

Streamlit swaps a chart's data when its spec is unchanged and draws it anew otherwise, so the
spec of a length-free chart, its datasets left out, must be the same for every sentence whose
length shares one ``length_cap``, and differ once the sentence outgrows the cap.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.viz.kit import instant as iv
from tfviz.viz.kit.instant_length import length_cap

SCHEMA = load_schema()
LENGTHS = (3, 8, 13, 16, 17, 24)  # one cap (16) for the first four, the next (24) for the last two


def without_data(chart: dict) -> str:
    """The chart's spec with its datasets left out, as canonical JSON."""
    return json.dumps({k: v for k, v in chart.items() if k != "datasets"}, sort_keys=True)


def check_length_free(build: Callable[[int], tuple], lengths=LENGTHS,
                      past_cap: bool = True) -> dict[int, dict]:
    """``build(n)`` returns the chart of an ``n``-token sentence and that sentence's token
    labels. Checks that the specs of 3, 8, 13 and 16 tokens are one, that 17 and 24 tokens
    share another (with ``past_cap`` False: the same one, for a chart whose layout does not
    follow the cap at these lengths), that each chart is valid Vega-Lite carrying its own
    sentence's labels in its data, and returns the charts by length.

    A chart of two lengths (a source and the answer written to it) returns a third item, the
    layout it must be drawn in, such as (length_cap(source), length_cap(answer)); its labels
    are those its ``ntok`` counts. Then charts share a spec exactly when they share a layout,
    and at least two of ``lengths`` must share one (else nothing was shown to be kept).

    Labels None: a chart of several sentences whose rows carry their own labels, with no
    ``ntok`` of one sentence (lesson 15's "it" panels)."""
    built, layouts = {}, {}
    for n in lengths:
        chart, labels, *layout = build(n)
        validate_jsonschema(chart, SCHEMA)
        if labels is not None:
            assert iv.spec_tokens(chart) == list(labels) and (layout or len(labels) == n)
            assert {p["name"]: p for p in chart["params"]}["ntok"]["expr"] == "length(tokens)"
        built[n] = chart
        layouts[n] = layout[0] if layout else length_cap(n) if past_cap else 0
    same = {(a, b): without_data(built[a]) == without_data(built[b]) for a in lengths for b in lengths}
    assert same == {(a, b): layouts[a] == layouts[b] for a, b in same}, (layouts, same)
    assert any(a != b and layouts[a] == layouts[b] for a, b in same), layouts
    return built
