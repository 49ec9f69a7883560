"""Lesson 15's instant charts: valid Vega-Lite, every position's guesses and every head's "it"
row sent once, the values those of bert-tiny itself, the view controls labelled sliders."""
import json

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import coref
from tfviz.experiments import mlm
from tfviz.viz.kit import instant as iv
from tfviz.viz import bert as ib
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9  # values travel rounded to DIGITS decimals
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."


@pytest.fixture(scope="module")
def bert():
    return tfviz.load("bert-tiny")


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_guesses_chart_carries_every_position(bert):
    tok = bert.tokenizer
    ids = tok.encode("the <b>cat</b> sat on the mat 🙂")
    drawn = mlm.draw_masks(ids, seed=1, mask_id=tok.mask_id, vocab_size=tok.vocab_size)
    g = mlm.guesses(bert.model, drawn.inputs, drawn.ids, k=5)
    typed, reads = bert.token_strings(drawn.ids), bert.token_strings(drawn.inputs)
    kinds = [mlm.KIND_NAMES[k] for k in drawn.kinds]
    guess_tokens = [bert.token_strings(r) for r in g.ids]
    spec = ib.guesses_chart(reads, typed, kinds, guess_tokens, g.probs, opens_on=drawn.chosen[0])
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    n = len(ids)
    assert n == 23 and params(spec)["pos"]["bind"] == {  # laid out for 24 tokens
        "input": "range", "min": 0, "max": 23, "step": 1, "name": "Position "}
    assert params(spec)["pos"]["value"] == -1  # opens where the draw does, read from the data
    assert spec["datasets"]["strip"][0]["dpos"] == drawn.chosen[0]
    strip = spec["datasets"]["strip"]
    assert [r["reads"] for r in strip] == reads and [r["was"] for r in strip] == typed
    assert [r["kind"] for r in strip] == kinds and set(kinds) <= set(ib.KINDS)
    rows = spec["datasets"]["guesses"]
    assert len(rows) == 5 * n
    for r in rows:
        assert r["tok"] == guess_tokens[r["pos"]][r["rank"]]
        assert abs(r["p"] - g.probs[r["pos"], r["rank"]]) <= TOL
        assert (r["right"] == "the token you typed") == (r["tok"] == typed[r["pos"]])


def test_it_rows_chart_carries_every_layer_and_head(bert):
    rows, tokens, roles = [], [], []
    for text in (TIRED, WIDE):
        trace = bert.trace(text)
        row, (probe, agent, place) = coref.probe_rows(trace)
        rows.append(row)
        tokens.append(trace.tokens)
        roles.append([ib.ROLES[0] if i in probe else ib.ROLES[1] if i in agent else
                      ib.ROLES[2] if i in place else ib.ROLES[3] for i in range(len(trace.tokens))])
    spec = ib.it_rows_chart(rows, tokens, roles, ["tired", "wide"], layer=1, head=2)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    p = params(spec)
    assert (p["layer"]["value"], p["head"]["value"]) == (1, 2)
    assert p["layer"]["bind"]["max"] == 1 and p["head"]["bind"]["max"] == 3
    data = spec["datasets"]["it_rows"]
    for s, text in enumerate((TIRED, WIDE)):
        trace = bert.trace(text)
        probe = coref.coref_spans(trace.tokens)[0][-1]
        for r in (r for r in data if r["s"] == s):
            want = trace["pattern", r["layer"]][r["head"], probe, r["i"]]
            assert abs(r["v"] - want) <= TOL
            assert r["role"] == roles[s][r["i"]]
    assert sum(1 for r in data if r["s"] == 0) == 2 * 4 * len(tokens[0])
    with pytest.raises(ValueError):
        ib.it_rows_chart(rows, tokens[:1], roles, ["tired", "wide"])


def test_guesses_chart_is_length_free(bert):
    """Sentences of 3-16 tokens share one spec, and so do new draws: each carries its own
    strip, the position its draw opens on (its first chosen one) and bert-tiny's top 5 at
    every position, here recomputed with torch's softmax and topk on the model's logits."""
    import torch

    from tests.support.length_free import check_length_free

    tok = bert.tokenizer
    long = bert.encode("The animal did not cross the street because it was too tired, and the "
                       "dog saw the bird on the mat by the door today.")  # 31 tokens

    def build(n):
        ids = long[:n]
        drawn = mlm.draw_masks(ids, seed=n, mask_id=tok.mask_id, vocab_size=tok.vocab_size)
        g = mlm.guesses(bert.model, drawn.inputs, drawn.ids, k=5)
        typed, reads = bert.token_strings(drawn.ids), bert.token_strings(drawn.inputs)
        chart = ib.guesses_chart(reads, typed, [mlm.KIND_NAMES[k] for k in drawn.kinds],
                                 [bert.token_strings(r) for r in g.ids], g.probs,
                                 opens_on=drawn.chosen[0])
        strip, rows = chart["datasets"]["strip"], chart["datasets"]["guesses"]
        assert params(chart)["pos"]["value"] == -1 and strip[0]["dpos"] == drawn.chosen[0]
        assert [r["reads"] for r in strip] == reads and [r["was"] for r in strip] == typed
        with torch.no_grad():
            logits = bert.model(torch.tensor([list(drawn.inputs)]))[0].double()  # (n, vocab)
        top = torch.softmax(logits, dim=-1).topk(5, dim=-1)
        assert len(rows) == 5 * n
        for r in rows:
            assert r["tok"] == bert.token_strings([int(top.indices[r["pos"], r["rank"]])])[0]
            assert abs(r["p"] - float(top.values[r["pos"], r["rank"]])) <= TOL
        return chart, token_labels(typed)

    built = check_length_free(build)
    assert params(built[13])["pos"]["bind"]["max"] == 15  # the layout's; the page fits it to n
    assert params(built[13])["posi"]["expr"] == "pos < 0 ? dpos : min(pos, ntok - 1)"
    linked = ib.guesses_chart(["a"] * 3, ["a"] * 3, ["not chosen"] * 3, [["a"]] * 3,
                              np.ones((3, 1)), pos=2, opens_on=0)
    assert params(linked)["pos"]["value"] == 2  # a shared link's position, kept below the cap
    with pytest.raises(ValueError):
        ib.guesses_chart(["a"] * 3, ["a"] * 3, ["not chosen"] * 3, [["a"]] * 3, np.ones((3, 1)),
                         opens_on=3)


def test_it_rows_chart_is_length_free(bert):
    """Beside the two example sentences, a learner's "it" sentence of 8-16 tokens keeps one
    spec (17-24 another): each panel is as wide as its own sentence, sized for its length's
    cap, and carries the weights from "it" that bert-tiny's attention pattern holds."""
    from tests.support.length_free import check_length_free

    examples = [bert.trace(t) for t in (TIRED, WIDE)]

    def build(n):
        trace = bert.trace("the dog the cat it was" + " very" * (n - 7) + " tired")
        assert len(trace.tokens) == n
        found = coref.probed_sentences({"tired": examples[0], "wide": examples[1], "yours": trace})
        chart = ib.it_rows_chart([f.rows for f in found.values()], [f.tokens for f in found.values()],
                                 [[ib.ROLES[r] for r in f.roles] for f in found.values()],
                                 list(found), layer=1, head=0)
        probe = coref.coref_spans(trace.tokens)[0][-1]
        mine = [r for r in chart["datasets"]["it_rows"] if r["s"] == 2]
        assert len(mine) == 2 * 4 * n
        for r in mine:
            assert abs(r["v"] - trace["pattern", r["layer"]][r["head"], probe, r["i"]]) <= TOL
        return chart, None

    built = check_length_free(build, lengths=(8, 13, 16, 17, 24))
    widths = [panel["width"] for panel in built[13]["vconcat"]]
    assert widths == [{"step": 47}] * 3  # 760 px for 16 tokens; the sentence's own are drawn
