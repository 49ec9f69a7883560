"""Instant charts (issue #15): valid Vega-Lite, the trace's own numbers, and view parameters.

What the browser draws from these specs is checked in tests/browser/test_instant_views.py
(every mark's ARIA label against the trace); here the specs themselves: they validate against
the Vega-Lite schema that altair ships, the packed data decodes to the trace's values, and
the view parameters are bound to labelled inputs with the right ranges.
"""
import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

from tfviz.analysis import heads as hd
from tfviz.bundle import Bundle
from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz.kit import instant as iv
from tfviz.viz import heads as ia
from tfviz.viz.kit.instant_length import length_cap
from tfviz.viz.kit.style import token_labels

SCHEMA = load_schema()


@pytest.fixture(scope="module")
def gpt():
    """A fresh gpt-tiny on the characters of "the cat sat" (no trained assets needed)."""
    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    return b, b.trace("the cat sat")


def decode(packed: str) -> np.ndarray:
    """What ``unpack`` does in the browser: split, empty -> masked (nan), numbers."""
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_packing_round_trips_to_four_decimals():
    values = np.array([[0.123456, -2.0, float("-inf")], [1e-7, 0.5, 1 / 3]])
    back = decode(iv.packed(values))
    assert np.isnan(back[2])  # masked stays masked
    finite = np.isfinite(values.ravel())
    assert np.allclose(back[finite], values.ravel()[finite], atol=0.5 * 10 ** -iv.DIGITS + 1e-12)
    assert iv.stack_rows(values[None], "layer") == [{"layer": 0, "v": iv.packed(values)}]


def test_sliders_and_choices_bind_labelled_inputs():
    s = iv.slider("layer", 2, "Layer", value=7)  # out of range: clamped, never an empty chart
    assert s["value"] == 2 and s["bind"] == {"input": "range", "min": 0, "max": 2, "step": 1, "name": "Layer "}
    c = iv.choice("query", [1, 2, 3], ["1 a", "2 b", "3 c"], "Token", value=9)
    assert c["value"] == 1 and c["bind"]["input"] == "select" and c["bind"]["labels"] == ["1 a", "2 b", "3 c"]
    assert iv.choice("query", [1, 2, 3], ["a", "b", "c"], "Token", value=3)["value"] == 3


def test_attention_maps_spec_is_valid_and_carries_every_layer_and_head(gpt):
    b, trace = gpt
    cfg = b.config
    patterns = np.stack([trace["pattern", layer] for layer in range(cfg.n_layers)])
    names = [[s.label for s in hd.head_stats(p)] for p in patterns]
    spec = ia.attention_maps(patterns, trace.tokens, names=names, layer=1, head=3)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)  # plain JSON, nothing numpy left
    p = params(spec)
    assert p["layer"]["value"] == 1 and p["layer"]["bind"]["max"] == cfg.n_layers - 1
    assert p["head"]["value"] == 3 and p["head"]["bind"]["max"] == cfg.n_heads - 1
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)
    # the role labels follow the sentence: they ride in the data, layer after layer
    assert spec["datasets"]["maps"][0]["s_names"].split(iv.SEPARATOR) == [x for r in names for x in r]
    assert p["names"]["expr"] == "length(data('maps')) ? data('maps')[0].s_names : ''"
    rows = spec["datasets"]["maps"]
    assert [(r["layer"], r["head"]) for r in rows] == [
        (lyr, h) for lyr in range(cfg.n_layers) for h in range(cfg.n_heads)]
    n = len(trace.tokens)
    for r in rows:
        got = decode(r["v"]).reshape(n, n)
        want = patterns[r["layer"], r["head"]]
        assert np.allclose(got, want, atol=0.5 * 10 ** -iv.DIGITS + 1e-9), (r["layer"], r["head"])
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"  # marks carry ARIA labels


def test_head_shares_match_each_heads_block_of_W_O(gpt):
    b, trace = gpt
    w = b.weights()
    lengths, gap = hd.share_lengths(trace, w)
    cfg = b.config
    n = len(trace.tokens)
    assert lengths.shape == (cfg.n_layers, n, cfg.n_heads)
    for layer in range(cfg.n_layers):  # independent: torch, one head's z through its rows of W^O
        z = torch.tensor(trace["z", layer], dtype=torch.float64)  # (n, h, d_head)
        W_O = torch.tensor(w["W_O"][layer], dtype=torch.float64)  # (h, d_head, d)
        for h in range(cfg.n_heads):
            want = torch.linalg.vector_norm(z[:, h] @ W_O[h], dim=-1).numpy()
            assert np.allclose(lengths[layer, :, h], want, rtol=1e-9, atol=1e-12)
    # the shares add up to the model's float32 output: float32 rounding, not zero
    assert gap < 1e-4
    spec = ia.head_shares(lengths, trace.tokens, layer=2, head=1, query=n - 1)
    validate_jsonschema(spec, SCHEMA)
    rows = spec["datasets"]["shares"]
    assert len(rows) == cfg.n_layers * n * cfg.n_heads
    for r in rows[::7]:
        assert r["v"] == pytest.approx(lengths[r["layer"], r["q"], r["head"]], abs=1e-4)
    p = params(spec)
    assert p["query"]["bind"]["max"] == length_cap(n) - 1 and p["query"]["value"] == n - 1
    assert iv.spec_tokens(spec) == token_labels(trace.tokens)


def test_a_new_sentence_of_the_same_length_changes_only_the_data(gpt):
    """Streamlit swaps a chart's data when its spec is unchanged and redraws it from scratch
    otherwise (1-2 s for lesson 5's five charts): so the words travel in the data."""
    b, _ = gpt
    one, two = b.trace("the cat sat"), b.trace("a dog ran!!")
    assert len(one.tokens) == len(two.tokens)

    def shares(trace):
        lengths = np.random.default_rng(0).random((b.config.n_layers, len(trace.tokens),
                                                   b.config.n_heads))
        return ia.head_shares(lengths, trace.tokens, layer=1, query=2)

    a, c = shares(one), shares(two)
    assert {k: v for k, v in a.items() if k != "datasets"} == \
        {k: v for k, v in c.items() if k != "datasets"}
    assert iv.spec_tokens(a) == token_labels(one.tokens) != iv.spec_tokens(c) == token_labels(two.tokens)
    params = json.dumps(a["params"], ensure_ascii=False)
    assert not any(label in params for label in token_labels(one.tokens))  # only in the data


def test_token_labels_survive_separators_and_the_arrow_trip():
    """A label holding the separator stays one label (the separator becomes a space), and the
    column that only the first row has travels as Arrow, with the same values as Streamlit's
    own (pandas) conversion gives."""
    import pyarrow as pa
    from streamlit.dataframe_util import convert_anything_to_arrow_bytes

    from tfviz.ui.drawing import arrow_bytes

    tokens = ["a\x1fb", "<b>", "مرحبا", "👩‍💻", ""]
    chart = ia.head_shares(np.ones((1, len(tokens), 2)), tokens)
    assert iv.spec_tokens(chart) == [label.replace("\x1f", " ") for label in token_labels(tokens)]
    rows = chart["datasets"]["shares"]
    ours = pa.ipc.open_stream(arrow_bytes(rows)).read_all().to_pydict()
    theirs = pa.ipc.open_stream(convert_anything_to_arrow_bytes(rows)).read_all().to_pydict()
    assert ours == {k: v for k, v in theirs.items() if not k.startswith("__")}
    assert ours["tokens"][0].split("\x1f") == iv.spec_tokens(chart)
    assert set(ours["tokens"][1:]) == {None} and ours["v"] == [r["v"] for r in rows]


def test_a_column_pyarrow_cannot_type_goes_streamlits_own_way():
    """Numbers mixed with text in one column: pyarrow alone refuses, Streamlit's pandas route
    makes it text; the chart still gets its data."""
    import pyarrow as pa

    from tfviz.ui.drawing import arrow_bytes

    table = pa.ipc.open_stream(arrow_bytes([{"a": 1, "b": 0.5}, {"a": "x", "b": None}])).read_all()
    assert table.column("a").to_pylist() == ["1", "x"] and table.column("b").to_pylist()[0] == 0.5


def test_multihead_charts_are_length_free(gpt):
    """Lesson 7's maps and head shares (and lesson 18's maps) hold nothing of the sentence's
    length: 3-16 tokens share one spec, so a new sentence swaps data; each carries its own
    sentence's weights, shares and role labels, and the shares open on its default query."""
    from tests.support.length_free import check_length_free

    b, _ = gpt
    w = b.weights()

    def maps(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        patterns = np.stack([trace["pattern", layer] for layer in range(b.config.n_layers)])
        names = [[s.label for s in hd.head_stats(p)] for p in patterns]
        chart = ia.attention_maps(patterns, trace.tokens, names=names, layer=1, head=3)
        assert chart["datasets"]["maps"][0]["s_names"].split(iv.SEPARATOR) == [x for r in names for x in r]
        for r in chart["datasets"]["maps"]:
            if "v" in r:  # cells up to 24 tokens (a picture past them, as before)
                assert np.allclose(decode(r["v"]).reshape(n, n), patterns[r["layer"], r["head"]],
                                   atol=0.5 * 10 ** -iv.DIGITS + 1e-9)
        return chart, token_labels(trace.tokens)

    def shares(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])
        lengths, _ = hd.share_lengths(trace, w)
        chart = ia.head_shares(lengths, trace.tokens, layer=1, head=2, default_query=n // 2)
        rows = chart["datasets"]["shares"]
        assert rows[0]["dq"] == n // 2 and params(chart)["query"]["value"] == -1
        assert all(r["v"] == pytest.approx(lengths[r["layer"], r["q"], r["head"]], abs=1e-4) for r in rows)
        return chart, token_labels(trace.tokens)

    check_length_free(maps)
    built = check_length_free(shares)
    assert params(built[13])["qi"]["expr"] == "query < 0 ? dq : min(query, ntok - 1)"


def test_a_chart_cut_to_one_layer_keeps_its_sentence_values(gpt):
    """A deep model's page sends one layer (instant_layer.one_layer): the role labels that
    ride in the first row (spec(sentence=...)) come along with the token labels."""
    from tfviz.viz.kit.instant_layer import one_layer

    b, trace = gpt
    patterns = np.stack([trace["pattern", layer] for layer in range(b.config.n_layers)])
    names = [[f"role {lyr}.{h}" for h in range(b.config.n_heads)] for lyr in range(b.config.n_layers)]
    cut = one_layer(ia.attention_maps(patterns, trace.tokens, names=names), 2)
    first = cut["datasets"]["maps"][0]
    assert first["layer"] == 2 and first["s_names"].split(iv.SEPARATOR) == [x for r in names for x in r]
    assert first["tokens"].split(iv.SEPARATOR) == token_labels(trace.tokens)
