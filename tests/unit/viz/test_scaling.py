"""Lesson 6's instant chart (issue #15): both runs' maps and row entropies for every layer and
head, checked against the trace and torch's own entropy."""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.analysis import scaling as sc
from tfviz.bundle import Bundle
from tfviz.config import RunOptions, preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz.kit import instant_pictures as ipic
from tfviz.viz import scaling as isc
from tfviz.viz.scaling import WITH, WITHOUT
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9


@pytest.fixture(scope="module")
def runs():
    """A fresh gpt-tiny's patterns for "the cat sat", scale on and off: (layers, heads, n, n)."""
    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    traces = [b.trace("the cat sat", options=RunOptions(scale=s)) for s in (True, False)]
    return traces[0].tokens, [np.stack([t["pattern", lyr] for lyr in range(3)]) for t in traces]


def torch_bits(p: np.ndarray) -> np.ndarray:
    """Row entropy in bits, by torch's entr (independent of tfviz.analysis.scaling.entropy)."""
    t = torch.tensor(p, dtype=torch.float64)
    return (torch.special.entr(t).sum(-1) / np.log(2)).numpy()


def test_entropy_by_head_matches_torch(runs):
    _, (on, off) = runs
    table = sc.entropy_by_head(on, off)
    # the same float32 weights, entropies in float64 on both sides
    want_on, want_off = torch_bits(on).mean(-1), torch_bits(off).mean(-1)  # (layers, heads)
    assert table["layer"] == [lyr for lyr in range(3) for _ in range(4)]
    assert table["head"] == list(range(4)) * 3
    np.testing.assert_allclose(table["with ÷√d_k"], want_on.ravel(), atol=1e-9)
    np.testing.assert_allclose(table["without ÷√d_k"], want_off.ravel(), atol=1e-9)
    np.testing.assert_allclose(table["change"], (want_off - want_on).ravel(), atol=1e-9)


def test_scale_on_off_carries_both_runs_and_their_entropies(runs):
    tokens, (on, off) = runs
    ent_on, ent_off = sc.row_entropy(on), sc.row_entropy(off)
    spec = isc.scale_on_off(on, off, ent_on, ent_off, tokens, layer=2, head=1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec, allow_nan=False)
    n = len(tokens)
    for name, want in (("on", on), ("off", off)):
        rows = spec["datasets"][name]
        assert [(r["layer"], r["head"]) for r in rows] == list(np.ndindex(3, 4))
        for r in rows:
            got = np.array([float(x) for x in r["v"].split(",")]).reshape(n, n)
            assert np.allclose(got, want[r["layer"], r["head"]], atol=TOL)
    rows = spec["datasets"]["entropy"]
    assert len(rows) == 2 * 3 * 4 * n
    torch_on, torch_off = torch_bits(on), torch_bits(off)
    for r in rows:
        want = (torch_on if r["scores"] == WITH else torch_off)[r["layer"], r["head"], r["q"]]
        assert r["v"] == pytest.approx(want, abs=TOL)
    assert {r["scores"] for r in rows} == {WITH, WITHOUT}
    p = {x["name"]: x for x in spec["params"]}
    assert (p["layer"]["value"], p["head"]["value"]) == (2, 1)
    assert p["layer"]["bind"]["max"] == 2 and p["head"]["bind"]["max"] == 3
    assert iv.spec_tokens(spec) == token_labels(tokens)
    # the title's means ride in the data, packed: (layers, heads, [with, without])
    assert p["means"]["expr"] == "length(data('on')) ? data('on')[0].s_means : ''"
    means = np.array([float(x) for x in spec["datasets"]["on"][0]["s_means"].split(",")])
    means = means.reshape(3, 4, 2)
    np.testing.assert_allclose(means[..., 0], torch_on.mean(-1), atol=TOL)  # packed: DIGITS
    np.testing.assert_allclose(means[..., 1], torch_off.mean(-1), atol=TOL)
    title = spec["vconcat"][1]["title"]["text"]["expr"]
    assert "split(means, ',')[2 * (layer * 4 + head) + 0]" in title
    assert "split(means, ',')[2 * (layer * 4 + head) + 1]" in title


def test_scale_on_off_refuses_runs_of_different_shapes(runs):
    tokens, (on, off) = runs
    with pytest.raises(ValueError):
        isc.scale_on_off(on, off[:2], sc.row_entropy(on), sc.row_entropy(off), tokens)


def test_a_long_texts_maps_are_pictures():
    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    tokens = b.trace("a long sentence of thirty tokens").tokens
    on, off = (np.stack([b.trace("a long sentence of thirty tokens", options=RunOptions(scale=s))
                         ["pattern", lyr] for lyr in range(3)]) for s in (True, False))
    spec = isc.scale_on_off(on, off, sc.row_entropy(on), sc.row_entropy(off), tokens)
    validate_jsonschema(spec, SCHEMA)
    assert [r["img"] for r in spec["datasets"]["off"]] == [ipic.picture(off[i]) for i in np.ndindex(3, 4)]
    assert len(spec["datasets"]["entropy"]) == 2 * 3 * 4 * len(tokens)  # still every row's value


def test_scale_on_off_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data); each carries its
    own two runs' maps and entropies, and the entropy axis runs to log2 of the sentence's
    length in the browser."""
    from tests.support.length_free import check_length_free

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)

    def build(n):
        text = "abcdefghijklmnopqrstuvwxyz"[:n]
        on, off = (b.trace(text, options=RunOptions(scale=s)) for s in (True, False))
        maps = [np.stack([t["pattern", lyr] for lyr in range(3)]) for t in (on, off)]
        ent = [sc.row_entropy(m) for m in maps]
        chart = isc.scale_on_off(*maps, *ent, on.tokens, layer=2, head=1)
        got = {(r["scores"], r["layer"], r["head"], r["q"]): r["v"] for r in chart["datasets"]["entropy"]}
        for name, p in ((WITH, maps[0]), (WITHOUT, maps[1])):
            bits = torch_bits(p)
            assert all(abs(got[(name, *i)] - bits[i]) <= TOL + 1e-6 for i in np.ndindex(*bits.shape))
        rows = chart["datasets"]["on"]
        assert all(np.allclose([float(x) for x in r["v"].split(",")], maps[0][r["layer"], r["head"]].ravel(),
                               atol=TOL) for r in rows)
        return chart, token_labels(on.tokens)

    built = check_length_free(build)
    y = built[13]["vconcat"][1]["encoding"]["y"]["scale"]["domain"]
    assert y == {"expr": "[0, max(log(max(ntok, 2)) / LN2, 1)]"}


def test_a_granites_scale_is_named_as_it_is(runs):
    """A GraniteMoe multiplies its scores by its attention_multiplier: the legends and the
    table name that ("× 0.125"), not ÷√d_k."""
    tokens, (on, off) = runs
    spec = isc.scale_on_off(on, off, sc.row_entropy(on), sc.row_entropy(off), tokens, scale="× 0.125")
    assert {r["scores"] for r in spec["datasets"]["entropy"]} == {"with × 0.125", "without × 0.125"}
    assert "÷√d_k" not in json.dumps(spec, ensure_ascii=False)
    assert list(sc.entropy_by_head(on, off, scale="× 0.125"))[2:4] == ["with × 0.125", "without × 0.125"]
