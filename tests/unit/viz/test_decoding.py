"""Lesson 14's instant charts (tfviz.viz.decoding, instant_beam): valid Vega-Lite, the
view controls bound to labelled inputs, and the numbers sent equal the runs they draw (which
tests/unit/decoding/test_reference.py checks against torch)."""
import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis.decoding import beam_tree, lm_head, step_notes
from tfviz.decoding import beam_search_tree, generate, lm_loss_per_token
from tfviz.decoding.generate import step_contexts
from tfviz.viz.kit import instant as iv
from tfviz.viz import decoding as ib
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.style import token_labels
from tests.support.length_free import check_length_free, without_data

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # values travel rounded to DIGITS decimals


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_head_chart_sends_the_top_candidates_of_every_position(gpt):
    tr = gpt.trace("The animal didn't cross the street.")
    r = lm_head(tr, gpt.weights(), gpt.token_strings)
    spec = ib.head_chart(r.top_probs, r.top_logits, r.top_tokens, tr.tokens, pos=3)
    validate_jsonschema(spec, SCHEMA)
    T = len(tr.tokens)
    assert params(spec)["pos"]["value"] == 3  # the layout's range, fitted to T by the view script
    assert params(spec)["pos"]["bind"]["max"] == length_cap(T) - 1
    assert params(spec)["posi"]["expr"] == "pos < 0 ? dpos : min(pos, ntok - 1)"
    unlinked = ib.head_chart(r.top_probs, r.top_logits, r.top_tokens, tr.tokens)
    assert params(unlinked)["pos"]["value"] == -1  # no link: the chart draws the last position
    assert unlinked["datasets"]["head"][0]["dpos"] == T - 1
    assert iv.spec_tokens(spec) == token_labels(tr.tokens)
    rows = spec["datasets"]["head"]
    assert len(rows) == T * 10
    p = torch.softmax(torch.from_numpy(tr.logits).double(), -1).numpy()  # (T, V)
    for row in rows:
        pos, rank = row["pos"], row["rank"]
        token = int(r.top_ids[pos, rank])
        assert row["tok"] == gpt.token_strings([token])[0]
        assert abs(row["p"] - p[pos, token]) <= TOL and abs(row["logit"] - tr.logits[pos, token]) <= TOL
    assert all(a["p"] >= b["p"] for a, b in zip(rows, rows[1:]) if a["pos"] == b["pos"])


SETTINGS = [dict(strategy="greedy"), dict(strategy="sample", temperature=1.8, seed=4),
            dict(strategy="sample", top_k=3, seed=1), dict(strategy="sample", top_p=0.6, seed=2),
            dict(strategy="sample", temperature=0.7, top_k=8, top_p=0.9, seed=5)]


@pytest.mark.parametrize("settings", SETTINGS)
def test_steps_chart_marks_the_filters_at_every_step(gpt, settings):
    g = generate(gpt, "the dog", max_new_tokens=8, **settings)
    filters = {k: settings.get(k) for k in ("temperature", "top_k", "top_p")}
    filters["temperature"] = filters["temperature"] or 1.0
    notes = step_notes(g.steps, step_contexts(gpt, g), strategy=settings["strategy"], vocab=600,
                       **filters)
    nucleus, warm = filters["top_p"] is not None, filters["temperature"] != 1
    spec = ib.steps_chart(g.steps, notes, step=2, nucleus=nucleus, warm=warm)
    validate_jsonschema(spec, SCHEMA)
    T = len(g.steps)
    assert params(spec)["step"]["value"] == 2 and params(spec)["step"]["bind"]["max"] == length_cap(T)
    rows = spec["datasets"]["cands"]
    packed = rows[0]["s_cands"]  # each step's candidate labels, as the expression stepcands splits them
    assert [step.split(iv.SEPARATOR) for step in packed.split(ib.STEP_SEPARATOR)] == [
        list(s.tokens) for s in g.steps]
    assert iv.spec_tokens(spec) == [s.tokens[s.candidates.index(s.chosen)] for s in g.steps]
    for t, s in enumerate(g.steps, start=1):
        mine = [r for r in rows if r["step"] == t]
        assert [r["tok"] for r in mine] == list(s.tokens)
        assert [r["status"] for r in mine].count("chosen") == 1
        assert mine[s.candidates.index(s.chosen)]["status"] == "chosen"
        for r, after, before, k, p in zip(mine, s.probs, s.before, s.in_top_k, s.in_top_p):
            assert abs(r["after"] - after) <= TOL and abs(r["before"] - before) <= TOL
            if r["status"] == "kept":
                assert after > 0
            elif r["status"] != "chosen":
                assert after == 0 and r["status"] == ("cut by top-k" if not k else "cut by top-p")
                assert abs(r["bar"] - before) <= TOL  # a cut token's bar: what it had
            assert r["nucleus"] == (nucleus and k and p)
        lines = [r["text"] for r in spec["datasets"]["notes"] if r["step"] == t]
        assert " ".join(lines).replace("  ", " ").startswith(notes[t - 1][0][:60])
    if settings["strategy"] == "greedy":
        assert all(r["status"] in ("chosen", "kept") for r in rows)
        assert all(s.chosen == s.candidates[0] for s in g.steps)
    layers = spec["vconcat"][1]["layer"]
    assert any(layer["mark"].get("shape") == "diamond" for layer in layers) == warm


def test_loss_chart_sends_every_pair(gpt):
    r = lm_loss_per_token(gpt, "the cat rested near the lake.")
    spec = ib.loss_chart(r.input_tokens, r.target_tokens, r.losses, r.probs)
    validate_jsonschema(spec, SCHEMA)
    rows = spec["datasets"]["loss"]
    assert [row["pair"] for row in rows] == [f"{i} {a} → {b}" for i, (a, b) in
                                             enumerate(zip(r.input_tokens, r.target_tokens))]
    np.testing.assert_allclose([row["loss"] for row in rows], r.losses, atol=TOL)
    assert rows[0]["mean"] == round(r.mean, 4) and rows[0]["mean_text"] == f"mean {r.mean:.3f}"
    assert abs(r.mean - np.mean([-np.log(p) for p in r.probs])) < 1e-6  # float32 logits
    assert spec["layer"][1]["data"] == {"name": "loss"}  # the rule reads the mean of the data


@pytest.mark.parametrize("prompt, width", [("once upon a time", 3), ("the dog jumped", 2)])
def test_beam_tree_chart_draws_each_node_once(gpt, prompt, width):
    search = beam_search_tree(gpt, prompt, width, 6)
    greedy = generate(gpt, prompt, max_new_tokens=6)
    tree = beam_tree(search, gpt.token_strings, greedy.new_ids, prompt_label="…" + prompt[-8:])
    spec = ib.beam_tree_chart(tree, scored_note="note")
    validate_jsonschema(spec, SCHEMA)
    rows = spec["datasets"]["nodes"]
    assert len(rows) == len(tree.nodes) and spec["title"]["subtitle"] == "note"
    assert ib.beam_tree_chart(tree, scored_note=("a", "b"))["title"]["subtitle"] == ["a", "b"]
    for row, n in zip(rows, tree.nodes):
        assert (row["step"], row["slot"], row["from_slot"]) == (n.step, n.slot, n.parent_slot)
        assert abs(row["sum"] - n.total) <= TOL and row["greedy"] == n.greedy
        assert row["status"] == ("best beam" if n.best else "kept" if n.kept else "pruned")
    assert spec["height"] == ib.ROW * tree.rows


def test_the_head_chart_is_length_free(gpt):
    """Texts of 3-16 tokens share one spec (a new sentence swaps the data), longer ones
    another; each carries its own positions' candidates, checked against torch's softmax."""

    def build(n):
        tr = gpt.trace("abcdefghijklmnopqrstuvwxyz"[:n])
        r = lm_head(tr, gpt.weights(), gpt.token_strings)
        chart = ib.head_chart(r.top_probs, r.top_logits, r.top_tokens, tr.tokens)
        p = torch.softmax(torch.from_numpy(tr.logits).double(), -1).numpy()
        rows = chart["datasets"]["head"]
        assert len(rows) == len(tr.tokens) * 10
        for row in rows:
            token = int(r.top_ids[row["pos"], row["rank"]])
            assert abs(row["p"] - p[row["pos"], token]) <= TOL
        labels = token_labels(tr.tokens)
        return chart, labels, length_cap(len(labels))

    check_length_free(build)


def test_the_steps_chart_is_length_free(gpt):
    """Generations of up to 16 steps share one spec, 17-24 another; each carries its own
    steps' candidates and the tokens taken."""
    settings = dict(strategy="sample", temperature=0.8, top_k=6, seed=3)

    def build(n):
        g = generate(gpt, "the dog", max_new_tokens=n, **settings)
        notes = step_notes(g.steps, step_contexts(gpt, g), strategy="sample", vocab=600,
                           temperature=0.8, top_k=6, top_p=None)
        chart = ib.steps_chart(g.steps, notes, step=2, warm=True)
        rows = chart["datasets"]["cands"]
        for t, s in enumerate(g.steps, start=1):
            mine = [r for r in rows if r["step"] == t]
            np.testing.assert_allclose([r["before"] for r in mine], s.before, atol=TOL)
        taken = [s.tokens[s.candidates.index(s.chosen)] for s in g.steps]
        assert gpt.token_strings(g.new_ids) == [str(t) for t in taken]
        return chart, taken, length_cap(len(g.steps))

    built = check_length_free(build)
    assert len({len(iv.spec_tokens(c)) for c in built.values()}) > 2  # answers of several lengths


def test_the_loss_chart_holds_nothing_of_the_sentence(gpt):
    """Sentences of any length share the loss chart's spec: the bars' rows and the mean
    ride in the data."""
    specs = []
    for text in ("the cat.", "the cat rested near the lake.",
                 "once upon a time the small dog ran to the big house near the river."):
        r = lm_loss_per_token(gpt, text)
        specs.append(without_data(ib.loss_chart(r.input_tokens, r.target_tokens, r.losses, r.probs)))
    assert specs[0] == specs[1] == specs[2]
