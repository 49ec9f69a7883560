"""One layer of an instant chart, for a model too deep to send every layer at once.

An instant chart carries every layer, head and token so that the browser switches between
them without asking the server (``tfviz.viz.kit.instant``). For our 3-layer models that is a few
hundred kB; for GPT-2 small (12 layers x 12 heads, 64 tokens, d = 768) lesson 5's and lesson 9's
charts come to tens of megabytes (bench/bench_payload.py). ``one_layer`` keeps one layer of such a chart: its datasets'
rows of that layer only, and its ``layer`` parameter as a constant, so the chart's own
expressions and titles still read the right layer number while the page's layer picker (a
server-side widget) chooses which. Heads and tokens still switch in the browser.

>>> chart = {"params": [{"name": "layer", "value": 0, "bind": {"input": "range"}}],
...          "datasets": {"maps": [{"layer": 0, "tokens": "a\\x1fb"}, {"layer": 1}, {"layer": 1}]}}
>>> one_layer(chart, 1)["datasets"]["maps"], one_layer(chart, 1)["params"]
([{'layer': 1, 'tokens': 'a\\x1fb'}, {'layer': 1}], [{'name': 'layer', 'value': 1}])

Cheaper still, a page may build the chart from that one layer's numbers alone (its analysis
asked for ``layers=(k,)``), so nothing is computed for the other eleven; ``as_layer`` then
numbers the chart's rows, all of "layer 0", as layer k:

>>> one = {"params": [{"name": "layer", "value": 0, "bind": {"input": "range"}}],
...        "datasets": {"maps": [{"layer": 0, "tokens": "a\\x1fb"}, {"layer": 0}]}}
>>> as_layer(one, 7)["datasets"]["maps"], as_layer(one, 7)["params"]
([{'layer': 7, 'tokens': 'a\\x1fb'}, {'layer': 7}], [{'name': 'layer', 'value': 7}])
"""
from __future__ import annotations

from tfviz.viz.kit.instant_length import SENTENCE_PREFIX

# What chart(..., tokens=...) puts in the first row of a dataset only (and its sentence values,
# SENTENCE_PREFIX): kept with the new first row.
FIRST_ROW_KEYS = ("tokens", "dq")


def _rows_of(rows: list, layer: int) -> list:
    if not rows or not isinstance(rows[0], dict) or not any("layer" in r for r in rows):
        return rows
    kept = [r for r in rows if r.get("layer", layer) == layer]
    carried = {k: v for k, v in rows[0].items() if k in FIRST_ROW_KEYS or k.startswith(SENTENCE_PREFIX)}
    if kept and carried:
        kept[0] = {**kept[0], **carried}
    return kept


def one_layer(chart: dict, layer: int) -> dict:
    """A copy of the instant chart ``chart`` carrying layer ``layer`` only (module docstring);
    ``chart`` itself is not changed."""
    out = dict(chart)
    out["datasets"] = {name: _rows_of(rows, layer) for name, rows in chart.get("datasets", {}).items()}
    out["params"] = [{"name": "layer", "value": int(layer)} if p.get("name") == "layer" else p
                     for p in chart.get("params", [])]
    return out


def as_layer(chart: dict, layer: int) -> dict:
    """A copy of ``chart``, built from one layer's numbers only (its rows all say layer 0),
    with those rows and its ``layer`` parameter saying ``layer`` (module docstring)."""
    out = dict(chart)
    out["datasets"] = {name: ([{**r, "layer": int(layer)} if isinstance(r, dict) and "layer" in r
                                else r for r in rows] if isinstance(rows, list) else rows)
                       for name, rows in chart.get("datasets", {}).items()}
    out["params"] = [{"name": "layer", "value": int(layer)} if p.get("name") == "layer" else p
                     for p in chart.get("params", [])]
    return out
